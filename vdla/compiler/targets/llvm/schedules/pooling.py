"""CPU schedules of 2-D pooling and global pooling.

The declarations are in :mod:`vdla.compiler.topi.pooling`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import te
from ....autotvm.dispatch import schedule_knobs
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, traverse_inline


def _define_pool(ow: int) -> Any:
    def define(cfg: Any) -> None:
        cfg.define_knob("tile_x", [1] + [v for v in (4, 8, 16) if v <= ow])
        cfg.define_knob("par", ["nc", "ncy"])
        cfg.define_annotate("ann_reduce", ["ry", "rx"], policy="try_unroll")
    return define


def schedule_pool(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule of :func:`pool2d`: padding inlined, the window sum computed per
    output row, ``(n, c)`` fused and run in parallel.

    Its autotvm knobs (the ``pool2d.x86`` template's space; a tuned record of the pool's
    ``workload`` under ``apply_history_best``): ``tile_x`` the vector width along output
    columns (1: scalar, the hand pick), ``par`` the parallel loops (``nc`` or ``ncy``: rows
    too), ``ann_reduce`` the window's rows / columns unrolled."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    reds: list[te.ComputeOp] = []
    traverse_inline(s, outs, lambda op: reds.append(op) if op.tag in ("pool_max", "pool_sum") else None)
    if len(outs[0].shape) == 5:
        return _schedule_pool_blocked(s, outs, reds)
    hand = {"tile_x": 1, "par": "nc", "ann_reduce": ["none", "none"]}
    k = hand
    if len(outs) == 1 and len(reds) == 1:  # one pool (with its tail): tunable
        ow = const_shape(reds[0].output(0))[3]
        k = schedule_knobs("llvm", reds[0].attrs.get("workload"), _define_pool(ow), hand)
    vw = int(k["tile_x"])
    for t in outs:
        st = s[t]
        n, c, y, x = st.op.axis
        xo = xi = None
        if vw > 1:
            xo, xi = st.split(x, factor=vw)
        par = st.fuse(n, c) if k["par"] == "nc" else st.fuse(n, c, y)
        st.parallel(par)
        for red in reds:
            rs = st if red is t.op else s[red]
            if red is not t.op:
                rs.compute_at(st, xo if xo is not None else y if k["par"] == "nc" else par)
            ry, rx = rs.op.reduce_axis
            inner = xi if red is t.op else rs.op.axis[3] if xo is not None else None
            if inner is not None:
                rs.reorder(ry, rx, inner)
                rs.vectorize(inner)
            for ax, ann in zip((ry, rx), k["ann_reduce"]):
                if ann == "unroll":
                    rs.unroll(ax)
        if xi is not None and reds and reds[0] is not t.op:
            st.vectorize(xi)
    return s


def _schedule_pool_blocked(s: Schedule, outs: list[te.Tensor], reds: list[te.ComputeOp]) -> Schedule:
    """Pools on NCHW[x]c data: the channel block is the vector, accumulated over the window per
    output pixel; ``(n, c.outer, rows)`` in parallel."""
    for t in outs:
        st = s[t]
        n, c, y, x, kb = st.op.axis
        st.parallel(st.fuse(n, c, y))
        for red in reds:
            rs = st if red is t.op else s[red]
            if red is not t.op:
                rs.compute_at(st, x)
            ry, rx = rs.op.reduce_axis
            inner = rs.op.axis[4]
            rs.reorder(ry, rx, inner)
            rs.vectorize(inner)
        if not reds or reds[0] is not t.op:
            st.vectorize(kb)
    return s


def schedule_global_pool(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule of :func:`global_pool`: ``(n, c)`` in parallel, the plane
    reduction computed per channel."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    reds: list[te.ComputeOp] = []
    traverse_inline(s, outs, lambda op: reds.append(op) if op.tag == "global_pool" else None)
    for t in outs:
        st = s[t]
        n, c = st.op.axis[:2]
        par = st.fuse(n, c)
        st.parallel(par)
        blocked = len(st.op.axis) == 5  # NCHW[x]c: the block is the vector, summed over the plane
        for red in reds:
            rs = st if red is t.op else s[red]
            if red is not t.op:
                rs.compute_at(st, par)
            if blocked:
                ry, rx = rs.op.reduce_axis
                rs.reorder(ry, rx, rs.op.axis[4])
                rs.vectorize(rs.op.axis[4])
        if blocked and (not reds or reds[0] is not t.op):
            st.vectorize(st.op.axis[4])
    return s
