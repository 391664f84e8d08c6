"""torch <-> graft plumbing shared by graft.fx and the torch.library kernels:
dtype names, tensors to and from the extension, and the registration of the
ops graft knows (et_vk, and torchao / quantized_decomposed when those packages
do not define them) with torch.library, implemented by graft's reference
interpreter kernels."""

from __future__ import annotations

import re
from typing import Dict, List

import numpy as np
import torch
from torch.library import Library

from . import _graft

#: graft's short dtype names and the torch dtypes they stand for
DTYPES: Dict[str, torch.dtype] = {
    "bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
    "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
    "f32": torch.float32, "f64": torch.float64,
}
GRAFT_NAMES: Dict[torch.dtype, str] = {v: k for k, v in DTYPES.items()}

# torch 1.13's schema parser takes a ScalarType default only as its enum value
# (c10::ScalarType), not by name as newer torch writes it ("=float32").
_SCALAR_TYPE_CODES = {
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "half": 5,
    "float32": 6, "float": 6, "float64": 7, "double": 7, "bool": 11, "bfloat16": 15,
}
_DEFAULT = re.compile(r"(ScalarType\??\s+\w+)=(\w+)")
_MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format,
                   "channels_last": torch.channels_last,
                   "preserve_format": torch.preserve_format}


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return GRAFT_NAMES[dtype]
    except KeyError:
        from .errors import ConversionError
        raise ConversionError(f"graft has no dtype for {dtype}") from None


def to_graft_tensor(t: torch.Tensor):
    """(numpy array, dtype name) for the extension; bf16 travels as its bits."""
    t = t.detach().cpu().contiguous()
    name = dtype_name(t.dtype)
    if t.dtype == torch.bfloat16:
        return (t.view(torch.int16).numpy(), name)
    return (t.numpy(), name)


def to_torch_tensor(pair, copy: bool = True) -> torch.Tensor:
    """A torch tensor from the extension's (TensorData, dtype) pair."""
    data, name = pair
    arr = np.asarray(data)
    if copy or not arr.flags.writeable:
        arr = np.array(arr)  # torch wants writable memory it can own
    if name == "bf16":
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    if name not in DTYPES:
        from .errors import ConversionError
        raise ConversionError(f"graft dtype {name} has no torch equivalent in torch "
                              f"{torch.__version__}")
    return torch.from_numpy(arr)


def to_graft_arg(v):
    """A torch-side argument as the extension's call_op takes it."""
    if isinstance(v, torch.Tensor):
        return to_graft_tensor(v)
    if isinstance(v, torch.dtype):
        return ("dtype", dtype_name(v))
    if isinstance(v, torch.device):
        return ("device", str(v))
    if isinstance(v, (list, tuple)):
        return [to_graft_arg(e) for e in v]
    return v


def from_graft_arg(v, env):
    """A graft node argument as torch takes it (graph values looked up in env)."""
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        tag, text = v
        if tag == "%":
            return env[text]
        if tag == "dtype":
            if text not in DTYPES:
                from .errors import ConversionError
                raise ConversionError(f"graft dtype {text} has no torch equivalent")
            return DTYPES[text]
        if tag == "device":
            return torch.device(text)
        if tag == "layout":
            return getattr(torch, text)
        if tag == "memory_format":
            return _MEMORY_FORMATS[text]
    if isinstance(v, list):
        return [from_graft_arg(e, env) for e in v]
    return v


def _kernel(qualified: str):
    def kernel(*args, **kwargs):
        results = _graft.call_op(qualified, [to_graft_arg(a) for a in args],
                                 {k: to_graft_arg(v) for k, v in kwargs.items()})
        outs = [to_torch_tensor(r) if isinstance(r, tuple) else r for r in results]
        return outs[0] if len(outs) == 1 else tuple(outs)
    kernel.__name__ = qualified.replace(".", "_")
    kernel.__doc__ = f"{qualified} on graft's reference interpreter"
    return kernel


#: namespaces whose ops graft registers when torch does not define them
NAMESPACES = ("et_vk", "torchao", "quantized_decomposed")
_LIBRARIES: Dict[str, object] = {}
#: ops registered by graft ("ns.op.overload"), and ones torch's parser refused
registered: List[str] = []
refused: Dict[str, str] = {}


def _defined(ns: str, name: str, overload: str) -> bool:
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        getattr(packet, overload)
        return True
    except (AttributeError, RuntimeError):
        return False


def register_ops() -> None:
    """Registers every et_vk / torchao / quantized_decomposed op of graft's
    registry that torch does not define yet (idempotent). An op defined by an
    installed package (torchao, executorch) keeps that package's kernel."""
    for op in _graft.op_schemas():
        ns, name, overload = op["namespace"], op["name"], op["overload"]
        qualified = op["qualified_name"]
        if ns not in NAMESPACES or qualified in registered or qualified in refused:
            continue
        if _defined(ns, name, overload):
            continue
        lib = _library(ns)
        if isinstance(lib, str):
            refused[qualified] = lib
            continue
        schema = op["schema"].split("::", 1)[1]
        op_name = name if overload == "default" else f"{name}.{overload}"
        schema = op_name + schema[schema.index("("):]
        schema = _DEFAULT.sub(lambda m: f"{m.group(1)}={_SCALAR_TYPE_CODES.get(m.group(2), m.group(2))}",
                              schema)
        try:
            lib.define(schema)
            lib.impl(op_name, _kernel(qualified), "CompositeExplicitAutograd")
        except RuntimeError as e:
            refused[qualified] = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            continue
        registered.append(qualified)


def _library(ns: str):
    """The Library graft defines `ns`'s ops in, or why there is none."""
    if ns not in _LIBRARIES:
        try:
            _LIBRARIES[ns] = Library(ns, "DEF")
        except RuntimeError as e:
            # Another library defined the namespace: newer torch adds ops to it
            # as a FRAGMENT; torch 1.13 has no such kind.
            try:
                _LIBRARIES[ns] = Library(ns, "FRAGMENT")
            except (RuntimeError, ValueError):
                _LIBRARIES[ns] = f"namespace {ns} is defined by another library ({e})"
    return _LIBRARIES[ns]
