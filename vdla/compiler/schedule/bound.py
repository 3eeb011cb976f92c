"""Bound inference: which region of a producer each attached stage must compute.

:func:`sym_interval` evaluates an index expression over variables that range over
symbolic intervals (the consumer's loops inside the attach point), giving symbolic
``(lo, hi)`` bounds.  :func:`union_region` merges the regions read by several accesses.
"""

from __future__ import annotations

from typing import Any

from ..tir import dtypes
from ..tir.arith import equal
from ..tir.nodes import BinOp, Cast, Expr, IntImm, Select, Var, make_const
from ..tir.passes.simplify import simplify_expr

Interval = tuple[Expr, Expr]


def _point(e: Expr) -> Interval:
    return (e, e)


def _is_point(iv: Interval) -> bool:
    return iv[0] is iv[1] or equal(iv[0], iv[1])


def sym_interval(e: Expr, relax: dict[Var, Interval]) -> Interval | None:
    """Symbolic bounds of integer expression ``e`` when each var in ``relax`` ranges over its interval.

    Returns None when the bounds cannot be expressed (e.g. data-dependent indexing).
    """
    if isinstance(e, IntImm):
        return _point(e)
    if isinstance(e, Var):
        return relax.get(e, _point(e))
    if isinstance(e, Cast):
        if (
            dtypes.is_int(e.dtype)
            and dtypes.is_int(e.value.dtype)
            and dtypes.bits(e.dtype) >= dtypes.bits(e.value.dtype)
        ):
            r = sym_interval(e.value, relax)
            if r is None:
                return None
            return (Cast(e.dtype, r[0]), Cast(e.dtype, r[1])) if not _is_point(r) else _point(Cast(e.dtype, r[0]))
        return None
    if isinstance(e, BinOp):
        a = sym_interval(e.a, relax)
        b = sym_interval(e.b, relax)
        if a is None or b is None:
            return None
        dt = e.dtype
        if _is_point(a) and _is_point(b):
            return _point(BinOp(e.op, a[0], b[0], dt))
        if e.op == "add":
            return (BinOp("add", a[0], b[0], dt), BinOp("add", a[1], b[1], dt))
        if e.op == "sub":
            return (BinOp("sub", a[0], b[1], dt), BinOp("sub", a[1], b[0], dt))
        if e.op == "mul":
            for x, y in ((a, b), (b, a)):
                if _is_point(y):
                    c = simplify_expr(y[0])
                    if isinstance(c, IntImm):
                        if c.value >= 0:
                            return (BinOp("mul", x[0], c, dt), BinOp("mul", x[1], c, dt))
                        return (BinOp("mul", x[1], c, dt), BinOp("mul", x[0], c, dt))
            return None
        if e.op in ("min", "max"):
            return (BinOp(e.op, a[0], b[0], dt), BinOp(e.op, a[1], b[1], dt))
        if e.op in ("floordiv", "floormod") and _is_point(b):
            c = simplify_expr(b[0])
            if isinstance(c, IntImm) and c.value > 0:
                if e.op == "floordiv":
                    return (BinOp("floordiv", a[0], c, dt), BinOp("floordiv", a[1], c, dt))
                return (make_const(0, dt), make_const(c.value - 1, dt))
        return None
    if isinstance(e, Select):
        t = sym_interval(e.t, relax)
        f = sym_interval(e.f, relax)
        if t is None or f is None:
            return None
        return union(t, f)
    return None


def union(a: Interval, b: Interval) -> Interval:
    """Smallest interval containing both (symbolic min/max where the order is unknown)."""
    lo = simplify_expr(BinOp("min", a[0], b[0], a[0].dtype))
    hi = simplify_expr(BinOp("max", a[1], b[1], a[1].dtype))
    d_lo = simplify_expr(BinOp("sub", a[0], b[0], a[0].dtype))
    if isinstance(d_lo, IntImm):
        lo = a[0] if d_lo.value <= 0 else b[0]
    d_hi = simplify_expr(BinOp("sub", a[1], b[1], a[1].dtype))
    if isinstance(d_hi, IntImm):
        hi = a[1] if d_hi.value >= 0 else b[1]
    return (lo, hi)


def region_of(reads: list[list[Expr]], relax: dict[Var, Interval], ndim: int) -> list[Interval | None]:
    """Per dimension, the union of the intervals of the read indices (None where unknown)."""
    out: list[Any] = [None] * ndim
    known = [True] * ndim
    for idx in reads:
        for d, x in enumerate(idx):
            if not known[d]:
                continue
            r = sym_interval(x, relax)
            if r is None:
                known[d] = False
                out[d] = None
                continue
            r = (simplify_expr(r[0]), simplify_expr(r[1]))
            out[d] = r if out[d] is None else union(out[d], r)
    return out
