"""Indexing and data movement beyond concat/transpose (TVM's ``topi.strided_slice``, ``take``,
``gather``, ``where``, ``argmax``, ``scatter_nd``, ``nn.pad`` / ``mirror_pad``):

* :func:`strided_slice` (Python slice semantics per axis), :func:`pad_nd` (constant, reflect
  or edge, negative pads crop), :func:`take` (constant indices, folded into the index
  arithmetic), :func:`gather` (run-time int32 indices), :func:`where`, :func:`compare` and
  :func:`logic` (uint8 0/1 conditions): injective, ``schedule_injective`` runs them;
* :func:`argreduce` (argmax / argmin: a max then the first or last index reaching it) and
  :func:`scatter_nd` (per output element, the last update whose index tuple points at it):
  reductions, ``schedule_reduce`` runs them (the reductions computed per output element).

Run-time indices are clamped into the axis (memory safety; the graph's numpy semantics
raise on an index out of range instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import te
from ..tir.nodes import Expr, convert
from .elemwise import _bcast_read, broadcast_shape
from .util import INJECTIVE, const_shape, ravel, slice_range, unravel

__all__ = ["strided_slice", "pad_nd", "take", "gather", "where", "compare", "logic", "argreduce", "scatter_nd",
           "index_table"]


def strided_slice(x: te.Tensor, begin: Sequence[int], end: Sequence[int], step: Sequence[int]) -> te.Tensor:
    """``x[b0:e0:s0, b1:e1:s1, ...]`` (one begin, end and step per axis)."""
    shape = const_shape(x)
    if not len(begin) == len(end) == len(step) == len(shape):
        raise ValueError(f"strided_slice: begin {begin}, end {end} and step {step} need {len(shape)} values")
    rs = [slice_range(b, e, s, d) for b, e, s, d in zip(begin, end, step, shape)]
    out = tuple(len(r) for r in rs)
    starts = [r.start if len(r) else 0 for r in rs]

    def f(*i: Expr) -> Expr:
        return x[tuple(ii if (st == 0 and s == 1) else ii * s + st for ii, st, s in zip(i, starts, step))]

    return te.compute(out, f, name="strided_slice", tag=INJECTIVE)


def pad_nd(x: te.Tensor, pads: Sequence[int], mode: str = "constant", value: float = 0.0) -> te.Tensor:
    """ONNX Pad: ``pads`` is every axis's begin then every axis's end; negative pads crop first;
    ``mode`` constant (``value``), reflect (mirror without the edge) or edge (repeat it)."""
    shape = const_shape(x)
    r = len(shape)
    if len(pads) != 2 * r or mode not in ("constant", "reflect", "edge"):
        raise ValueError(f"pad_nd: pads {pads} (need {2 * r}) or mode {mode!r} (constant, reflect, edge)")
    geo = []  # per axis: (crop at the start, extent after cropping, pad at the start, pad at the end)
    for a, d in enumerate(shape):
        lo, hi = int(pads[a]), int(pads[a + r])
        c_lo, c_hi = max(0, -lo), max(0, -hi)
        geo.append((c_lo, d - c_lo - c_hi, max(0, lo), max(0, hi)))
    out = tuple(dc + p_lo + p_hi for _, dc, p_lo, p_hi in geo)
    fill = te.const(value, x.dtype)

    def f(*i: Expr) -> Expr:
        src, inside = [], []
        for ii, (c_lo, dc, p_lo, p_hi) in zip(i, geo):
            j = ii - p_lo if p_lo else ii
            if mode == "constant":
                if p_lo or p_hi:
                    inside += [j >= 0, j < dc]
            elif mode == "edge":
                if p_lo or p_hi:
                    j = te.min(te.max(j, 0), dc - 1)
            elif dc > 1 and (p_lo or p_hi):  # reflect: -j before the start, 2(dc-1)-j past the end
                j = _within(te.select(j < 0, -j, te.select(j >= dc, 2 * (dc - 1) - j, j)), dc)
            elif p_lo or p_hi:
                j = convert(0)
            src.append(j + c_lo if c_lo else j)
        if inside:  # the fill outside; the input is read only inside (if_then_else is lazy)
            return te.if_then_else(te.all(*inside), x[tuple(src)], fill)
        return x[tuple(src)]

    return te.compute(out, f, name="pad_nd", tag=f"{INJECTIVE},pad")


def index_table(p: Expr, values: Sequence[int]) -> Expr:
    """The integer ``values[p]`` as arithmetic on ``p``: runs of equal steps are ``v0 + (p - k0) * step``,
    chosen between by a balanced tree of comparisons (constant indices without a constant table)."""
    vals = [int(v) for v in values]
    if not vals:
        return convert(0)
    runs: list[tuple[int, int, int]] = []  # (first position, first value, step)
    k = 0
    while k < len(vals):
        step = vals[k + 1] - vals[k] if k + 1 < len(vals) else 0
        e = k + 1
        while e < len(vals) and vals[e] - vals[e - 1] == step:
            e += 1
        runs.append((k, vals[k], step))
        k = e

    def tree(lo: int, hi: int) -> Expr:
        if hi - lo == 1:
            k0, v0, st = runs[lo]
            if st == 0:
                return convert(v0)
            return (p - k0) * st + v0 if k0 else p * st + v0
        mid = (lo + hi) // 2
        return te.select(p < runs[mid][0], tree(lo, mid), tree(mid, hi))

    return tree(0, len(runs))


def take(x: te.Tensor, indices: Sequence[int], ishape: Sequence[int], axis: int = 0) -> te.Tensor:
    """``numpy.take(x, indices.reshape(ishape), axis)`` for constant ``indices`` (negative ones count
    from the end)."""
    shape = const_shape(x)
    a = axis % len(shape)
    n = shape[a]
    vals = [int(v) % n for v in indices]
    ishape = tuple(int(s) for s in ishape)
    out = shape[:a] + ishape + shape[a + 1:]
    q = len(ishape)

    def f(*i: Expr) -> Expr:
        j = _within(index_table(ravel(i[a:a + q], ishape), vals), n)
        return x[tuple(i[:a]) + (j,) + tuple(i[a + q:])]

    return te.compute(out, f, name="take", tag=INJECTIVE)


def _within(v: Expr, n: int) -> Expr:
    """``v`` clamped into ``[0, n)``: a no-op on an index already there, which the bounds check
    (interval arithmetic, blind to the selects' conditions) then sees in range."""
    return te.min(te.max(v, 0), n - 1)


def _clamped(v: Expr, n: int) -> Expr:
    """A run-time index: negative counts from the end, then clamped into ``[0, n)``."""
    v = convert(v)
    if v.dtype != "int32":
        v = v.astype("int32")
    return _within(te.select(v < 0, v + n, v), n)


def gather(x: te.Tensor, indices: te.Tensor, axis: int = 0) -> te.Tensor:
    """``numpy.take(x, indices, axis)`` with run-time integer ``indices`` (an embedding lookup)."""
    shape = const_shape(x)
    a = axis % len(shape)
    ishape = const_shape(indices)
    q = len(ishape)
    out = shape[:a] + ishape + shape[a + 1:]

    def f(*i: Expr) -> Expr:
        j = _clamped(indices[tuple(i[a:a + q])], shape[a])
        return x[tuple(i[:a]) + (j,) + tuple(i[a + q:])]

    return te.compute(out, f, name="gather", tag=INJECTIVE)


def where(cond: te.Tensor, x: te.Tensor, y: te.Tensor) -> te.Tensor:
    """``cond ? x : y`` element-wise (a non-zero condition is true), all three broadcast."""
    shape = broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape)

    def f(*i: Expr) -> Expr:
        c = _bcast_read(cond, shape, i)
        return te.select(c != te.const(0, cond.dtype), _bcast_read(x, shape, i), _bcast_read(y, shape, i))

    return te.compute(tuple(shape), f, name="where", tag=INJECTIVE)


_COMPARE = {"equal": "__eq__", "less": "__lt__", "less_equal": "__le__", "greater": "__gt__",
            "greater_equal": "__ge__"}


def compare(op: str, a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """``a OP b`` (``op``: equal, less, less_equal, greater, greater_equal) as uint8 0/1, broadcast."""
    shape = broadcast_shape(a.shape, b.shape)
    meth = _COMPARE[op]

    def f(*i: Expr) -> Expr:
        return getattr(_bcast_read(a, shape, i), meth)(_bcast_read(b, shape, i)).astype("uint8")

    return te.compute(tuple(shape), f, name=op, tag=INJECTIVE)


def logic(op: str, *xs: te.Tensor) -> te.Tensor:
    """``logical_not`` / ``logical_and`` / ``logical_or`` of uint8 conditions, as uint8 0/1."""
    shape = list(xs[0].shape)
    for t in xs[1:]:
        shape = broadcast_shape(shape, t.shape)

    def f(*i: Expr) -> Expr:
        v = [_bcast_read(t, shape, i) != te.const(0, t.dtype) for t in xs]
        if op == "logical_not":
            e = _bcast_read(xs[0], shape, i) == te.const(0, xs[0].dtype)
        elif op == "logical_and":
            e = te.all(*v)
        elif op == "logical_or":
            e = te.any(*v)
        else:
            raise ValueError(f"logic: op {op!r} (logical_not, logical_and, logical_or)")
        return e.astype("uint8")

    return te.compute(tuple(shape), f, name=op, tag=INJECTIVE)


def argreduce(x: te.Tensor, kind: str, axis: int, keepdims: bool = True, select_last_index: bool = False) -> te.Tensor:
    """int32 index of the max (``kind="argmax"``) or min along ``axis``: the first one reaching it
    (the last with ``select_last_index``). Two reductions per output: the extreme, then the index."""
    shape = const_shape(x)
    a = axis % len(shape)
    n = shape[a]
    out = tuple(1 if d == a else s for d, s in enumerate(shape)) if keepdims else shape[:a] + shape[a + 1:]

    def src(i: Sequence[Expr], r: Expr) -> tuple[Expr, ...]:
        rest = list(i[:a]) + list(i[a + 1:]) if keepdims else list(i)
        return tuple(rest[:a]) + (r,) + tuple(rest[a:])

    r1 = te.reduce_axis((0, n), name="r_ext")
    fn = te.max if kind == "argmax" else te.min
    ext = te.compute(out, lambda *i: fn(x[src(i, r1)], axis=r1), name=f"{kind}_value", tag="reduce")
    r2 = te.reduce_axis((0, n), name="r_idx")

    def index(*i: Expr) -> Expr:
        hit = x[src(i, r2)] == ext[i]
        if select_last_index:
            return te.max(te.select(hit, r2.var, te.const(-1, "int32")), axis=r2)
        return te.min(te.select(hit, r2.var, te.const(n, "int32")), axis=r2)

    return te.compute(out, index, name=kind, tag="reduce")


def scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor) -> te.Tensor:
    """ONNX ScatterND (no reduction): ``data`` with ``updates[k]`` written at index tuple
    ``indices[k]``; of duplicate tuples the last update wins (numpy's assignment order)."""
    dshape = const_shape(data)
    ishape = const_shape(indices)
    q = ishape[-1]
    lead = ishape[:-1]
    count = math.prod(lead)
    r = te.reduce_axis((0, count), name="r_upd")

    def last_hit(*i: Expr) -> Expr:
        k = unravel(r.var, lead) if lead else []
        hit = te.all(*[_clamped(indices[tuple(k) + (convert(j),)], dshape[j]) == i[j] for j in range(q)])
        return te.max(te.select(hit, r.var, te.const(-1, "int32")), axis=r)

    which = te.compute(dshape, last_hit, name="scatter_nd_which", tag="reduce")

    def f(*i: Expr) -> Expr:
        w = which[i]
        k = unravel(te.max(w, 0), lead) if lead else []
        return te.if_then_else(w >= 0, updates[tuple(k) + tuple(i[q:])], data[i])

    return te.compute(dshape, f, name="scatter_nd", tag=INJECTIVE)
