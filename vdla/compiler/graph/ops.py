"""Operator definitions: attributes, shape/dtype inference and numpy semantics.

Each operator is an :class:`OpDef` with

* ``kind`` — the TVM paper's fusion class: ``"elemwise"`` (a one-to-one injective op),
  ``"injective"``, ``"reduction"``, ``"complex"`` (complex-out-fusable: conv, dense) or
  ``"opaque"``;
* ``attrs`` — the attribute names with defaults (others are rejected);
* ``infer(attrs, input_types) -> TensorType`` — shape inference with clear errors;
* ``compute(attrs, arrays) -> ndarray`` — the reference semantics (see :mod:`.reference`).

Integer semantics follow the accelerator: int8 x int8 products accumulate exactly in
int32 (wrapping at 32 bits, as VTA's ACC does); ``shift`` by ``n > 0`` adds ``2**(n-1)``
and shifts right arithmetically (rounding as VTA's requantise realisation); ``requantize``
is ``shift``, then ``clip``, then ``cast`` (truncating, as the ACC->OUT narrowing). Exact
integer convolutions run through float64 BLAS when every partial sum is below 2**53 and
through int64 otherwise (numpy has no integer BLAS).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .ir import DTYPES, Graph, GraphError, TensorType

__all__ = ["OpDef", "OPS", "get_op", "normalize_attrs", "register"]

Infer = Callable[[dict[str, Any], list[TensorType]], TensorType]
Compute = Callable[[dict[str, Any], list[np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    nin: tuple[int, int]
    attrs: dict[str, Any]
    infer: Infer
    compute: Compute


OPS: dict[str, OpDef] = {}
_REQUIRED = object()


def register(name: str, kind: str, nin: tuple[int, int], attrs: dict[str, Any] | None = None):
    def deco(pair: tuple[Infer, Compute]) -> tuple[Infer, Compute]:
        infer, compute = pair
        a = dict(attrs or {})

        def checked_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
            lo, hi = nin
            if not lo <= len(ts) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise GraphError(f"{name} takes {want} inputs, got {len(ts)}")
            return infer(at, ts)

        OPS[name] = OpDef(name, kind, nin, a, checked_infer, compute)
        return pair

    return deco


def get_op(op: str, node: str = "?") -> OpDef:
    if op not in OPS:
        raise GraphError(f"node {node!r}: unknown operator {op!r}")
    return OPS[op]


def _tuple(v: Any, n: int, what: str) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(x) for x in v)
    if len(t) != n:
        raise GraphError(f"attribute {what} needs {n} values, got {t}")
    return t


def normalize_attrs(op: str, attrs: dict[str, Any], node: str = "?") -> dict[str, Any]:
    """Fill defaults, reject unknown attributes, canonicalise tuples (strides, padding)."""
    d = get_op(op, node)
    for k in attrs:
        if k not in d.attrs:
            raise GraphError(
                f"node {node!r}: operator {op} has no attribute {k!r} (it has {', '.join(d.attrs) or 'none'})"
            )
    out: dict[str, Any] = {}
    for k, default in d.attrs.items():
        if k in attrs:
            v = attrs[k]
        elif default is _REQUIRED:
            raise GraphError(f"node {node!r}: operator {op} needs attribute {k!r}")
        else:
            v = default
        if k in ("strides", "dilation", "kernel", "output_padding") and v is not None:
            v = _tuple(v, 2, k)
        elif k == "padding" and v is not None:
            t = _tuple(v, 2, k) if isinstance(v, int) or len(v) == 2 else _tuple(v, 4, k)
            v = t if len(t) == 4 else (t[0], t[1], t[0], t[1])
        elif k == "shape" and v is not None:
            v = tuple(int(x) for x in v)
        elif isinstance(v, list):
            v = tuple(v)
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def _err(msg: str) -> GraphError:
    return GraphError(msg)


def _is_int(dtype: str) -> bool:
    return dtype in ("int8", "uint8", "int32")


def _wrap32(a: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of an int64 array to int32 (what 32-bit hardware adders do)."""
    return a.astype(np.int64).astype(np.int32)


# --------------------------------------------------------------------------- element-wise


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


# --------------------------------------------------------------------------- convolution


def conv_out(size: int, k: int, stride: int, lo: int, hi: int, dil: int = 1) -> int:
    return (size + lo + hi - ((k - 1) * dil + 1)) // stride + 1


def _mm_dtype(xd: str, wd: str, op: str) -> str:
    if xd == "float32" and wd == "float32":
        return "float32"
    if xd in ("int8", "uint8") and wd == "int8":
        return "int32"
    raise _err(f"{op}: unsupported operand dtypes {xd} x {wd} (float32 x float32 or int8/uint8 x int8)")


def _check_bias(ts: list[TensorType], channels: int, out: str, op: str) -> None:
    if len(ts) == 3:
        b = ts[2]
        if b.shape != (channels,) or b.dtype != out:
            raise _err(f"{op} bias must be {out}[{channels}], got {b}")


def _conv_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise _err(f"conv2d needs 4-D NCHW data and OIHW weight, got {x} and {w}")
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    g = at["groups"]
    if g < 1 or c % g or o % g or cg * g != c:
        raise _err(f"conv2d: {c} input channels, weight {w.shape} and groups={g} do not match")
    sh, sw = at["strides"]
    dh, dw = at["dilation"]
    pt, pl, pb, pr = at["padding"]
    if min(sh, sw, dh, dw) < 1 or min(pt, pl, pb, pr) < 0:
        raise _err(f"conv2d: bad strides {at['strides']}, dilation {at['dilation']} or padding {at['padding']}")
    oh, ow = conv_out(h, kh, sh, pt, pb, dh), conv_out(wd, kw, sw, pl, pr, dw)
    if oh <= 0 or ow <= 0:
        raise _err(f"conv2d: input {h}x{wd} is smaller than the kernel {kh}x{kw}")
    out = _mm_dtype(x.dtype, w.dtype, "conv2d")
    _check_bias(ts, o, out, "conv2d")
    return TensorType((n, o, oh, ow), out)


def windows(x: np.ndarray, kh: int, kw: int, strides, padding, dilation=(1, 1), pad_value: Any = 0) -> np.ndarray:
    """(N, C, OH, OW, KH, KW) view of the padded input's sliding windows."""
    pt, pl, pb, pr = padding
    if any(padding):
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_value)
    (sh, sw), (dh, dw) = strides, dilation
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    oh, ow = (x.shape[2] - eh) // sh + 1, (x.shape[3] - ew) // sw + 1
    v = sliding_window_view(x, (eh, ew), axis=(2, 3))
    return v[:, :, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for float32 (float32 BLAS) or integers (exact; result int64)."""
    if a.dtype == np.float32:
        return np.matmul(a, b)
    k = a.shape[-1]
    amax = int(np.abs(a).max(initial=0))
    bmax = int(np.abs(b).max(initial=0))
    if amax * bmax * k < 2**53:
        return np.rint(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def _finish(acc: np.ndarray, out_dtype: str) -> np.ndarray:
    return _wrap32(acc) if out_dtype == "int32" else acc.astype(np.float32, copy=False)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides, padding, dilation=(1, 1), groups: int = 1) -> np.ndarray:
    """Reference NCHW convolution (float32, or exact int64 for integer operands)."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    win = windows(x, kh, kw, strides, padding, dilation)  # n c oh ow kh kw
    oh, ow = win.shape[2:4]
    og = o // groups
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(groups, n * oh * ow, cg * kh * kw)
    wm = w.reshape(groups, og, cg * kh * kw).transpose(0, 2, 1)
    acc = exact_matmul(cols, wm)  # g, n*oh*ow, og
    return acc.reshape(groups, n, oh, ow, og).transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)


def _add_bias(acc: np.ndarray, xs: list[np.ndarray], axis: int = 1) -> np.ndarray:
    if len(xs) == 3:
        shape = [1] * acc.ndim
        shape[axis] = -1
        acc = acc + xs[2].reshape(shape).astype(acc.dtype)
    return acc


def _conv(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    acc = conv2d_nchw(x, w, at["strides"], at["padding"], at["dilation"], at["groups"])
    out = "int32" if x.dtype != np.float32 else "float32"
    return _finish(_add_bias(acc, xs), out)


_CONV_ATTRS = {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}
register("conv2d", "complex", (2, 3), _CONV_ATTRS)((_conv_infer, _conv))


def _convt_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise _err(f"conv2d_transpose needs 4-D NCHW data and IOHW weight, got {x} and {w}")
    n, c, h, wd = x.shape
    ci, o, kh, kw = w.shape
    if ci != c:
        raise _err(f"conv2d_transpose: weight {w.shape} expects {ci} input channels, data has {c}")
    sh, sw = at["strides"]
    pt, pl, pb, pr = at["padding"]
    oph, opw = at["output_padding"]
    if oph >= sh or opw >= sw or oph < 0 or opw < 0:
        raise _err(f"conv2d_transpose: output_padding {at['output_padding']} must be smaller than strides")
    oh = (h - 1) * sh + kh + oph - pt - pb
    ow = (wd - 1) * sw + kw + opw - pl - pr
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_transpose: padding leaves an empty output")
    out = _mm_dtype(x.dtype, w.dtype, "conv2d_transpose")
    _check_bias(ts, o, out, "conv2d_transpose")
    return TensorType((n, o, oh, ow), out)


def conv2d_transpose_nchw(x: np.ndarray, w: np.ndarray, strides, padding, output_padding=(0, 0)) -> np.ndarray:
    """Reference transposed convolution: each input pixel scatters ``x * w`` into the output."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    sh, sw = strides
    pt, pl, pb, pr = padding
    oph, opw = output_padding
    y = exact_matmul(x.transpose(0, 2, 3, 1).reshape(n * h * wd, c), w.reshape(c, o * kh * kw))
    y = y.reshape(n, h, wd, o, kh, kw).transpose(0, 3, 4, 5, 1, 2)  # n o kh kw h w
    fh, fw = (h - 1) * sh + kh + oph, (wd - 1) * sw + kw + opw
    full = np.zeros((n, o, fh, fw), dtype=y.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, :, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw] += y[:, :, i, j]
    return full[:, :, pt : fh - pb, pl : fw - pr]


def _convt(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    acc = conv2d_transpose_nchw(x, w, at["strides"], at["padding"], at["output_padding"])
    return _finish(_add_bias(acc, xs), "int32" if x.dtype != np.float32 else "float32")


register("conv2d_transpose", "complex", (2, 3), {"strides": (1, 1), "padding": (0, 0, 0, 0), "output_padding": (0, 0)})(
    (_convt_infer, _convt)
)


def _dense_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    if len(x.shape) != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
        raise _err(f"dense needs data[N,K] and weight[M,K], got {x} and {w}")
    out = _mm_dtype(x.dtype, w.dtype, "dense")
    _check_bias(ts, w.shape[0], out, "dense")
    return TensorType((x.shape[0], w.shape[0]), out)


def _dense(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    acc = exact_matmul(xs[0], xs[1].T)
    return _finish(_add_bias(acc, xs), "int32" if xs[0].dtype != np.float32 else "float32")


register("dense", "complex", (2, 3))((_dense_infer, _dense))


def _matmul_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    a, b = ts
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise _err(f"matmul needs [N,K] x [K,M], got {a} and {b}")
    return TensorType((a.shape[0], b.shape[1]), _mm_dtype(a.dtype, b.dtype, "matmul"))


def _matmul(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    return _finish(exact_matmul(xs[0], xs[1]), "int32" if xs[0].dtype != np.float32 else "float32")


register("matmul", "complex", (2, 2))((_matmul_infer, _matmul))


# --------------------------------------------------------------------------- pooling / reductions


def _pool_infer(op: str) -> Infer:
    def infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
        x = ts[0]
        if len(x.shape) != 4:
            raise _err(f"{op} needs 4-D NCHW data, got {x}")
        if op == "avg_pool2d" and x.dtype != "float32":
            raise _err(f"avg_pool2d needs a float32 input, got {x}; dequantize first")
        kh, kw = at["kernel"]
        sh, sw = at["strides"]
        pt, pl, pb, pr = at["padding"]
        if max(pt, pb) >= kh or max(pl, pr) >= kw:
            raise _err(f"{op}: padding {at['padding']} must be smaller than the kernel {at['kernel']}")
        oh, ow = conv_out(x.shape[2], kh, sh, pt, pb), conv_out(x.shape[3], kw, sw, pl, pr)
        if oh <= 0 or ow <= 0:
            raise _err(f"{op}: input {x.shape[2]}x{x.shape[3]} is smaller than the kernel {kh}x{kw}")
        return TensorType((x.shape[0], x.shape[1], oh, ow), x.dtype)

    return infer


def _maxpool(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    low = -np.inf if x.dtype == np.float32 else np.iinfo(x.dtype).min
    win = windows(x, *at["kernel"], at["strides"], at["padding"], pad_value=low)
    return win.max(axis=(4, 5))


def _avgpool(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    kh, kw = at["kernel"]
    s = windows(x, kh, kw, at["strides"], at["padding"]).sum(axis=(4, 5), dtype=np.float32)
    if at["count_include_pad"] or not any(at["padding"]):
        return (s / np.float32(kh * kw)).astype(np.float32)
    ones = np.ones((1, 1) + x.shape[2:], np.float32)
    cnt = windows(ones, kh, kw, at["strides"], at["padding"]).sum(axis=(4, 5))
    return (s / cnt).astype(np.float32)


_POOL = {"kernel": _REQUIRED, "strides": (1, 1), "padding": (0, 0, 0, 0)}
register("max_pool2d", "reduction", (1, 1), _POOL)((_pool_infer("max_pool2d"), _maxpool))
register("avg_pool2d", "reduction", (1, 1), {**_POOL, "count_include_pad": False})(
    (_pool_infer("avg_pool2d"), _avgpool)
)


def _gap_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if len(x.shape) != 4 or x.dtype != "float32":
        raise _err(f"global_avg_pool2d needs float32 NCHW data, got {x}")
    return TensorType(x.shape[:2] + (1, 1), "float32")


register("global_avg_pool2d", "reduction", (1, 1))(
    (_gap_infer, lambda at, xs: xs[0].mean(axis=(2, 3), keepdims=True, dtype=np.float32))
)


def _axis(axis: int, rank: int, op: str, extra: int = 0) -> int:
    if not -rank - extra <= axis < rank + extra:
        raise _err(f"{op}: axis {axis} out of range for rank {rank}")
    return axis % (rank + extra)


def _softmax_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    if ts[0].dtype != "float32":
        raise _err(f"softmax needs a float32 input, got {ts[0]}")
    _axis(at["axis"], len(ts[0].shape), "softmax")
    return ts[0]


def _softmax(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    e = np.exp(x - x.max(axis=at["axis"], keepdims=True))
    return (e / e.sum(axis=at["axis"], keepdims=True)).astype(np.float32)


register("softmax", "opaque", (1, 1), {"axis": -1})((_softmax_infer, _softmax))


# --------------------------------------------------------------------------- shape ops


def _flatten_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    s = ts[0].shape
    a = _axis(at["axis"], len(s), "flatten", extra=1)
    return TensorType((math.prod(s[:a]), math.prod(s[a:])), ts[0].dtype)


register("flatten", "injective", (1, 1), {"axis": 1})(
    (_flatten_infer, lambda at, xs: xs[0].reshape(_flatten_infer(at, [TensorType.of(xs[0])]).shape))
)


def reshape_target(src: Sequence[int], shape: Sequence[int], allowzero: bool = False) -> tuple[int, ...]:
    """Resolve ONNX-style 0 (copy) and -1 (infer) entries of a target shape."""
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= len(src):
                raise _err(f"reshape: 0 at position {i} but the input has rank {len(src)}")
            out.append(src[i])
        else:
            out.append(d)
    total = math.prod(src)
    if out.count(-1) > 1:
        raise _err(f"reshape: more than one -1 in {tuple(shape)}")
    if -1 in out:
        rest = math.prod(d for d in out if d != -1)
        if rest == 0 or total % rest:
            raise _err(f"reshape: cannot reshape {tuple(src)} to {tuple(shape)}")
        out[out.index(-1)] = total // rest
    if math.prod(out) != total or any(d < 0 for d in out):
        raise _err(f"reshape: cannot reshape {tuple(src)} ({total} elements) to {tuple(shape)}")
    return tuple(out)


def _reshape_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    return TensorType(reshape_target(ts[0].shape, at["shape"]), ts[0].dtype)


register("reshape", "injective", (1, 1), {"shape": _REQUIRED})(
    (_reshape_infer, lambda at, xs: xs[0].reshape(reshape_target(xs[0].shape, at["shape"])))
)


def _concat_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    r = len(ts[0].shape)
    a = _axis(at["axis"], r, "concat")
    for t in ts[1:]:
        if (
            t.dtype != ts[0].dtype
            or len(t.shape) != r
            or any(d != e for i, (d, e) in enumerate(zip(t.shape, ts[0].shape)) if i != a)
        ):
            raise _err(f"concat along axis {a}: {ts[0]} and {t} do not match")
    shape = list(ts[0].shape)
    shape[a] = sum(t.shape[a] for t in ts)
    return TensorType(tuple(shape), ts[0].dtype)


register("concat", "injective", (1, 1 << 16), {"axis": 1})(
    (_concat_infer, lambda at, xs: np.concatenate(xs, axis=at["axis"]))
)


# --------------------------------------------------------------------------- packed (VDLA) layouts


def _pack_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    from .layout import packed_shape

    s = ts[0].shape
    if len(s) not in (2, 4):
        raise _err(f"pack needs an NCHW or NC tensor, got {ts[0]}")
    return TensorType(packed_shape(s, at["batch"], at["block"]), ts[0].dtype)


def _pack(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    from .layout import pack_activation

    return pack_activation(xs[0], at["batch"], at["block"])


def _unpack_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    from .layout import packed_shape

    shape = at["shape"]
    s = ts[0].shape
    b, c = (s[-2], s[-1]) if len(s) in (4, 6) else (0, 0)
    if len(s) not in (4, 6) or packed_shape(shape, b, c) != s:
        raise _err(f"unpack: {ts[0]} is not a packed form of shape {shape}")
    return TensorType(shape, ts[0].dtype)


def _unpack(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    from .layout import unpack_activation

    return unpack_activation(xs[0], at["shape"])


register("pack", "injective", (1, 1), {"batch": _REQUIRED, "block": _REQUIRED})((_pack_infer, _pack))
register("unpack", "injective", (1, 1), {"shape": _REQUIRED})((_unpack_infer, _unpack))


def _conv_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    if len(x.shape) != 6 or len(w.shape) != 6:
        raise _err(f"conv2d_packed needs NCHW{{b}}n{{c}}c data and OIHW{{o}}o{{i}}i weight, got {x} and {w}")
    nb, cb, h, wd, b, ci = x.shape
    ob, wcb, kh, kw, co, wci = w.shape
    g = at.get("groups", 1)
    if cb != wcb * g or ci != wci:
        raise _err(f"conv2d_packed: data {x.shape} and weight {w.shape} disagree on input-channel blocks"
                   + (f" ({g} groups)" if g != 1 else ""))
    if g < 1 or ob % g:
        raise _err(f"conv2d_packed: {ob} output-channel blocks do not split into {g} groups")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"conv2d_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    (sh, sw), (pt, pl, pb, pr) = at["strides"], at["padding"]
    oh, ow = conv_out(h, kh, sh, pt, pb), conv_out(wd, kw, sw, pl, pr)
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_packed: input smaller than kernel")
    return TensorType((nb, ob, oh, ow, b, co), "int32")


def _to_nchw(x: np.ndarray) -> np.ndarray:
    """A packed ``(N/b, C/c, H, W, b, c)`` tensor as NCHW (channels and batch still padded)."""
    nb, cb, h, wd, b, c = x.shape
    return x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * c, h, wd)


def _from_nchw(acc: np.ndarray, batch: int, block: int) -> np.ndarray:
    n, c, h, wd = acc.shape
    return acc.reshape(n // batch, batch, c // block, block, h, wd).transpose(0, 2, 4, 5, 1, 3)


def _conv_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # Direct on the packed layout: window over H, W; contract over (C/c, KH, KW, c) per group.
    x, w = xs
    ob, wcb, kh, kw, co, wci = w.shape
    wn = w.transpose(0, 4, 1, 5, 2, 3).reshape(ob * co, wcb * wci, kh, kw)
    acc = conv2d_nchw(_to_nchw(x), wn, at["strides"], at["padding"], groups=at.get("groups", 1))
    return _wrap32(_from_nchw(acc, x.shape[4], co))


register("conv2d_packed", "complex", (2, 2), {"strides": (1, 1), "padding": (0, 0, 0, 0), "groups": 1})(
    (_conv_packed_infer, _conv_packed)
)


def _convt_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    (s, s2), pad, (k, k2) = at["strides"], at["padding"], at["kernel"]
    if len(x.shape) != 6 or len(w.shape) != 8:
        raise _err(f"conv2d_transpose_packed needs NCHW{{b}}n{{c}}c data and a per-phase packed weight, got {x} and {w}")
    if s != s2 or k != k2 or len(set(pad)) != 1:
        raise _err(f"conv2d_transpose_packed takes one stride, kernel size and padding, got {at}")
    nb, cb, h, wd, b, ci = x.shape
    jt = -(-k // s)
    if w.shape[:2] != (s, s) or w.shape[3] != cb or w.shape[4:6] != (jt, jt) or w.shape[7] != ci:
        raise _err(f"conv2d_transpose_packed: weight {w.shape} is not the per-phase packing (s, s, O/o, I/i, J, J, o, i) "
                   f"= ({s}, {s}, O/o, {cb}, {jt}, {jt}, o, {ci}) of a {k}x{k} stride-{s} kernel")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"conv2d_transpose_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    p = pad[0]
    oh, ow = (h - 1) * s - 2 * p + k, (wd - 1) * s - 2 * p + k
    if oh <= 0 or ow <= 0:
        raise _err("conv2d_transpose_packed: padding leaves an empty output")
    return TensorType((nb, w.shape[2], oh, ow, b, w.shape[6]), "int32")


def _convt_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    # The IOHW weight gathered back from its phases, then the scatter-form reference.
    from .layout import unpack_transpose_weight

    x, w = xs
    wt = unpack_transpose_weight(w, at["kernel"][0], at["padding"][0])
    acc = conv2d_transpose_nchw(_to_nchw(x), wt, at["strides"], at["padding"])
    return _wrap32(_from_nchw(acc, x.shape[4], w.shape[6]))


register("conv2d_transpose_packed", "complex", (2, 2), {"strides": (1, 1), "padding": (0, 0, 0, 0), "kernel": _REQUIRED})(
    (_convt_packed_infer, _convt_packed)
)


def _dense_packed_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts
    if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[1] != w.shape[1] or x.shape[3] != w.shape[3]:
        raise _err(f"dense_packed needs data[N/b,K/c,b,c] and weight[M/o,K/c,o,c], got {x} and {w}")
    if x.dtype not in ("int8", "uint8") or w.dtype != "int8":
        raise _err(f"dense_packed needs int8 operands, got {x.dtype} x {w.dtype}")
    return TensorType((x.shape[0], w.shape[0], x.shape[2], w.shape[2]), "int32")


def _dense_packed(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs
    nb, kb, b, ci = x.shape
    mb, _, co, _ = w.shape
    acc = exact_matmul(
        x.transpose(0, 2, 1, 3).reshape(nb * b, kb * ci), w.transpose(1, 3, 0, 2).reshape(kb * ci, mb * co)
    )
    return _wrap32(acc.reshape(nb, b, mb, co).transpose(0, 2, 1, 3))


register("dense_packed", "complex", (2, 2))((_dense_packed_infer, _dense_packed))


# --------------------------------------------------------------------------- fused groups


def _fused_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    body = at["body"]
    if not isinstance(body, Graph):
        raise _err("fused: attribute body must be a Graph")
    if len(body.inputs) != len(ts):
        raise _err(f"fused: body takes {len(body.inputs)} inputs, node gives {len(ts)}")
    for (nm, want), got in zip(body.inputs.items(), ts):
        if want != got:
            raise _err(f"fused: body input {nm!r} is {want}, node gives {got}")
    body.infer_types()
    if len(body.outputs) != 1:
        raise _err("fused: body must have exactly one output")
    return body.type_of(body.outputs[0])


def _fused(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    from .reference import run

    body = at["body"]
    return run(body, dict(zip(body.inputs, xs)), check=False)[0]


register("fused", "opaque", (0, 1 << 16), {"body": _REQUIRED, "pattern": "", "kind": "opaque"})((_fused_infer, _fused))


def op_kind(node_op: str, attrs: dict[str, Any] | None = None) -> str:
    """The fusion class of an op (a fused node has its anchor's class)."""
    if node_op == "fused" and attrs:
        return attrs.get("kind", "opaque")
    return OPS[node_op].kind
