"""GPU schedule of the row normalisations (:mod:`vdla.compiler.topi.norm`: layer, instance and
group normalisation, log-softmax): two kernels, each with one block per row and one thread
per partial.

The first computes the row's first statistic (the sum for the mean, the max): each thread
reduces its strided share of the row (coalesced: neighbouring threads read neighbouring
elements) in registers into a shared-memory partial; after a barrier every thread sums the
partials (the same value) and the row's statistic goes to global memory. The second kernel
reduces the second statistic (squared deviations from the mean, exponentials) the same way
into shared memory, then the block writes the row's outputs, ``parts`` at a time. (The
second statistic's partials read the first, which a stage computed in the same kernel
could not give them: a stage computed at the row is read only at the row's level.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import te
from ....schedule.primitives import Schedule
from ....topi.norm import norm_stages
from ....topi.util import as_list, const_int, traverse_inline

__all__ = ["schedule_norm"]


def _row_stat(s: Schedule, part: te.ComputeOp, stat: te.ComputeOp) -> Any:
    """Make the register caches of ``part`` and ``stat`` now (cache_write comes before any loop
    is scheduled) and return the function attaching both at loop ``row`` of stage ``at`` (the
    output's, or ``stat``'s own where it is a kernel's root): ``part`` in shared memory with a
    thread per partial accumulating in registers, ``stat`` summed in every thread's registers
    then stored once."""
    pt, su = part.output(0), stat.output(0)
    pacc = s.cache_write(pt, "local")
    sacc = s.cache_write(su, "local")

    def attach(at: Any, row: Any) -> None:
        s[pt].set_scope("shared")
        s[pt].compute_at(at, row)
        tx = s[pt].op.axis[-1]
        s[pt].bind(tx, te.thread_axis("threadIdx.x"))
        s[pacc].compute_at(s[pt], tx)
        s[sacc].compute_at(at, row)

    return attach


def schedule_norm(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Rows on blocks, partials and the output's normalised axes on the block's threads."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    for t in outs:
        inner, split, ((p1, s1), (p2, s2)) = norm_stages(t)
        nparts = const_int(p1.output(0).shape[-1])
        first, second = _row_stat(s, p1, s1), _row_stat(s, p2, s2)
        # kernel 1: the first statistic, one block per row
        f = s[s1.output(0)]
        raxes = list(f.op.axis)
        row1 = f.fuse(*raxes) if len(raxes) > 1 else raxes[0]
        f.bind(row1, te.thread_axis("blockIdx.x"))
        first(f, row1)
        # kernel 2: the second statistic and the output
        st = s[t]
        axes = list(st.op.axis)
        if split:
            co, ci = st.split(axes[1], factor=split)
            rows, cols = [axes[0], co], [ci, *axes[2:]]
        else:
            rows = [a for d, a in enumerate(axes) if d not in inner]
            cols = [a for d, a in enumerate(axes) if d in inner]
        st.reorder(*rows, *cols)
        col = st.fuse(*cols) if len(cols) > 1 else cols[0]
        jo, tx = st.split(col, factor=nparts)
        if rows:
            row = st.fuse(*rows) if len(rows) > 1 else rows[0]
        else:  # the whole tensor is one row: one block
            row, jo = st.split(jo, nparts=1)
        st.reorder(row, tx, jo)
        st.bind(row, te.thread_axis("blockIdx.x"))
        st.bind(tx, te.thread_axis("threadIdx.x"))
        s[s2.output(0)].set_scope("shared")
        s[s2.output(0)].compute_at(st, row)
        second(st, row)
    return s
