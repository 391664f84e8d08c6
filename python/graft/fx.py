"""The torch.fx bridge: fuse a GraphModule with graft's rules.

    import graft.fx
    fused, report = graft.fx.fuse(gm, example_inputs)
    fused(*example_inputs)      # runs in PyTorch; fused nodes call torch.ops.et_vk.*

``fuse`` converts the GraphModule into a graft graph (parameters and buffers
become constants under their FQNs, shapes and dtypes come from running the
module on ``example_inputs``), legalizes and fuses it exactly as ``graft
compile`` does, and converts the result back: every node calls the torch op of
the same name (``torch.ops.aten.linear.default``, ``torch.ops.et_vk.linear_q4gsw
.default``), original constants are the module's own tensors, and constants the
rules made (repacked weights) are registered as buffers under their FQNs.

Importing this module registers, with torch.library, every op of the et_vk,
torchao and quantized_decomposed namespaces that graft knows and torch does not
define (torchao or executorch not installed), implemented by graft's reference
kernels, so both modules run in PyTorch and can be compared.
"""

from __future__ import annotations

import operator
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from . import FuseReport, Graph, RuleSet, _graft, _rules
from ._torch import (dtype_name, from_graft_arg, register_ops, registered, refused,
                     to_graft_tensor, to_torch_tensor)
from .errors import ConversionError

__all__ = ["fuse", "to_graft", "from_graft", "registered_ops", "refused_ops"]

register_ops()


def registered_ops() -> List[str]:
    """The ops this package registered with torch.library ("ns.op.overload")."""
    return list(registered)


def refused_ops() -> Dict[str, str]:
    """Ops graft knows that could not be registered, with torch's reason."""
    return dict(refused)


# Python-level callables symbolic_trace records, as the aten op they are, with
# a function reordering their arguments into the aten schema's order.
def _same(args, kwargs):
    return list(args), dict(kwargs)


_EMBEDDING_DEFAULTS = {"padding_idx": None, "max_norm": None, "norm_type": 2.0,
                      "scale_grad_by_freq": False, "sparse": False}


def _embedding(args, kwargs):
    # F.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
    # sparse) -> aten.embedding(weight, input); only the defaults of the rest
    # (what a forward pass of nn.Embedding uses) are supported.
    args, kwargs = list(args), dict(kwargs)
    inp = args.pop(0) if args else kwargs.pop("input")
    weight = args.pop(0) if args else kwargs.pop("weight")
    options = dict(zip(_EMBEDDING_DEFAULTS, args), **kwargs)
    unsupported = sorted(k for k, v in options.items() if _EMBEDDING_DEFAULTS.get(k, object()) != v)
    if unsupported:
        raise ConversionError(f"F.embedding with {', '.join(unsupported)} is not supported")
    return [weight, inp], {}


_FUNCTIONS = {
    F.linear: ("aten.linear.default", _same),
    torch._C._nn.linear: ("aten.linear.default", _same),
    F.embedding: ("aten.embedding.default", _embedding),
    torch.matmul: ("aten.matmul.default", _same),
    torch.mm: ("aten.mm.default", _same),
    torch.t: ("aten.t.default", _same),
    operator.matmul: ("aten.matmul.default", _same),
    operator.add: ("aten.add.Tensor", _same),
    operator.sub: ("aten.sub.Tensor", _same),
    operator.mul: ("aten.mul.Tensor", _same),
    torch.add: ("aten.add.Tensor", _same),
    torch.sub: ("aten.sub.Tensor", _same),
    torch.mul: ("aten.mul.Tensor", _same),
    F.relu: ("aten.relu.default", _same),
    torch.relu: ("aten.relu.default", _same),
    F.silu: ("aten.silu.default", _same),
}


def _overload_target(op: torch._ops.OpOverload) -> str:
    ns, name = op._schema.name.split("::", 1)
    return f"{ns}.{name}.{op._schema.overload_name or 'default'}"


def _is_tensor_type(t) -> bool:
    return "Tensor" in str(t)


def _resolve_packet(packet, args, kwargs) -> torch._ops.OpOverload:
    """The overload of an OpOverloadPacket a call binds to: its arguments' kinds
    (tensor or not) must fit the schema's, 'default' first."""
    names = list(packet.overloads())
    names.sort(key=lambda n: n != "default")
    for name in names:
        op = getattr(packet, name)
        schema = op._schema
        positional = [a for a in schema.arguments if not a.kwarg_only]
        if len(args) > len(positional):
            continue
        ok = True
        for value, arg in zip(args, positional):
            if value is None:
                if "?" not in str(arg.type) and "Optional" not in str(arg.type):
                    ok = False
                    break
                continue
            is_node = isinstance(value, torch.fx.Node)
            if is_node != _is_tensor_type(arg.type) and not (
                    isinstance(value, (list, tuple)) and _is_tensor_type(arg.type)):
                ok = False
                break
        known = {a.name for a in schema.arguments}
        if ok and all(k in known for k in kwargs):
            return op
    raise ConversionError(f"no overload of {packet} takes these arguments")


class _Converter:
    """torch.fx GraphModule -> graft graph."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.builder = _graft.GraphBuilder("fx")
        self.values: Dict[torch.fx.Node, List[str]] = {}
        self.constants: Dict[str, str] = {}  # FQN -> value name
        self.params = dict(gm.named_parameters())
        self.buffers = dict(gm.named_buffers())
        self.names: set = set()

    def fresh(self, base: str) -> str:
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        out, i = name, 1
        while out in self.names:
            out = f"{name}_{i}"
            i += 1
        self.names.add(out)
        return out

    def constant(self, fqn: str) -> str:
        if fqn in self.constants:
            return self.constants[fqn]
        try:
            t = self.gm.get_parameter(fqn) if fqn in self.params else (
                self.gm.get_buffer(fqn) if fqn in self.buffers else _getattr(self.gm, fqn))
        except AttributeError:
            raise ConversionError(f"module has no attribute '{fqn}'") from None
        if not isinstance(t, torch.Tensor):
            raise ConversionError(f"attribute '{fqn}' is a {type(t).__name__}, not a tensor")
        kind = "param" if fqn in self.params else "buffer" if fqn in self.buffers else "const"
        name = self.fresh(fqn.replace(".", "_"))
        self.builder.constant(kind, name, fqn, to_graft_tensor(t))
        self.constants[fqn] = name
        return name

    def arg(self, v, node):
        if isinstance(v, _Value):
            return ("%", v.name)
        if isinstance(v, torch.fx.Node):
            names = self.values.get(v)
            if names is None or len(names) != 1:
                raise ConversionError(f"node {node.name}: argument {v.name} is not one tensor")
            return ("%", names[0])
        if isinstance(v, torch.dtype):
            return ("dtype", dtype_name(v))
        if isinstance(v, torch.device):
            return ("device", str(v))
        if isinstance(v, (list, tuple)):
            return [self.arg(e, node) for e in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, torch.memory_format):
            return ("memory_format", str(v).replace("torch.", ""))
        if isinstance(v, torch.layout):
            return ("layout", str(v).replace("torch.", ""))
        raise ConversionError(f"node {node.name}: cannot convert argument {v!r}")

    def types(self, node):
        meta = node.meta.get("tensor_meta")
        if meta is None:
            raise ConversionError(f"node {node.name} ({node.target}) produced no tensor")
        # TensorMetadata is itself a NamedTuple: a tuple of them is a multi-result op.
        metas = [meta] if hasattr(meta, "dtype") else list(meta)
        return [(dtype_name(m.dtype), list(m.shape)) for m in metas]

    def call(self, node, target: str, args, kwargs):
        types = self.types(node)
        names = [self.fresh(node.name if len(types) == 1 else f"{node.name}_{i}")
                 for i in range(len(types))]
        gargs = [self.arg(a, node) for a in args]
        gkwargs = {k: self.arg(v, node) for k, v in kwargs.items()}
        self.values[node] = self.builder.node(target, gargs, gkwargs, names, types)

    def run(self) -> Graph:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                meta = node.meta.get("tensor_meta")
                if meta is None or not hasattr(meta, "dtype"):
                    raise ConversionError(f"input {node.name} is not a tensor")
                name = self.fresh(node.name)
                self.builder.input(name, dtype_name(meta.dtype), list(meta.shape))
                self.values[node] = [name]
            elif node.op == "get_attr":
                self.values[node] = [self.constant(node.target)]
            elif node.op == "call_function":
                self.call_function(node)
            elif node.op == "call_module":
                self.call_module(node)
            elif node.op == "call_method":
                raise ConversionError(f"node {node.name}: method calls (.{node.target}()) are not "
                                      f"supported; trace with functions or torch ops")
            elif node.op == "output":
                outs = node.args[0]
                for o in (outs if isinstance(outs, (list, tuple)) else [outs]):
                    if not isinstance(o, torch.fx.Node) or len(self.values.get(o, [])) != 1:
                        raise ConversionError("every output must be one tensor")
                    self.builder.output(self.values[o][0])
        try:
            return Graph(self.builder.build(True))
        except ConversionError:
            raise
        except Exception as e:  # the verifier's findings, as a conversion error
            raise ConversionError(f"the converted graph is invalid:\n{e}",
                                  getattr(e, "diagnostics", ())) from None

    def call_function(self, node):
        target = node.target
        if target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
            src = self.values.get(node.args[0])
            if src is None or len(src) < 2 or not isinstance(node.args[1], int):
                raise ConversionError(f"node {node.name}: unsupported indexing")
            self.values[node] = [src[node.args[1]]]
            return
        if isinstance(target, torch._ops.OpOverloadPacket):
            target = _resolve_packet(target, node.args, node.kwargs)
        if isinstance(target, torch._ops.OpOverload):
            self.call(node, _overload_target(target), node.args, node.kwargs)
            return
        if target in _FUNCTIONS:
            name, reorder = _FUNCTIONS[target]
            args, kwargs = reorder(node.args, node.kwargs)
            self.call(node, name, args, kwargs)
            return
        raise ConversionError(f"node {node.name}: {getattr(target, '__name__', target)} has no "
                              f"graft op; call a torch op (torch.ops.aten.*) instead")

    def call_module(self, node):
        mod = self.gm.get_submodule(node.target)
        prefix = node.target + "."
        if isinstance(mod, torch.nn.Linear):
            w = self.fx_constant(prefix + "weight")
            b = self.fx_constant(prefix + "bias") if mod.bias is not None else None
            self.call(node, "aten.linear.default", [node.args[0], w, b], {})
        elif isinstance(mod, torch.nn.Embedding):
            w = self.fx_constant(prefix + "weight")
            self.call(node, "aten.embedding.default", [w, node.args[0]], {})
        elif isinstance(mod, torch.nn.ReLU):
            self.call(node, "aten.relu.default", [node.args[0]], {})
        elif isinstance(mod, torch.nn.SiLU):
            self.call(node, "aten.silu.default", [node.args[0]], {})
        else:
            raise ConversionError(f"node {node.name}: module {type(mod).__name__} is not "
                                  f"supported; trace through it (leaf modules other than "
                                  f"Linear, Embedding, ReLU, SiLU)")

    def fx_constant(self, fqn):
        return _Value(self.constant(fqn))


class _Value:
    """A graft value named directly as an argument (a leaf module's parameter,
    which has no fx node)."""

    def __init__(self, name: str):
        self.name = name


def _getattr(root, fqn: str):
    obj = root
    for part in fqn.split("."):
        obj = getattr(obj, part)
    return obj


def to_graft(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> Graph:
    """Converts a GraphModule into a graft graph (shapes and dtypes from running
    it on ``example_inputs``; parameters and buffers keep their FQNs)."""
    if not isinstance(gm, torch.fx.GraphModule):
        raise ConversionError(f"expected a torch.fx.GraphModule, got {type(gm).__name__}")
    try:
        ShapeProp(gm).propagate(*example_inputs)
    except Exception as e:
        raise ConversionError(f"running the module on the example inputs failed: {e}") from None
    return _Converter(gm).run()


def _set_tensor(root: torch.nn.Module, fqn: str, tensor: torch.Tensor, parameter: bool) -> str:
    """Registers `tensor` on `root` under `fqn` and returns the attribute path it
    got: `fqn` itself, unless a prefix of it is already a tensor (graft derives
    "w.pack_int4_low_first.group_sums" from "w.pack_int4_low_first"), where a
    module attribute cannot also be a module: the rest of the FQN from there is
    then joined with "_" into one attribute name."""
    parts = fqn.split(".")
    mod, path = root, []
    while len(parts) > 1:
        child = getattr(mod, parts[0], None)
        if child is None:
            child = torch.nn.Module()
            mod.add_module(parts[0], child)
        elif not isinstance(child, torch.nn.Module):
            break
        mod = child
        path.append(parts.pop(0))
    leaf = "_".join(parts)
    while hasattr(mod, leaf):
        leaf += "_"
    if parameter:
        mod.register_parameter(leaf, torch.nn.Parameter(tensor, requires_grad=tensor.requires_grad))
    else:
        mod.register_buffer(leaf, tensor)
    return ".".join(path + [leaf])


def _used_values(graph: Graph) -> set:
    used = set()

    def walk(v):
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "%":
            used.add(v[1])
        elif isinstance(v, list):
            for e in v:
                walk(e)

    for n in graph.nodes:
        for a in n.args:
            walk(a)
        for a in n.kwargs.values():
            walk(a)
    for o in graph.outputs:
        used.add(o.name)
    return used


def from_graft(graph: Graph, original: Optional[torch.nn.Module] = None,
               single_output: bool = False) -> torch.fx.GraphModule:
    """A GraphModule computing ``graph``: every node calls torch.ops.<ns>.<op>.<overload>.
    Constants of ``original`` (by FQN) are its own tensors; the others (what
    rules made) are copied from graft and registered as buffers under their FQN
    (``gm.graft_attributes`` maps each FQN to its attribute path, which differs
    only where a prefix of the FQN is itself a tensor; see _set_tensor)."""
    root = torch.nn.Module()
    fx_graph = torch.fx.Graph()
    env: Dict[str, torch.fx.Node] = {}
    used = _used_values(graph)
    own = dict(original.named_parameters()) if original is not None else {}
    own_buffers = dict(original.named_buffers()) if original is not None else {}
    attributes: Dict[str, str] = {}
    for inp in graph.inputs:
        if inp.kind == "input":
            env[inp.name] = fx_graph.placeholder(inp.name)
            continue
        if inp.name not in used:
            continue  # e.g. the int8 weight a packed one replaced
        if inp.fqn in own:
            path = _set_tensor(root, inp.fqn, own[inp.fqn].detach(), parameter=True)
        elif inp.fqn in own_buffers:
            path = _set_tensor(root, inp.fqn, own_buffers[inp.fqn], parameter=False)
        else:
            path = _set_tensor(root, inp.fqn, to_torch_tensor(graph._g.constant(inp.fqn)), False)
        attributes[inp.fqn] = path
        env[inp.name] = fx_graph.get_attr(path)
    for node in graph.nodes:
        ns, _, rest = node.target.partition(".")
        name, _, overload = rest.partition(".")
        try:
            op = getattr(getattr(getattr(torch.ops, ns), name), overload or "default")
        except (AttributeError, RuntimeError):
            raise ConversionError(f"torch has no op {node.target} (graft node "
                                  f"%{node.outputs[0]['name'] if node.outputs else '?'})") from None
        args = tuple(from_graft_arg(a, env) for a in node.args)
        kwargs = {k: from_graft_arg(v, env) for k, v in node.kwargs.items()}
        # graft's value names become the fx node names (uniquified by fx).
        single = len(node.outputs) == 1
        call = fx_graph.create_node("call_function", op, args, kwargs,
                                    name=node.outputs[0]["name"] if single else None)
        if single:
            env[node.outputs[0]["name"]] = call
        else:
            for i, r in enumerate(node.outputs):
                env[r["name"]] = fx_graph.create_node("call_function", operator.getitem,
                                                      (call, i), {}, name=r["name"])
    outs = [env[o.name] for o in graph.outputs]
    fx_graph.output(outs[0] if single_output and len(outs) == 1 else tuple(outs))
    gm = torch.fx.GraphModule(root, fx_graph, class_name="GraftFused")
    gm.graph.lint()
    #: graft FQN -> the attribute path holding it (the FQN unless _set_tensor
    #: had to flatten it)
    gm.graft_attributes = attributes
    return gm


def fuse(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor],
         rules: Optional[RuleSet] = None) -> Tuple[torch.fx.GraphModule, FuseReport]:
    """Fuses a GraphModule with graft's rules (default: the shipped ones).

    Returns ``(fused_gm, report)``: ``fused_gm`` takes the same inputs and
    returns the same outputs as ``gm``; its fused nodes call ``torch.ops.et_vk.*``
    with the repacked weights registered on it under their FQNs. ``report`` is
    the :class:`graft.FuseReport` (rewrites, per-rule counts, near misses,
    provenance of every constant the rules made)."""
    graph = to_graft(gm, example_inputs)
    report = graph.fuse(_rules(rules))
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    single = not isinstance(out_node.args[0], (list, tuple))
    return from_graft(graph, gm, single_output=single), report
