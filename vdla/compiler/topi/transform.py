"""Data movement as computes: ``concatenate`` along any axis, ``transpose`` by a permutation,
``reshape``, ``layout_transform`` between NCHW and NCHW[x]c and ``channel_shuffle`` (TVM's
``topi.concatenate`` / ``topi.transpose`` / ``topi.reshape`` / ``topi.layout_transform``).

All are tagged ``injective``: ``schedule_injective`` runs them on every target, each
output element read from the one input element it copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE, const_shape, ravel, unravel

__all__ = ["channel_shuffle", "concatenate", "layout_transform", "reshape", "transpose"]


def concatenate(xs: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """The tensors ``xs`` joined along ``axis`` (every other extent equal)."""
    if not xs:
        raise ValueError("concatenate: no tensors")
    shapes = [const_shape(x) for x in xs]
    rank = len(shapes[0])
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ValueError(f"concatenate: axis {axis} out of range for rank {rank}")
    for s in shapes[1:]:
        if len(s) != rank or any(d != e for i, (d, e) in enumerate(zip(s, shapes[0])) if i != a):
            raise ValueError(f"concatenate along axis {a}: shapes {shapes[0]} and {s} do not match")
    offsets = [0]
    for s in shapes:
        offsets.append(offsets[-1] + s[a])
    out = list(shapes[0])
    out[a] = offsets[-1]

    def f(*i: Expr) -> Expr:
        # the last input, then each earlier one where the index falls before its end
        k = len(xs) - 1
        e = xs[k][tuple(i[:a]) + (i[a] - offsets[k],) + tuple(i[a + 1:])]
        for k in range(len(xs) - 2, -1, -1):
            idx = tuple(i[:a]) + (i[a] - offsets[k],) + tuple(i[a + 1:])
            e = te.if_then_else(i[a] < offsets[k + 1], xs[k][idx], e)
        return e

    return te.compute(tuple(out), f, name="concatenate", tag=INJECTIVE)


def transpose(x: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """``x`` with its axes permuted: output axis ``k`` is input axis ``axes[k]`` (reversed by default)."""
    shape = const_shape(x)
    perm = tuple(axes) if axes is not None else tuple(reversed(range(len(shape))))
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"transpose: {perm} is not a permutation of the {len(shape)} axes of {shape}")
    inverse = [perm.index(d) for d in range(len(shape))]
    return te.compute(tuple(shape[p] for p in perm), lambda *i: x[tuple(i[inverse[d]] for d in range(len(shape)))],
                      name="transpose", tag=INJECTIVE)


def reshape(x: te.Tensor, shape: Sequence[int]) -> te.Tensor:
    """``x``'s elements in row-major order with the shape ``shape`` (as many elements). Alone, a
    reshape is a view of its input (the executor's); this compute is the one a fused chain
    inlines (a flatten between an add and a transpose, a channel shuffle's reshapes)."""
    src = const_shape(x)
    out = tuple(int(d) for d in shape)
    n = 1
    for d in src:
        n *= d
    m = 1
    for d in out:
        m *= d
    if n != m:
        raise ValueError(f"reshape: {list(src)} ({n} elements) cannot become {list(out)} ({m} elements)")

    # output index i is row-major position ravel(i) of both shapes
    return te.compute(out, lambda *i: x[tuple(unravel(ravel(i, out), src))], name="reshape", tag=INJECTIVE)


def layout_transform(x: te.Tensor, src: int, dst: int) -> te.Tensor:
    """``x`` from NCHW[src]c to NCHW[dst]c, a block of 0 meaning plain NCHW: channel ``c`` of a
    blocked tensor is at ``[n, c // block, h, w, c % block]``."""
    shape = const_shape(x)
    if src:
        n, cc, h, w, _ = shape
        c = cc * src
    else:
        n, c, h, w = shape

    def read(b: Expr, ch: Expr, y: Expr, xx: Expr) -> Expr:
        return x[b, ch // src, y, xx, ch % src] if src else x[b, ch, y, xx]

    if not dst:
        return te.compute((n, c, h, w), read, name="layout_transform", tag=INJECTIVE)
    if c % dst:
        raise ValueError(f"layout_transform: {c} channels are not a multiple of the block {dst}")
    return te.compute((n, c // dst, h, w, dst), lambda b, f, y, xx, k: read(b, f * dst + k, y, xx),
                      name="layout_transform", tag=INJECTIVE)


def channel_shuffle(x: te.Tensor, groups: int) -> te.Tensor:
    """ShuffleNet's channel shuffle of NCHW or NCHW[x]c data as one gather: output channel ``c``
    reads input channel ``(c % groups) * (C / groups) + c // groups`` (constant divisions only,
    instead of the reshape-transpose-reshape chain's index arithmetic)."""
    shape = const_shape(x)
    b = shape[4] if len(shape) == 5 else 1
    per = shape[1] * b // groups

    def src(c: Expr) -> Expr:
        return (c % groups) * per + c // groups

    if len(shape) == 4:
        return te.compute(shape, lambda n, c, y, xx: x[n, src(c), y, xx], name="channel_shuffle", tag=INJECTIVE)

    def f(n: Expr, cc: Expr, y: Expr, xx: Expr, k: Expr) -> Expr:
        s = src(cc * b + k)
        return x[n, s // b, y, xx, s % b]

    return te.compute(shape, f, name="channel_shuffle", tag=INJECTIVE)
