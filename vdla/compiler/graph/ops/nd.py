"""Convolution and pooling of any spatial rank (1-D, 2-D, 3-D ...) for what the 2-D
operators of :mod:`.nn` / :mod:`.pooling` do not cover: 3-D (and dilated, grouped) conv and
transposed conv, and pooling with dilations, ``ceil_mode`` on average pools, Lp pooling.

The ONNX importer prefers the 2-D operators (which llvm builds and VDLA runs; a 1-D conv
becomes a 2-D one of height 1) and emits these only where those cannot express the node.
Attributes are per-axis tuples: ``pads`` is all begins then all ends (ONNX's order); a
pool's ``ceil_extra`` is end padding that ``ceil_mode`` adds, which never counts as a
window element. Each op registers itself (:func:`.registry.register`) when imported.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...topi.util import conv_out
from ..ir import TensorType
from .nn import _check_bias, _finish, _mm_dtype, exact_matmul
from .registry import _REQUIRED, _err, register

__all__ = ["windows_nd"]


def _per_axis(at: dict[str, Any], nd: int, op: str) -> tuple[tuple[int, ...], ...]:
    out = []
    for key, default in (("stride", 1), ("dilations", 1)):
        v = tuple(at[key]) if at[key] is not None else (default,) * nd
        if len(v) != nd or min(v) < 1:
            raise _err(f"{op}: {key} {v} must be {nd} positive values")
        out.append(v)
    p = tuple(at["pads"]) if at["pads"] is not None else (0,) * (2 * nd)
    if len(p) != 2 * nd or min(p) < 0:
        raise _err(f"{op}: pads {p} must be {2 * nd} non-negative values (begins, then ends)")
    out.append(p)
    return tuple(out)


def windows_nd(x: np.ndarray, kernel, stride, dilation, pads, pad_value: Any = 0) -> np.ndarray:
    """(N, C, *out, *kernel) view of the padded input's (dilated) sliding windows."""
    nd = len(kernel)
    if any(pads):
        x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)], constant_values=pad_value)
    ext = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation))
    v = sliding_window_view(x, ext, axis=tuple(range(2, 2 + nd)))
    sl = [slice(None), slice(None)]
    for i in range(nd):
        o = (x.shape[2 + i] - ext[i]) // stride[i] + 1
        sl.append(slice(0, (o - 1) * stride[i] + 1, stride[i]))
    sl += [slice(None, None, d) for d in dilation]
    return v[tuple(sl)]


# -- convolution -----------------------------------------------------------------------

_CONV = {"stride": None, "pads": None, "dilations": None, "groups": 1}


def _conv_nd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    nd = len(x.shape) - 2
    if nd < 1 or len(w.shape) != nd + 2:
        raise _err(f"conv_nd needs N,C,spatial... data and a weight of the same rank, got {x} and {w}")
    g = at["groups"]
    c, o = x.shape[1], w.shape[0]
    if g < 1 or c % g or o % g or w.shape[1] * g != c:
        raise _err(f"conv_nd: {c} input channels, weight {w.shape} and groups={g} do not match")
    s, d, p = _per_axis(at, nd, "conv_nd")
    outs = tuple(conv_out(x.shape[2 + i], w.shape[2 + i], s[i], p[i], p[i + nd], d[i]) for i in range(nd))
    if min(outs) <= 0:
        raise _err(f"conv_nd: input {x.shape[2:]} is smaller than the kernel {w.shape[2:]}")
    out = _mm_dtype(x.dtype, w.dtype, "conv_nd")
    _check_bias(ts, o, out, "conv_nd")
    return TensorType((x.shape[0], o) + outs, out)


def _conv_nd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    nd = x.ndim - 2
    s, d, p = _per_axis(at, nd, "conv_nd")
    g = at["groups"]
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    win = windows_nd(x, k, s, d, p)  # n c *out *k
    outs = win.shape[2 : 2 + nd]
    m, kk = int(np.prod(outs)), int(np.prod(k))
    cols = win.reshape((n, g, cg) + outs + k)
    cols = np.moveaxis(cols, 2, 2 + nd).reshape(n, g, m, cg * kk).transpose(1, 0, 2, 3).reshape(g, n * m, cg * kk)
    wm = w.reshape(g, o // g, cg * kk).transpose(0, 2, 1)
    acc = exact_matmul(cols, wm)  # g, n*m, og
    acc = acc.reshape(g, n, m, o // g).transpose(1, 0, 3, 2).reshape((n, o) + outs)
    if len(xs) == 3:
        acc = acc + xs[2].reshape((1, -1) + (1,) * nd).astype(acc.dtype)
    return _finish(acc, "int32" if x.dtype != np.float32 else "float32")


register("conv_nd", "complex", (2, 3), dict(_CONV))((_conv_nd_infer, _conv_nd))


def _convt_nd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x, w = ts[0], ts[1]
    nd = len(x.shape) - 2
    if nd < 1 or len(w.shape) != nd + 2 or w.shape[0] != x.shape[1]:
        raise _err(f"conv_transpose_nd needs data N,C,... and a weight C,O/groups,... of the same rank, got {x} and {w}")
    g = at["groups"]
    if g < 1 or x.shape[1] % g:
        raise _err(f"conv_transpose_nd: {x.shape[1]} channels do not split into {g} groups")
    s, d, p = _per_axis(at, nd, "conv_transpose_nd")
    op = tuple(at["out_pad"]) if at["out_pad"] is not None else (0,) * nd
    if len(op) != nd or any(not 0 <= op[i] < max(s[i], d[i]) for i in range(nd)):
        raise _err(f"conv_transpose_nd: out_pad {op} must be below the strides or dilations")
    outs = tuple(
        (x.shape[2 + i] - 1) * s[i] + (w.shape[2 + i] - 1) * d[i] + 1 + op[i] - p[i] - p[i + nd] for i in range(nd)
    )
    if min(outs) <= 0:
        raise _err("conv_transpose_nd: padding leaves an empty output")
    o = w.shape[1] * g
    out = _mm_dtype(x.dtype, w.dtype, "conv_transpose_nd")
    _check_bias(ts, o, out, "conv_transpose_nd")
    return TensorType((x.shape[0], o) + outs, out)


def _convt_nd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x, w = xs[0], xs[1]
    nd = x.ndim - 2
    s, d, p = _per_axis(at, nd, "conv_transpose_nd")
    op = tuple(at["out_pad"]) if at["out_pad"] is not None else (0,) * nd
    g = at["groups"]
    n, c = x.shape[:2]
    sp = x.shape[2:]
    og, k = w.shape[1], w.shape[2:]
    full_sz = tuple((sp[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + op[i] for i in range(nd))
    full = None
    cg = c // g
    for gi in range(g):
        xg = np.moveaxis(x[:, gi * cg : (gi + 1) * cg], 1, -1).reshape(-1, cg)
        y = exact_matmul(xg, w[gi * cg : (gi + 1) * cg].reshape(cg, -1))  # (n*sp, og*k)
        y = y.reshape((n,) + sp + (og,) + k)
        if full is None:
            full = np.zeros((n, g * og) + full_sz, y.dtype)
        for taps in itertools.product(*(range(kk) for kk in k)):
            dst = tuple(slice(t * d[i], t * d[i] + (sp[i] - 1) * s[i] + 1, s[i]) for i, t in enumerate(taps))
            v = y[(slice(None),) + (slice(None),) * nd + (slice(None),) + taps]  # n *sp og
            full[(slice(None), slice(gi * og, (gi + 1) * og)) + dst] += np.moveaxis(v, -1, 1)
    assert full is not None
    crop = tuple(slice(p[i], full_sz[i] - p[i + nd]) for i in range(nd))
    acc = full[(slice(None), slice(None)) + crop]
    if len(xs) == 3:
        acc = acc + xs[2].reshape((1, -1) + (1,) * nd).astype(acc.dtype)
    return _finish(acc, "int32" if x.dtype != np.float32 else "float32")


register("conv_transpose_nd", "complex", (2, 3), {**_CONV, "out_pad": None})((_convt_nd_infer, _convt_nd))


# -- pooling ---------------------------------------------------------------------------

_POOL = {
    "mode": _REQUIRED,  # max, avg or lp
    "kernel_shape": _REQUIRED,
    "stride": None,
    "pads": None,
    "dilations": None,
    "ceil_extra": None,
    "count_include_pad": 0,
    "p": 2,
}


def _pool_geometry(at: dict[str, Any], shape: tuple[int, ...]):
    nd = len(shape) - 2
    k = tuple(at["kernel_shape"])
    if len(k) != nd or min(k) < 1:
        raise _err(f"pool_nd: kernel_shape {k} must be {nd} positive values for input shape {shape}")
    s, d, p = _per_axis(at, nd, "pool_nd")
    ex = tuple(at["ceil_extra"]) if at["ceil_extra"] is not None else (0,) * nd
    return nd, k, s, d, p, ex


def _pool_nd_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    x = ts[0]
    if at["mode"] not in ("max", "avg", "lp"):
        raise _err(f"pool_nd: mode {at['mode']!r} (max, avg or lp)")
    if len(x.shape) < 3 or (at["mode"] != "max" and x.dtype != "float32"):
        raise _err(f"pool_nd ({at['mode']}) needs N,C,spatial... data (float32 unless max), got {x}")
    nd, k, s, d, p, ex = _pool_geometry(at, x.shape)
    outs = tuple(conv_out(x.shape[2 + i], k[i], s[i], p[i], p[i + nd] + ex[i], d[i]) for i in range(nd))
    if min(outs) <= 0:
        raise _err(f"pool_nd: input {x.shape[2:]} is smaller than the kernel {k}")
    return TensorType(x.shape[:2] + outs, x.dtype)


def _pool_nd(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    x = xs[0]
    nd, k, s, d, p, ex = _pool_geometry(at, x.shape)
    pads = p[:nd] + tuple(p[nd + i] + ex[i] for i in range(nd))
    axes = tuple(range(2 + nd, 2 + 2 * nd))
    if at["mode"] == "max":
        low = -np.inf if x.dtype == np.float32 else np.iinfo(x.dtype).min
        return windows_nd(x, k, s, d, pads, pad_value=low).max(axis=axes)
    if at["mode"] == "lp":
        pw = float(at["p"])
        acc = (np.abs(windows_nd(x.astype(np.float64), k, s, d, pads)) ** pw).sum(axis=axes)
        return (acc ** (1.0 / pw)).astype(np.float32)
    total = windows_nd(x, k, s, d, pads).sum(axis=axes, dtype=np.float64)
    # the divisor counts the input's elements, plus the explicit pads with count_include_pad,
    # never the ceil_mode extension
    ones = np.ones((1, 1) + x.shape[2:], np.float64)
    if at["count_include_pad"]:
        ones = np.pad(ones, [(0, 0), (0, 0)] + [(p[i], p[i + nd]) for i in range(nd)], constant_values=1.0)
        cpads = (0,) * nd + ex
    else:
        cpads = pads
    cnt = windows_nd(ones, k, s, d, cpads).sum(axis=axes)
    return (total / cnt).astype(np.float32)


register("pool_nd", "reduction", (1, 1), _POOL)((_pool_nd_infer, _pool_nd))
