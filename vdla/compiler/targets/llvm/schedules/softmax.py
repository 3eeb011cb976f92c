"""CPU schedule of softmax: reductions and the normalisation per row.

The declarations are in :mod:`vdla.compiler.topi.softmax`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.softmax import softmax_stages
from ....topi.util import as_list


def schedule_softmax(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """Default CPU schedule: the exponentials at root with the row max computed per row,
    then the output with the row sum computed per row; rows run in parallel and the last
    axis is vectorised when it is the softmax axis."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    for t in outs:
        ax, ex, sm, mx = softmax_stages(t)
        for st, red in ((s[ex], mx), (s[t], sm)):
            axes = list(st.op.axis)
            others = [a for d, a in enumerate(axes) if d != ax]
            if not others:
                continue
            st.reorder(*others, axes[ax])
            row = st.fuse(*others) if len(others) > 1 else others[0]
            st.parallel(row)
            s[red].compute_at(st, row)
            if ax == len(axes) - 1:
                _, vi = st.split(axes[ax], factor=16)
                st.vectorize(vi)
    return s
