#!/usr/bin/python3
"""Generates the .pt2 fixtures in this directory (run once; tests do not need Python).

    /usr/bin/python3 tests/golden/pt2/generate_fixtures.py   # Debian python3-torch 1.13

No torch with torch.export was available when these were made, so the archives
are assembled from real PyTorch components plus JSON written by hand:

  * weight pickles are real `torch.save` output (torch 1.13; the pickle format
    of state dicts, Parameters, shared storages and wrapper tensor subclasses
    is the same in torch 2.x, pickle protocol 2);
  * PT2 containers (2.8 / >= 2.9 layouts) are written by the real
    PyTorchStreamWriter (`torch._C.PyTorchFileWriter` with set_min_version(6),
    as PT2ArchiveWriter does): stored records, ZIP64, data descriptors,
    64-byte aligned payloads. torch 1.13's writer does not add `byteorder`
    and `.data/serialization_id` itself, so they are written as records;
  * legacy (<= 2.7) containers are written with Python's zipfile, as
    torch.export.save did;
  * the ExportedProgram JSON follows torch/_export/serde/serialize.py
    (_dataclass_to_dict + json.dumps): all fields, Optional fields with a None
    default dropped when None, single-key unions, integer enums, sympy srepr
    sizes with hints; schema minor per torch version (2.6: 8.2 without
    NamedArgument.kind, 2.7: 8.7, 2.8: 8.8, 2.9: 8.14, 2.10: 8.15).

The torchao tensor subclass is emulated (torchao is not installed): a wrapper
subclass named `torchao.quantization.IntxUnpackedToInt8Tensor` with the same
attributes as pytorch/ao's, pickled by torch's own Tensor.__reduce_ex__
(_rebuild_from_type_v2 + _rebuild_wrapper_subclass + attribute dict).
"""
import io
import json
import os
import sys
import types
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------
# ExportedProgram JSON
# ---------------------------------------------------------------------------

FLOAT, LONG, CHAR = 7, 5, 2
S0 = "Symbol('s0', integer=True, positive=True)"
S0_HINT = 5


def symint(v):
    if isinstance(v, int):
        return {"as_int": v}
    expr, hint = v
    return {"as_expr": {"expr_str": expr, "hint": {"as_int": hint}}}


def contiguous(sizes):
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc = mul(acc, s)
    return list(reversed(strides))


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int):
        a, b = b, a
    if isinstance(b, int):
        if b == 1:
            return a
        return (f"Mul(Integer({b}), {a[0]})", a[1] * b)
    raise ValueError("symbolic product")


def meta(dtype, sizes, strides=None, offset=0, requires_grad=False):
    return {
        "dtype": dtype,
        "sizes": [symint(s) for s in sizes],
        "requires_grad": requires_grad,
        "device": {"type": "cpu"},
        "strides": [symint(s) for s in (strides or contiguous(sizes))],
        "storage_offset": symint(offset),
        "layout": 7,
    }


def tensor(name):
    return {"as_tensor": {"name": name}}


def named(name, arg, kind):
    d = {"name": name, "arg": arg}
    if kind is not None:
        d["kind"] = kind
    return d


MODULE = "__main__.TinyNet"


def stack(*mods):
    entries = [f"L__self__,,{MODULE}"]
    for path, cls in mods:
        entries.append(f"L__self___{path.replace('.', '_')},{path},{cls}")
    return ";".join(entries)


def node(target, inputs, outputs, metadata):
    return {"target": target, "inputs": inputs, "outputs": outputs, "metadata": metadata}


def tinynet_program(minor, torch_version, with_kind, real_offsets, extra_fields):
    """The exported TinyNet (see tinynet_state) as an ExportedProgram dict."""
    P, K = (1, 2) if with_kind else (None, None)
    seq = ("sym_size_int", 0)
    s0 = (S0, S0_HINT)
    x3 = [1, s0, 4]
    tv = {
        "p_emb_weight": meta(FLOAT, [8, 4], requires_grad=True),
        "p_proj_weight": meta(FLOAT, [4, 4], strides=[1, 4], requires_grad=True),
        "p_fc_weight": meta(FLOAT, [8, 4], requires_grad=True),
        "p_fc_bias": meta(FLOAT, [8], requires_grad=True),
        "b_scale": meta(FLOAT, [4]),
        "b_table": meta(FLOAT, [3, 4]),
        "b_row": meta(FLOAT, [4], offset=4 if real_offsets else 0),
        "b_cache": meta(FLOAT, [2, 4]),
        "c_lifted_tensor_0": meta(FLOAT, [4]),
        "tokens": meta(LONG, [1, s0]),
        "embedding": meta(FLOAT, x3),
        "mul": meta(FLOAT, x3),
        "add": meta(FLOAT, x3),
        "add_1": meta(FLOAT, x3),
        "linear": meta(FLOAT, x3),
        "scale_shift": meta(FLOAT, x3),
        "linear_1": meta(FLOAT, [1, s0, 8]),
        "add_2": meta(FLOAT, [2, 4]),
    }
    trace = lambda line: f'  File "/work/tinynet.py", line {line}, in forward\n    {LINES[line]}\n'
    nodes = [
        node("torch.ops.aten.sym_size.int",
             [named("self", tensor("tokens"), P), named("dim", {"as_int": 1}, P)],
             [{"as_sym_int": {"as_name": "sym_size_int"}}],
             {"stack_trace": trace(30)}),
        node("torch.ops.aten.embedding.default",
             [named("weight", tensor("p_emb_weight"), P), named("indices", tensor("tokens"), P)],
             [tensor("embedding")],
             {"stack_trace": trace(31), "nn_module_stack": stack(("emb", "torch.nn.modules.sparse.Embedding")),
              "source_fn_stack": "l__self___emb,torch.nn.modules.sparse.Embedding",
              "torch_fn": "embedding_1;function.embedding"}),
        node("torch.ops.aten.mul.Tensor",
             [named("self", tensor("embedding"), P), named("other", tensor("b_scale"), P)],
             [tensor("mul")], {"stack_trace": trace(32), "nn_module_stack": stack()}),
        node("torch.ops.aten.add.Tensor",
             [named("self", tensor("mul"), P), named("other", tensor("b_row"), P)],
             [tensor("add")], {"stack_trace": trace(33), "nn_module_stack": stack()}),
        node("torch.ops.aten.add.Tensor",
             [named("self", tensor("add"), P), named("other", tensor("c_lifted_tensor_0"), P),
              named("alpha", {"as_int": 2}, K)],
             [tensor("add_1")], {"stack_trace": trace(34), "nn_module_stack": stack()}),
        node("torch.ops.aten.linear.default",
             [named("input", tensor("add_1"), P), named("weight", tensor("p_proj_weight"), P)],
             [tensor("linear")],
             {"stack_trace": trace(35), "nn_module_stack": stack(("proj", "torch.nn.modules.linear.Linear")),
              "source_fn_stack": "l__self___proj,torch.nn.modules.linear.Linear",
              "torch_fn": "linear_1;builtin_function_or_method.linear"}),
        # A custom op graft does not know: kept opaque, names preserved.
        node("torch.ops.mylib.scale_shift.default",
             [named("x", tensor("linear"), P), named("factor", {"as_float": 2.0}, P)],
             [tensor("scale_shift")], {"stack_trace": trace(36), "nn_module_stack": stack()}),
        node("torch.ops.aten.linear.default",
             [named("input", tensor("scale_shift"), P), named("weight", tensor("p_fc_weight"), P),
              named("bias", tensor("p_fc_bias"), P)],
             [tensor("linear_1")],
             {"stack_trace": trace(37), "nn_module_stack": stack(("fc", "torch.nn.modules.linear.Linear")),
              "source_fn_stack": "l__self___fc,torch.nn.modules.linear.Linear",
              "torch_fn": "linear_2;builtin_function_or_method.linear"}),
        node("_operator.mul",
             [named("a", {"as_sym_int": {"as_name": "sym_size_int"}}, P),
              named("b", {"as_int": 2}, P)],
             [{"as_sym_int": {"as_name": "mul_1"}}], {"stack_trace": trace(38)}),
        node("_operator.ge",
             [named("a", {"as_sym_int": {"as_name": "mul_1"}}, P), named("b", {"as_int": 4}, P)],
             [{"as_sym_bool": {"as_name": "ge"}}], {"stack_trace": trace(38)}),
        node("torch.ops.aten._assert_scalar.default",
             [named("self", {"as_sym_bool": {"as_name": "ge"}}, P),
              named("assert_msg", {"as_string": "Runtime assertion failed for expression 2*s0 >= 4 on node 'ge'"}, P)],
             [], {"stack_trace": trace(38)}),
        node("torch.ops.aten.add.Tensor",
             [named("self", tensor("b_cache"), P), named("other", {"as_int": 1}, P)],
             [tensor("add_2")], {"stack_trace": trace(39), "nn_module_stack": stack()}),
    ]
    if not with_kind:
        # Schema 8.2 graphs carry no NamedArgument.kind.
        for n in nodes:
            for a in n["inputs"]:
                a.pop("kind", None)
    graph = {
        "inputs": [tensor(n) for n in ["p_emb_weight", "p_proj_weight", "p_fc_weight", "p_fc_bias",
                                        "b_scale", "b_table", "b_row", "b_cache", "c_lifted_tensor_0",
                                        "tokens"]],
        "outputs": [tensor("add_2"), tensor("linear_1")],
        "nodes": nodes,
        "tensor_values": tv,
        "sym_int_values": {
            "sym_size_int": symint(s0),
            "mul_1": symint((f"Mul(Integer(2), {S0})", 2 * S0_HINT)),
        },
        "sym_bool_values": {"ge": {"as_expr": {"expr_str": f"GreaterThan(Mul(Integer(2), {S0}), Integer(4))"}}},
        "is_single_tensor_return": False,
        "custom_obj_values": {},
        "sym_float_values": {},
    }
    param = lambda n, f: {"parameter": {"arg": {"name": n}, "parameter_name": f}}
    buffer = lambda n, f, p: {"buffer": {"arg": {"name": n}, "buffer_name": f, "persistent": p}}
    signature = {
        "input_specs": [
            param("p_emb_weight", "emb.weight"), param("p_proj_weight", "proj.weight"),
            param("p_fc_weight", "fc.weight"), param("p_fc_bias", "fc.bias"),
            buffer("b_scale", "scale", True), buffer("b_table", "table", True),
            buffer("b_row", "row", True), buffer("b_cache", "cache", False),
            {"tensor_constant": {"arg": {"name": "c_lifted_tensor_0"}, "tensor_constant_name": "lifted_tensor_0"}},
            {"user_input": {"arg": tensor("tokens")}},
        ],
        "output_specs": [
            {"buffer_mutation": {"arg": {"name": "add_2"}, "buffer_name": "cache"}},
            {"user_output": {"arg": tensor("linear_1")}},
        ],
    }
    leaf = {"type": None, "context": None, "children_spec": []}
    in_spec = json.dumps([1, {"type": "builtins.tuple", "context": "null", "children_spec": [
        {"type": "builtins.tuple", "context": "null", "children_spec": [leaf]},
        {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])
    gm = {
        "graph": graph,
        "signature": signature,
        "module_call_graph": [
            {"fqn": "", "signature": {"inputs": [tensor("tokens")], "outputs": [tensor("linear_1")],
                                      "in_spec": in_spec, "out_spec": json.dumps([1, leaf]),
                                      "forward_arg_names": ["tokens"]}},
            {"fqn": "emb"}, {"fqn": "proj"}, {"fqn": "fc"},
        ],
        "metadata": {},
    }
    if "treespec_namedtuple_fields" in extra_fields:
        gm["treespec_namedtuple_fields"] = {}
    ep = {
        "graph_module": gm,
        "opset_version": {"aten": 10},
        "range_constraints": {"s0": {"min_val": 2, "max_val": 16}},
        "schema_version": {"major": 8, "minor": minor},
        "verifiers": ["ATEN"],
        "torch_version": torch_version,
    }
    if "guards_code" in extra_fields:
        ep["guards_code"] = []
    return ep


LINES = {
    30: "seqlen = tokens.shape[1]",
    31: "h = self.emb(tokens)",
    32: "h = h * self.scale",
    33: "h = h + self.row",
    34: "h = torch.add(h, self.const, alpha=2)",
    35: "h = self.proj(h)",
    36: "h = torch.ops.mylib.scale_shift(h, 2.0)",
    37: "out = self.fc(h)",
    38: "torch._check(2 * seqlen >= 4)",
    39: "self.cache.add_(1)",
}


def dumps(ep):
    return json.dumps(ep)  # Python defaults, as torch.export writes it


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------

def tinynet_state():
    """state_dict and constants of TinyNet: a tied embedding / LM head, a
    parameter stored transposed, and a buffer viewing another's storage."""
    g = torch.Generator().manual_seed(0)
    emb = torch.nn.Parameter(torch.randn(8, 4, generator=g))
    base = torch.randn(4, 4, generator=g)
    proj = torch.nn.Parameter(base.t())  # strides (1, 4) over base's storage
    bias = torch.nn.Parameter(torch.randn(8, generator=g))
    table = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    state = {
        "emb.weight": emb,
        "proj.weight": proj,
        "fc.weight": emb,  # tied: same tensor, one storage
        "fc.bias": bias,
        "scale": torch.full((4,), 0.5),
        "table": table,
        "row": table[1],  # storage offset 4
    }
    constants = {"lifted_tensor_0": torch.tensor([1.0, -1.0, 0.25, 4.0]), "cache": torch.zeros(2, 4)}
    return state, constants


def torch_save(obj):
    buf = io.BytesIO()
    torch.save(obj, buf, pickle_protocol=2)
    return buf.getvalue()


EXAMPLE_INPUTS = ((torch.zeros(1, 5, dtype=torch.int64),), {})


def storage_bytes(t):
    st = t.storage()  # TypedStorage over the whole storage
    whole = torch.empty(0, dtype=t.dtype).set_(st, 0, (st.size(),), (1,))
    return whole.numpy().tobytes()


# ---------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------

class PT2Writer:
    """PT2ArchiveWriter over torch's PyTorchStreamWriter."""

    def __init__(self, path):
        self.w = torch._C.PyTorchFileWriter(path)
        self.w.set_min_version(6)

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode()
        self.w.write_record(name, data, len(data))

    def close(self, serialization_id="0" * 40):
        self.add("archive_format", "pt2")
        self.add("archive_version", "0")
        # torch >= 2.1 writers add these two in write_end_of_file.
        self.add("byteorder", "little")
        self.add(".data/serialization_id", serialization_id)
        self.w.write_end_of_file()


def payload_meta(path, is_param, use_pickle, tmeta):
    return {"path_name": path, "is_param": is_param, "use_pickle": use_pickle, "tensor_meta": tmeta}


def tensor_meta_of(t, requires_grad):
    dtype = {torch.float32: FLOAT, torch.int64: LONG, torch.int8: CHAR}[t.dtype]
    return meta(dtype, list(t.shape), list(t.stride()), t.storage_offset(), requires_grad)


def write_legacy(path, minor, version, with_kind):
    state, constants = tinynet_state()
    ep = tinynet_program(minor, version, with_kind, real_offsets=False,
                         extra_fields=("treespec_namedtuple_fields",) if minor >= 7 else ())
    with zipfile.ZipFile(path, "w") as z:  # ZIP_STORED, no alignment
        z.writestr("serialized_exported_program.json", dumps(ep))
        z.writestr("serialized_state_dict.pt", torch_save(state))
        z.writestr("serialized_constants.pt", torch_save(constants))
        z.writestr("serialized_example_inputs.pt", torch_save(EXAMPLE_INPUTS))
        z.writestr("version", f"8.{minor}")


def write_deflated(src, path):
    """A legacy archive re-zipped with every record deflated (zipfile's
    ZIP_DEFLATED), the nested torch.save archives (serialized_state_dict.pt,
    serialized_constants.pt) included: what a tool that recompresses
    torch.export.save's zip gives; torch reads any mix (zipfile inflates the
    record, then torch.load reads the bytes). The records inside the nested
    archives stay as torch.save wrote them. graft inflates a deflated nested
    archive into memory and reads its weights from there."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as z:
        for info in zin.infolist():
            z.writestr(info.filename, zin.read(info.filename),
                       compress_type=zipfile.ZIP_DEFLATED)


def write_2_8(path):
    state, constants = tinynet_state()
    ep = tinynet_program(8, "2.8.0", True, real_offsets=False,
                         extra_fields=("treespec_namedtuple_fields",))
    w = PT2Writer(path)
    w.add("data/weights/model.pt", torch_save(state))
    w.add("data/constants/model.pt", torch_save(constants))
    w.add("models/model.json", dumps(ep))
    w.add("data/sample_inputs/model.pt", torch_save(EXAMPLE_INPUTS))
    w.close()


def write_raw(w, state, constants, params):
    """_package_state_dict / _package_constants of torch >= 2.9."""
    for directory, prefix, items, cfg_name in (("data/weights/", "weight_", state, "model_weights_config.json"),
                                               ("data/constants/", "tensor_", constants, "model_constants_config.json")):
        config, files, idx = {}, {}, 0
        for fqn, t in items.items():
            key = t.storage().data_ptr()
            if key not in files:
                files[key] = f"{prefix}{idx}"
                idx += 1
                w.add(directory + files[key], storage_bytes(t))
            config[fqn] = payload_meta(files[key], fqn in params, False,
                                       tensor_meta_of(t, fqn in params))
        w.add(directory + cfg_name, json.dumps({"config": config}))


def write_2_9(path):
    state, constants = tinynet_state()
    ep = tinynet_program(14, "2.9.0", True, real_offsets=True,
                         extra_fields=("treespec_namedtuple_fields", "guards_code"))
    w = PT2Writer(path)
    write_raw(w, state, constants, {"emb.weight", "proj.weight", "fc.weight", "fc.bias"})
    w.add("models/model.json", dumps(ep))
    w.add("data/sample_inputs/model.pt", torch_save(EXAMPLE_INPUTS))
    w.close()


# ---------------------------------------------------------------------------
# torchao tensor-subclass weights (use_pickle: true)
# ---------------------------------------------------------------------------

def install_fake_torchao():
    pkg = types.ModuleType("torchao")
    mod = types.ModuleType("torchao.quantization")
    sys.modules["torchao"], sys.modules["torchao.quantization"] = pkg, mod

    class _Int4:  # torch.int4 (torch >= 2.3) pickles as GLOBAL torch.int4
        def __reduce__(self):
            return "int4"
    _Int4.__module__ = "torch"
    torch.int4 = _Int4()

    class IntxUnpackedToInt8Tensor(torch.Tensor):
        @staticmethod
        def __new__(cls, qdata, scale, zero_point, target_dtype, block_size, dtype, act):
            return torch.Tensor._make_wrapper_subclass(cls, qdata.shape, dtype=dtype, device=qdata.device,
                                                       requires_grad=False)

        def __init__(self, qdata, scale, zero_point, target_dtype, block_size, dtype, act):
            self.qdata, self.scale, self.zero_point = qdata, scale, zero_point
            self.target_dtype, self.block_size = target_dtype, block_size
            self.apply_int8_act_asym_per_token_quant = act

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise NotImplementedError(func)

    IntxUnpackedToInt8Tensor.__module__ = "torchao.quantization"
    IntxUnpackedToInt8Tensor.__qualname__ = "IntxUnpackedToInt8Tensor"
    mod.IntxUnpackedToInt8Tensor = IntxUnpackedToInt8Tensor

    fancy = types.ModuleType("thirdparty.fancy")
    sys.modules["thirdparty"] = types.ModuleType("thirdparty")
    sys.modules["thirdparty.fancy"] = fancy

    class FancyTensor(IntxUnpackedToInt8Tensor):
        pass
    FancyTensor.__module__ = "thirdparty.fancy"
    FancyTensor.__qualname__ = "FancyTensor"
    fancy.FancyTensor = FancyTensor
    return IntxUnpackedToInt8Tensor, FancyTensor


def subclass_program(minor, torch_version):
    P = 1
    access = lambda out, attr: node(
        "torch.ops.export.access_subclass_inner_tensor.default",
        [named("src_subclass_tensor", tensor("p_linear_weight"), P), named("attr", {"as_string": attr}, P)],
        [tensor(out)], {"nn_module_stack": f"L__self__,,__main__.QLinear;L__self___linear,linear,torch.nn.modules.linear.Linear"})
    nodes = [
        access("access_subclass_inner_tensor_default", "qdata"),
        access("access_subclass_inner_tensor_default_1", "scale"),
        access("access_subclass_inner_tensor_default_2", "zero_point"),
        node("torch.ops.torchao.dequantize_affine.default",
             [named("input", tensor("access_subclass_inner_tensor_default"), P),
              named("block_size", {"as_ints": [1, 4]}, P),
              named("scale", tensor("access_subclass_inner_tensor_default_1"), P),
              named("zero_point", tensor("access_subclass_inner_tensor_default_2"), P),
              named("input_dtype", {"as_scalar_type": CHAR}, P),
              named("quant_min", {"as_int": -8}, P), named("quant_max", {"as_int": 7}, P)],
             [tensor("dequantize_affine")], {}),
        node("torch.ops.aten.linear.default",
             [named("input", tensor("x"), P), named("weight", tensor("dequantize_affine"), P)],
             [tensor("linear")], {}),
    ]
    graph = {
        "inputs": [tensor("p_linear_weight"), tensor("x")],
        "outputs": [tensor("linear")],
        "nodes": nodes,
        "tensor_values": {
            "p_linear_weight": meta(FLOAT, [4, 8]),
            "x": meta(FLOAT, [2, 8]),
            "access_subclass_inner_tensor_default": meta(CHAR, [4, 8]),
            "access_subclass_inner_tensor_default_1": meta(FLOAT, [4, 2]),
            "access_subclass_inner_tensor_default_2": meta(CHAR, [4, 2]),
            "dequantize_affine": meta(FLOAT, [4, 8]),
            "linear": meta(FLOAT, [2, 4]),
        },
        "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": False,
        "custom_obj_values": {}, "sym_float_values": {},
    }
    return {
        "graph_module": {
            "graph": graph,
            "signature": {
                "input_specs": [{"parameter": {"arg": {"name": "p_linear_weight"}, "parameter_name": "linear.weight"}},
                                {"user_input": {"arg": tensor("x")}}],
                "output_specs": [{"user_output": {"arg": tensor("linear")}}],
            },
            "module_call_graph": [{"fqn": ""}],
            "metadata": {},
            "treespec_namedtuple_fields": {},
        },
        "opset_version": {"aten": 10},
        "range_constraints": {},
        "schema_version": {"major": 8, "minor": minor},
        "verifiers": ["ATEN"],
        "torch_version": torch_version,
        "guards_code": [],
    }


def subclass_weight(cls):
    """A 4 x 8 int4 weight (group 4) as the subclass `cls`, marked as a Parameter."""
    g = torch.Generator().manual_seed(1)
    qdata = torch.randint(-8, 8, (4, 8), dtype=torch.int8, generator=g)
    scale = torch.rand(4, 2, generator=g) / 10
    zero_point = torch.zeros(4, 2, dtype=torch.int8)
    w = cls(qdata, scale, zero_point, torch.int4, (1, 4), torch.float32, False)
    w._is_param = True  # nn.Parameter(subclass) in torch 2.x marks the instance
    return w


def write_subclass_archive(path, w):
    """A torch 2.10 archive of one linear whose weight is the subclass instance `w`."""
    w_ = PT2Writer(path)
    w_.add("data/weights/weight_0", torch_save(w))
    w_.add("data/weights/model_weights_config.json", json.dumps({"config": {
        "linear.weight": payload_meta("weight_0", True, True, meta(FLOAT, [4, 8]))}}))
    w_.add("data/constants/model_constants_config.json", json.dumps({"config": {}}))
    w_.add("models/model.json", dumps(subclass_program(15, "2.10.0")))
    w_.add("data/sample_inputs/model.pt", torch_save(((torch.zeros(2, 8),), {})))
    w_.close()


def write_subclass(path, cls):
    write_subclass_archive(path, subclass_weight(cls))


def write_subclass_activation_enum(path, cls):
    """The subclass with pytorch/ao 36027d82's attributes: `activation_quantization` holding
    the `str` enum member IntxUnpackedToInt8TensorActivationQuantization.INT8_ASYM_PER_TOKEN
    (registered with add_safe_globals next to the tensor), as an instance built with the member
    (not quant_api's plain string) pickles it: getattr(cls, name) or cls(value), by Python
    version."""
    import enum
    modname = "torchao.quantization.quantize_.workflows.intx.intx_unpacked_to_int8_tensor"
    mod = types.ModuleType(modname)
    sys.modules[modname] = mod

    class IntxUnpackedToInt8TensorActivationQuantization(str, enum.Enum):
        INT8_ASYM_PER_TOKEN = "int8_asym_per_token"
    IntxUnpackedToInt8TensorActivationQuantization.__module__ = modname
    IntxUnpackedToInt8TensorActivationQuantization.__qualname__ = \
        "IntxUnpackedToInt8TensorActivationQuantization"
    mod.IntxUnpackedToInt8TensorActivationQuantization = IntxUnpackedToInt8TensorActivationQuantization

    w = subclass_weight(cls)
    del w.apply_int8_act_asym_per_token_quant  # earlier torchao's attribute, renamed since
    w.activation_quantization = IntxUnpackedToInt8TensorActivationQuantization.INT8_ASYM_PER_TOKEN
    write_subclass_archive(path, w)


# ---------------------------------------------------------------------------
# A pickle that would run code: graft must refuse it without executing it.
# ---------------------------------------------------------------------------

class Evil:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def write_evil(path):
    state, constants = tinynet_state()
    state["scale"] = Evil()
    ep = tinynet_program(8, "2.8.0", True, real_offsets=False,
                         extra_fields=("treespec_namedtuple_fields",))
    w = PT2Writer(path)
    w.add("data/weights/model.pt", torch_save(state))
    w.add("data/constants/model.pt", torch_save(constants))
    w.add("models/model.json", dumps(ep))
    w.add("data/sample_inputs/model.pt", torch_save(EXAMPLE_INPUTS))
    w.close()


def main():
    write_legacy(os.path.join(HERE, "tinynet_torch2_6_legacy.pt2"), 2, "2.6.0", with_kind=False)
    write_legacy(os.path.join(HERE, "tinynet_torch2_7_legacy.pt2"), 7, "2.7.0", with_kind=True)
    write_deflated(os.path.join(HERE, "tinynet_torch2_7_legacy.pt2"),
                   os.path.join(HERE, "tinynet_torch2_7_legacy_deflated.pt2"))
    write_2_8(os.path.join(HERE, "tinynet_torch2_8.pt2"))
    write_2_9(os.path.join(HERE, "tinynet_torch2_9.pt2"))
    intx, fancy = install_fake_torchao()
    write_subclass(os.path.join(HERE, "intx_subclass_torch2_10.pt2"), intx)
    write_subclass(os.path.join(HERE, "bad_unknown_subclass.pt2"), fancy)
    write_subclass_activation_enum(os.path.join(HERE, "intx_subclass_act_enum_torch2_10.pt2"), intx)
    write_evil(os.path.join(HERE, "bad_pickle_global.pt2"))


if __name__ == "__main__":
    main()
