"""Reductions over any axes: ``sum``, ``mean``, ``max``, ``min`` (TVM's ``topi.sum`` and friends;
ONNX's ReduceSum/Mean/Max/Min, and global pooling as exporters write it: a mean over H and W).

:func:`reduce` is one compute with a reduce axis per reduced dimension (tag ``reduce``);
the mean is that sum times ``1/n`` in an injective stage the schedules fuse into the
reduction's thread or loop (each target's ``schedule_reduce``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import te
from ..tir.nodes import Expr
from .util import INJECTIVE, const_shape

__all__ = ["REDUCE_TAG", "reduce"]

REDUCE_TAG = "reduce"

_REDUCERS = {"sum": te.sum, "mean": te.sum, "max": te.max, "min": te.min}


def reduce(x: te.Tensor, kind: str, axes: Sequence[int] | None = None, keepdims: bool = True) -> te.Tensor:
    """``kind`` (sum, mean, max, min) of ``x`` over ``axes`` (all of them by default); reduced
    dimensions stay as 1s with ``keepdims``, else they are dropped."""
    if kind not in _REDUCERS:
        raise ValueError(f"reduce: kind must be one of {', '.join(_REDUCERS)}, got {kind!r}")
    shape = const_shape(x)
    rank = len(shape)
    red = sorted({a + rank if a < 0 else a for a in (range(rank) if axes is None else axes)})
    if any(not 0 <= a < rank for a in red):
        raise ValueError(f"reduce: axes {list(axes or [])} out of range for rank {rank}")
    raxes = {a: te.reduce_axis((0, shape[a]), name=f"r{a}") for a in red}
    kept = [a for a in range(rank) if a not in raxes]
    out = tuple(1 if a in raxes else shape[a] for a in range(rank)) if keepdims else tuple(shape[a] for a in kept)

    def index(i: Sequence[Expr]) -> tuple[Expr, ...]:
        # the input index of output index i: reduce axes where reduced, i's own elsewhere
        if keepdims:
            return tuple(raxes[a] if a in raxes else i[a] for a in range(rank))
        pos = {a: k for k, a in enumerate(kept)}
        return tuple(raxes[a] if a in raxes else i[pos[a]] for a in range(rank))

    fn = _REDUCERS[kind]
    r = te.compute(out, lambda *i: fn(x[index(i)], axis=[raxes[a] for a in red]), name=f"reduce_{kind}",
                   tag=REDUCE_TAG)
    if kind != "mean":
        return r
    scale = te.const(1.0 / math.prod(shape[a] for a in red), x.dtype)
    return te.compute(out, lambda *i: r[i] * scale, name="reduce_mean", tag=INJECTIVE)
