"""Reducers: ``te.sum``, ``te.max``, ``te.min`` and ``te.comm_reducer`` for one's own.

A reducer applied to an expression and reduction axes gives a loop-IR ``Reduce``
node, the body of a reducing ``te.compute``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tir import dtypes
from ..tir.nodes import Expr, ExprOp, Reduce, Var, as_bool, binary, convert, make_const
from .operation import IterVar, TensorError


class CommReducer:
    """A commutative reducer: ``combine(x, y)`` and ``identity(dtype)``."""

    def __init__(self, fcombine: Callable[[Expr, Expr], Any], fidentity: Callable[[str], Any], name: str) -> None:
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name

    def combine(self, x: Expr, y: Expr) -> Expr:
        r = convert(self.fcombine(x, y))
        if r.dtype != x.dtype:
            r = r.astype(x.dtype)
        return r

    def identity(self, dtype: str) -> Expr:
        v = self.fidentity(dtype)
        e = convert(v) if isinstance(v, ExprOp) else make_const(v, dtype)
        return e.astype(dtype)

    def combine_tuple(self, xs: list[Expr], ys: list[Expr]) -> list[Expr]:
        """A tuple reducer's combination: ``fcombine(xs, ys)``, each value in its own dtype."""
        rs = self.fcombine(tuple(xs), tuple(ys))
        if not isinstance(rs, tuple | list) or len(rs) != len(xs):
            raise TensorError(f"reducer {self.name!r}: fcombine must return {len(xs)} values, got {rs!r}")
        out = []
        for r, x in zip(rs, xs, strict=True):
            e = convert(r)
            out.append(e if e.dtype == x.dtype else e.astype(x.dtype))
        return out

    def identity_tuple(self, dts: list[str]) -> list[Expr]:
        vs = self.fidentity(*dts)
        if not isinstance(vs, tuple | list) or len(vs) != len(dts):
            raise TensorError(f"reducer {self.name!r}: fidentity must return {len(dts)} values, got {vs!r}")
        return [(convert(v) if isinstance(v, ExprOp) else make_const(v, t)).astype(t) for v, t in zip(vs, dts,
                                                                                                    strict=True)]

    def _tuple_call(self, exprs: Any, axes: list[IterVar], where: Any) -> tuple[Expr, ...]:
        srcs = [convert(e) for e in exprs]
        cond = None if where is None else as_bool(where)
        return tuple(Reduce(self, s, axes, cond, None, s.dtype, k, srcs) for k, s in enumerate(srcs))

    def __call__(self, expr: Any, axis: Any = None, where: Any = None, init: Any = None) -> Any:
        """``reducer(expr, axis=k)``; ``reducer((e0, e1), axis=k)`` for a tuple reducer gives one
        reduction per value (a te.compute returning them has one output each)."""
        if isinstance(axis, Var) and self.name not in ("max", "min"):
            raise TensorError(
                f"te.{self.name}: axis {axis.name!r} is not a reduction axis; create it with te.reduce_axis"
            )
        if axis is not None and not isinstance(axis, IterVar | list | tuple):
            # te.max(a, b): combine two values directly
            both = binary("add", expr, axis)  # promotes the two operands to one dtype
            return self.combine(both.a, both.b)
        if axis is None:
            raise TensorError(f"te.{self.name}: 'axis' (a reduce_axis or a list of them) is required")
        axes = list(axis) if isinstance(axis, list | tuple) else [axis]
        if not axes:
            raise TensorError(f"te.{self.name}: empty axis list")
        for ax in axes:
            if not isinstance(ax, IterVar) or ax.iter_type != "reduce":
                raise TensorError(f"te.{self.name}: axis {ax!r} is not a reduction axis; create it with te.reduce_axis")
        if isinstance(expr, tuple | list):
            if init is not None:
                raise TensorError(f"te.{self.name}: init= is not supported for tuple reductions")
            return self._tuple_call(expr, axes, where)
        src = convert(expr)
        cond = None if where is None else as_bool(where)
        ini = None if init is None else convert(init).astype(src.dtype)
        return Reduce(self, src, axes, cond, ini, src.dtype)

    def __repr__(self) -> str:
        return f"CommReducer({self.name})"


def comm_reducer(
    fcombine: Callable[[Expr, Expr], Any], fidentity: Callable[[str], Any], name: str = "reduce"
) -> CommReducer:
    """Create a reducer from a combining function and an identity (a function of dtype)."""
    return CommReducer(fcombine, fidentity, name)


def _max2(a: Any, b: Any) -> Expr:
    return binary("max", a, b)


def _min2(a: Any, b: Any) -> Expr:
    return binary("min", a, b)


sum = comm_reducer(lambda x, y: x + y, lambda t: 0, name="sum")  # noqa: A001
max = comm_reducer(_max2, lambda t: dtypes.min_value(t), name="max")  # noqa: A001
min = comm_reducer(_min2, lambda t: dtypes.max_value(t), name="min")  # noqa: A001
