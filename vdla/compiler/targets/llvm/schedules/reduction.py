"""CPU schedule of reductions over any axes (:func:`vdla.compiler.topi.reduction.reduce`): the output's
axes fused and run in parallel when there are enough of them, each output's reduction loop
(and a mean's scaling) computed in that iteration."""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, traverse_inline

__all__ = ["schedule_reduce"]


def schedule_reduce(outs: te.Tensor | Sequence[te.Tensor], min_parallel: int = 64) -> Schedule:
    """One loop over the outputs (parallel from ``min_parallel`` on), the reduction inside it."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    reds: list[te.ComputeOp] = []
    out_ops = {t.op for t in outs}
    traverse_inline(s, outs, lambda op: reds.append(op) if op.reduce_axis and op not in out_ops else None)
    for t in outs:
        st = s[t]
        axes = list(st.op.axis)
        if not axes:  # a scalar: the reduction is the whole loop nest
            continue
        fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
        total = 1
        for d in t.shape:
            total *= int(d.value)
        if total >= min_parallel:
            st.parallel(fused)
        for op in reds:
            s[op].compute_at(st, fused)
    return s
