"""CPU schedules of 2-D pooling and global pooling.

The declarations are in :mod:`vdla.compiler.topi.pooling`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, traverse_inline


def schedule_pool(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule of :func:`pool2d`: padding inlined, the window sum computed per
    output row, ``(n, c)`` fused and run in parallel."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    reds: list[te.ComputeOp] = []
    traverse_inline(s, outs, lambda op: reds.append(op) if op.tag in ("pool_max", "pool_sum") else None)
    for t in outs:
        st = s[t]
        n, c, y, x = st.op.axis
        par = st.fuse(n, c)
        st.parallel(par)
        for red in reds:
            if red is not t.op:
                s[red].compute_at(st, y)
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
        n, c, _, _ = st.op.axis
        par = st.fuse(n, c)
        st.parallel(par)
        for red in reds:
            if red is not t.op:
                s[red].compute_at(st, par)
    return s
