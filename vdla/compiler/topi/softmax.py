"""Softmax along one axis (max-subtracted for stability), and `softmax_stages`: the stages a
target's schedule (targets/llvm, targets/cuda) finds in a softmax output by their tags."""

from __future__ import annotations

from collections.abc import Sequence

from .. import te
from ..tir.nodes import Expr

__all__ = ["softmax", "softmax_stages"]


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    nd = x.ndim
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd:
        raise ValueError(f"softmax: axis {axis} is out of range for a {nd}-d tensor")
    red_shape = [s for d, s in enumerate(x.shape) if d != ax]
    k1 = te.reduce_axis((0, x.shape[ax]), name="k1")
    k2 = te.reduce_axis((0, x.shape[ax]), name="k2")

    def full(idx: Sequence[Expr], k: Expr) -> tuple[Expr, ...]:
        return (*idx[:ax], k, *idx[ax:])

    def drop(idx: Sequence[Expr]) -> tuple[Expr, ...]:
        return tuple(i for d, i in enumerate(idx) if d != ax)

    mx = te.compute(red_shape, lambda *i: te.max(x[full(i, k1)], axis=k1), name="softmax_max", tag="softmax_max")
    ex = te.compute(x.shape, lambda *i: te.exp(x[i] - mx[drop(i)]), name="softmax_exp", tag="softmax_exp")
    sm = te.compute(red_shape, lambda *i: te.sum(ex[full(i, k2)], axis=k2), name="softmax_sum", tag="softmax_sum")
    return te.compute(
        x.shape,
        lambda *i: ex[i] / sm[drop(i)],
        name="softmax",
        tag="softmax_output",
        attrs={"axis": ax},
    )


def softmax_stages(t: te.Tensor) -> tuple[int, te.Tensor, te.Tensor, te.Tensor]:
    """For a schedule: the (axis, exponentials, row sum, row max) behind a :func:`softmax` output."""
    op = t.op
    if not isinstance(op, te.ComputeOp) or op.tag != "softmax_output":
        raise ValueError(f"schedule_softmax: {t.name!r} is not a softmax output")
    ex, sm = op.input_tensors()[:2]
    if ex.op.tag != "softmax_exp":
        ex, sm = sm, ex
    mx = [u for u in ex.op.input_tensors() if u.op.tag == "softmax_max"][0]
    return op.attrs["axis"], ex, sm, mx
