"""Fully connected layer ``out[b, o] = sum_k data[b, k] * weight[o, k] (+ bias[o])``.

When ``O`` is a multiple of the panel width, the weight is repacked in the declaration
(``W_packed[o // bn, k, o % bn]``, TVM's ``dense_pack``) so the schedule can load
``bn`` output columns as one vector; a weight given in that layout (packed once, at compile
time, by the CPU graph) is read as it is; the schedule is the matmul one (register block in a
local cache, k split and unrolled, column panels in parallel).
"""

from __future__ import annotations

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE, const_shape

__all__ = ["dense"]


def dense(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None = None,
    out_dtype: str | None = None,
    bn: int = 16,
) -> te.Tensor:
    """``data[B, K]`` x ``weight[O, K]``ᵀ (+ ``bias[O]``) → ``[B, O]``; a rank-3 ``weight`` is
    already packed, ``[O/bn, K, bn]`` (its ``bn`` replaces the argument)."""
    b, k = const_shape(data)
    prepacked = len(weight.shape) == 3  # [O/bn, K, bn]: packed once outside (the CPU graph's constants)
    if prepacked:
        oo, k2, bn = const_shape(weight)
        o = oo * bn
    else:
        o, k2 = const_shape(weight)
    if k != k2:
        raise ValueError(f"dense: data has {k} input features but the weight has {k2}")
    if bias is not None and const_shape(bias) != (o,):
        raise ValueError(f"dense: bias must have shape ({o},), got {const_shape(bias)}")
    out_dtype = out_dtype or data.dtype
    r = te.reduce_axis((0, k), name="k")
    if prepacked:

        def wread(j: Expr, kk: Expr) -> Expr:
            return weight[j // bn, kk, j % bn]
    elif o % bn == 0 and o >= bn:
        wp = te.compute((o // bn, k, bn), lambda x, y, z: weight[x * bn + z, y], name="weight_pack", tag="dense_pack")

        def wread(j: Expr, kk: Expr) -> Expr:
            return wp[j // bn, kk, j % bn]
    else:

        def wread(j: Expr, kk: Expr) -> Expr:
            return weight[j, kk]

    out = te.compute(
        (b, o),
        lambda i, j: te.sum(data[i, r].astype(out_dtype) * wread(j, r).astype(out_dtype), axis=r),
        name="dense",
        tag="dense",
        attrs={"bn": bn},
    )
    if bias is None:
        return out
    return te.compute((b, o), lambda i, j: out[i, j] + bias[j].astype(out_dtype), name="dense_bias", tag=INJECTIVE)


