"""Resampling (TVM's ``topi.image.resize``): nearest and multi-linear resize of any axes to a
static shape, with ONNX Resize's coordinate transformations computed as onnxruntime does
(float32, in the same order of operations), so that nearest indices agree exactly.

:func:`source_coords` is the one formula for both numpy (the graph's reference semantics)
and tensor expressions (the kernel). An axis whose index map is the identity is read as it
is; the others are resolved per output element (nearest: one index; linear: two taps).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE, const_shape

__all__ = ["resize", "source_coords"]

_F = np.float32


def _coords(mode: str, x: Any, out: int, inp: int, scale: float, c: Callable[[float], Any]) -> Any:
    """The float32 source coordinate of output coordinate ``x`` (numpy array or expression)."""
    s, half = c(float(_F(scale))), c(0.5)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and out > 1):
        return (x + half) / s - half
    if mode in ("pytorch_half_pixel", "align_corners") and out == 1:
        return x * c(0.0)
    if mode == "align_corners":
        return x * c(float(inp - 1)) / c(float(out - 1))
    if mode == "asymmetric":
        return x / s
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / s
    if mode == "half_pixel_symmetric":
        adjustment = _F(out) / (_F(scale) * _F(inp))
        offset = _F(inp) / _F(2) * (_F(1) - adjustment)
        return c(float(offset)) + (x + half) / s - half
    raise ValueError(f"resize: coordinate transformation {mode!r}")


def source_coords(mode: str, out: int, inp: int, scale: float) -> np.ndarray:
    """The float32 source coordinate of each output index along one axis (onnxruntime's formulas)."""
    return np.asarray(_coords(mode, np.arange(out, dtype=_F), out, inp, scale, _F), _F)


def _nearest(cf: Expr, mode: str, scale: float, inp: int) -> Expr:
    """Nearest source index of a float32 coordinate, clamped into ``[0, inp)``. Rounding is
    ``floor(c)`` plus one where the fraction passes one half (exact, unlike ``floor(c + 0.5)``)."""
    fl = te.floor(cf)
    if mode in ("round_prefer_floor", "round_prefer_ceil"):
        frac = cf - fl
        half = te.const(0.5, "float32")
        up = frac > half if mode == "round_prefer_floor" else frac >= half
        i = fl.astype("int32") + te.select(up, te.const(1, "int32"), te.const(0, "int32"))
    elif mode == "ceil" or (mode == "simple" and scale < 1):
        i = te.ceil(cf).astype("int32")
    elif mode in ("floor", "simple"):  # simple enlarging truncates: the same as floor once clamped at 0
        i = fl.astype("int32")
    else:
        raise ValueError(f"resize: nearest_mode {mode!r}")
    return te.min(te.max(i, 0), inp - 1)


def _identity(mode: str, out: int, inp: int, scale: float) -> bool:
    """An axis read as it is: scale 1 (onnxruntime skips its coordinate transformation), or an index map
    that is the identity anyway."""
    if out != inp:
        return False
    if float(_F(scale)) == 1.0:
        return True
    c = source_coords(mode, out, inp, scale)
    return bool(np.array_equal(c, np.arange(out, dtype=_F)))  # integer coordinates: every rounding keeps them


def resize(x: te.Tensor, sizes: Sequence[int], scales: Sequence[float], mode: str = "nearest",
           coord_mode: str = "half_pixel", nearest_mode: str = "round_prefer_floor") -> te.Tensor:
    """``x`` resampled to ``sizes`` (``scales``: what the coordinate formulas divide by, per axis)."""
    shape = const_shape(x)
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) != len(shape) or len(scales) != len(shape) or mode not in ("nearest", "linear"):
        raise ValueError(f"resize: sizes {sizes} / scales {tuple(scales)} for shape {shape}, mode {mode!r}")
    moved = [a for a in range(len(shape)) if not _identity(coord_mode, sizes[a], shape[a], scales[a])]
    f32 = lambda v: te.const(v, "float32")  # noqa: E731

    def coord(a: int, i: Expr) -> Expr:
        return _coords(coord_mode, i.astype("float32"), sizes[a], shape[a], scales[a], f32)

    def f(*i: Expr) -> Expr:
        if mode == "nearest":
            idx = list(i)
            for a in moved:
                idx[a] = _nearest(coord(a, i[a]), nearest_mode, scales[a], shape[a])
            return x[tuple(idx)]
        taps = []  # per moved axis: ((index, weight), (index, weight))
        for a in moved:
            n = shape[a]
            cf = te.min(te.max(coord(a, i[a]), f32(0.0)), f32(float(n - 1)))
            i0 = te.min(te.floor(cf).astype("int32"), n - 1)
            i1 = te.min(i0 + 1, n - 1)
            w1 = cf - i0.astype("float32")
            taps.append(((i0, f32(1.0) - w1), (i1, w1)))
        acc = None
        for corner in itertools.product(*taps):
            idx = list(i)
            w = None
            for a, (j, wj) in zip(moved, corner):
                idx[a] = j
                w = wj if w is None else w * wj
            term = x[tuple(idx)] if w is None else x[tuple(idx)] * w
            acc = term if acc is None else acc + term
        return acc

    return te.compute(sizes, f, name="resize", tag=INJECTIVE)
