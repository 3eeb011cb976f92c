"""Element-wise and broadcasting operators (arithmetic, activations, casts, quantise/requantise/shift) with their numpy semantics.

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import DTYPES, TensorType
from .registry import _REQUIRED, Infer, _err, _is_int, _wrap32, register


def _bcast(ts: list[TensorType], op: str) -> tuple[int, ...]:
    try:
        shape = np.broadcast_shapes(*(t.shape for t in ts))
    except ValueError:
        raise _err(f"{op}: shapes {', '.join(str(t) for t in ts)} do not broadcast") from None
    if shape != ts[0].shape:
        raise _err(f"{op}: the first input {ts[0]} must have the result shape {shape} (broadcast the others)")
    return shape


def _binary_infer(op: str):
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        a, b = ts
        if a.dtype != b.dtype:
            raise _err(f"{op}: dtypes differ ({a.dtype} vs {b.dtype}); cast one first")
        if a.dtype in ("int8", "uint8"):
            raise _err(f"{op} on {a.dtype} would wrap at 8 bits; cast to int32 first")
        return TensorType(_bcast(ts, op), a.dtype)

    return infer


def _binary_compute(fn):
    def compute(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
        a, b = xs
        if a.dtype == np.int32:
            return _wrap32(fn(a.astype(np.int64), b.astype(np.int64)))
        return fn(a, b).astype(a.dtype, copy=False)

    return compute


register("add", "elemwise", (2, 2))((_binary_infer("add"), _binary_compute(np.add)))
register("sub", "elemwise", (2, 2))((_binary_infer("sub"), _binary_compute(np.subtract)))
register("mul", "elemwise", (2, 2))((_binary_infer("mul"), _binary_compute(np.multiply)))


def _same(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    return ts[0]


def _float_only(op: str) -> Infer:
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        if ts[0].dtype != "float32":
            raise _err(f"{op} needs a float32 input, got {ts[0]}; dequantize first")
        return ts[0]

    return infer


register("relu", "elemwise", (1, 1))((_same, lambda at, xs: np.maximum(xs[0], np.zeros((), xs[0].dtype))))
register("tanh", "elemwise", (1, 1))((_float_only("tanh"), lambda at, xs: np.tanh(xs[0])))
register("sigmoid", "elemwise", (1, 1))(
    (_float_only("sigmoid"), lambda at, xs: (1.0 / (1.0 + np.exp(-xs[0]))).astype(np.float32))
)


def _clip_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    lo, hi = at["min"], at["max"]
    if lo is not None and hi is not None and lo > hi:
        raise _err(f"clip: min {lo} > max {hi}")
    if _is_int(ts[0].dtype):
        info = np.iinfo(ts[0].dtype)
        for v in (lo, hi):
            if v is not None and (v != int(v) or not info.min <= v <= info.max):
                raise _err(f"clip bound {v} is not representable in {ts[0].dtype}")
    return ts[0]


def _clip(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    lo = None if at["min"] is None else np.array(at["min"]).astype(x.dtype)
    hi = None if at["max"] is None else np.array(at["max"]).astype(x.dtype)
    if lo is None and hi is None:
        return x
    return np.clip(x, lo, hi)


register("clip", "elemwise", (1, 1), {"min": None, "max": None})((_clip_infer, _clip))


def _cast_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if at["dtype"] not in DTYPES:
        raise _err(f"cast to unknown dtype {at['dtype']!r}")
    return TensorType(ts[0].shape, at["dtype"])


register("cast", "elemwise", (1, 1), {"dtype": _REQUIRED})((_cast_infer, lambda at, xs: xs[0].astype(at["dtype"])))


def _int32_only(op: str) -> Infer:
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        if ts[0].dtype != "int32":
            raise _err(f"{op} needs an int32 (accumulator) input, got {ts[0]}")
        out = at.get("dtype", "int32")
        if out not in ("int8", "uint8", "int32"):
            raise _err(f"{op}: output dtype must be an integer type, got {out!r}")
        if not isinstance(at.get("shift", at.get("n")), int):
            raise _err(f"{op}: the shift must be an integer")
        return TensorType(ts[0].shape, out)

    return infer


def shift_round(x: np.ndarray, n: int) -> np.ndarray:
    """VTA's rounding shift on int32: ``n > 0``: ``(x + 2**(n-1)) >> n`` (the add wraps at
    32 bits, the shift is arithmetic); ``n < 0``: ``x << -n`` wrapping; ``n == 0``: ``x``."""
    x = x.astype(np.int32, copy=False)
    if n > 0:
        t = _wrap32(x.astype(np.int64) + (1 << (n - 1)))
        return (t >> n).astype(np.int32)
    if n < 0:
        return _wrap32(x.astype(np.int64) << (-n))
    return x


def _requantize(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    t = shift_round(xs[0], at["shift"])
    return np.clip(t, at["min"], at["max"]).astype(at["dtype"])


register("shift", "elemwise", (1, 1), {"n": _REQUIRED})(
    (_int32_only("shift"), lambda at, xs: shift_round(xs[0], at["n"]))
)
register("requantize", "elemwise", (1, 1), {"shift": _REQUIRED, "min": -127, "max": 127, "dtype": "int8"})(
    (_int32_only("requantize"), _requantize)
)


def channel_shift_round(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """:func:`shift_round` with a shift per element of ``n`` (broadcast against ``x``): a
    rounding right shift where ``n > 0``, a wrapping left shift where ``n < 0``."""
    x64 = x.astype(np.int64)
    n64 = np.broadcast_to(np.asarray(n, np.int64), x.shape)
    right = _wrap32(x64 + np.where(n64 > 0, np.left_shift(1, np.maximum(n64 - 1, 0)), 0)) >> np.maximum(n64, 0)
    left = _wrap32(x64 << np.maximum(-n64, 0))
    return np.where(n64 >= 0, right, left).astype(np.int32)


def _channel_shift_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, n = ts
    if x.dtype != "int32" or n.dtype != "int32":
        raise _err(f"channel_shift needs an int32 accumulator and int32 shift amounts, got {x} and {n}")
    _bcast(ts, "channel_shift")
    return x


# Per-channel requantisation (per-output-channel weight scales): input 1 holds one shift per
# channel; VDLA runs it as the rounding add (folded into the bias) then SHR with a tensor operand.
register("channel_shift", "elemwise", (2, 2))(
    (_channel_shift_infer, lambda at, xs: channel_shift_round(xs[0], xs[1]))
)


def _int_hard_swish_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if ts[0].dtype != "int32":
        raise _err(f"int_hard_swish needs an int32 input, got {ts[0]}")
    if not all(isinstance(at[k], int) for k in ("offset", "max")) or at["max"] < 0:
        raise _err(f"int_hard_swish: offset {at['offset']!r} and max {at['max']!r} must be integers, max >= 0")
    return ts[0]


def _int_hard_swish(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0].astype(np.int64)
    gate = np.clip(_wrap32(x + at["offset"]), 0, at["max"])
    return _wrap32(x * gate)


# The integer hard-swish of the int8 quantiser: x * clip(x + offset, 0, max) in int32 (the add
# and the product wrap, as the ALU's): with x at scale s, offset = 3 / s and max = 6 / s, it is
# 6 * hard_swish(x * s) / s**2, rescaled by the fixed-point multiply that follows it. VDLA runs
# it as the gate on a copy of the accumulator (ADD, MAX, MIN) and MUL with that copy.
register("int_hard_swish", "elemwise", (1, 1), {"offset": _REQUIRED, "max": _REQUIRED})(
    (_int_hard_swish_infer, _int_hard_swish)
)


def _quantize_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if ts[0].dtype != "float32":
        raise _err(f"quantize needs a float32 input, got {ts[0]}")
    if at["dtype"] not in ("int8", "uint8"):
        raise _err(f"quantize to {at['dtype']!r}: only int8 and uint8")
    if not at["scale"] > 0:
        raise _err(f"quantize scale must be positive, got {at['scale']}")
    return TensorType(ts[0].shape, at["dtype"])


def _quantize(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # As ONNX QuantizeLinear: x / scale in float32, round half to even, + zero point, saturate.
    info = np.iinfo(at["dtype"])
    q = np.rint(xs[0] / np.float32(at["scale"])) + np.float32(at["zero_point"])
    return np.clip(q, info.min, info.max).astype(at["dtype"])


def _dequantize_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if not _is_int(ts[0].dtype):
        raise _err(f"dequantize needs an integer input, got {ts[0]}")
    return TensorType(ts[0].shape, "float32")


def _dequantize(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    if x.dtype == np.int32:  # keep exact: int32 does not fit float32's mantissa
        return ((x.astype(np.float64) - at["zero_point"]) * at["scale"]).astype(np.float32)
    return (x.astype(np.float32) - np.float32(at["zero_point"])) * np.float32(at["scale"])


register("quantize", "elemwise", (1, 1), {"scale": _REQUIRED, "zero_point": 0, "dtype": "int8"})(
    (_quantize_infer, _quantize)
)
register("dequantize", "elemwise", (1, 1), {"scale": _REQUIRED, "zero_point": 0})((_dequantize_infer, _dequantize))


def _bn_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if x.dtype != "float32" or len(x.shape) < 2:
        raise _err(f"batch_norm needs a float32 input of rank >= 2, got {x}")
    for nm, t in zip(("gamma", "beta", "mean", "var"), ts[1:]):
        if t.shape != (x.shape[1],) or t.dtype != "float32":
            raise _err(f"batch_norm {nm} must be float32[{x.shape[1]}], got {t}")
    return x


def _bn(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, g, b, m, v = xs
    shape = (1, -1) + (1,) * (x.ndim - 2)
    k = (g / np.sqrt(v + np.float32(at["epsilon"]))).astype(np.float32)
    return ((x - m.reshape(shape)) * k.reshape(shape) + b.reshape(shape)).astype(np.float32)


register("batch_norm", "elemwise", (5, 5), {"epsilon": 1e-5})((_bn_infer, _bn))
