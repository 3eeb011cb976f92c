"""CPU schedule of the row normalisations (:mod:`vdla.compiler.topi.norm`: layer, instance and
group normalisation, log-softmax): one loop iteration per row, rows in parallel, the row's
partials and statistics computed in that iteration, the output's normalised axes fused and
vectorised."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.norm import norm_stages
from ....topi.util import as_list, const_int, traverse_inline

__all__ = ["schedule_norm"]


def schedule_norm(outs: te.Tensor | Sequence[te.Tensor], lanes: int = 16, min_parallel: int = 2) -> Schedule:
    """Rows fused and parallel (from ``min_parallel`` rows on), statistics per row, the
    normalised axes vectorised by ``lanes``."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    for t in outs:
        inner, split, pairs = norm_stages(t)
        st = s[t]
        axes = list(st.op.axis)
        sizes = [const_int(d) for d in t.shape]
        if split:
            co, ci = st.split(axes[1], factor=split)
            rows, cols = [axes[0], co], [ci, *axes[2:]]
            nrows, ncols = sizes[0] * sizes[1] // split, split * math.prod(sizes[2:])
        else:
            rows = [a for d, a in enumerate(axes) if d not in inner]
            cols = [a for d, a in enumerate(axes) if d in inner]
            nrows = math.prod(s_ for d, s_ in enumerate(sizes) if d not in inner)
            ncols = math.prod(s_ for d, s_ in enumerate(sizes) if d in inner)
        st.reorder(*rows, *cols)
        col = st.fuse(*cols) if len(cols) > 1 else cols[0]
        if rows:
            row = st.fuse(*rows) if len(rows) > 1 else rows[0]
            if nrows >= min_parallel:
                st.parallel(row)
            for op in (op for pair in pairs for op in pair):
                s[op].compute_at(st, row)
        if ncols >= lanes and max(inner) == len(axes) - 1:  # contiguous along the innermost axis
            _, vi = st.split(col, factor=lanes)
            st.vectorize(vi)
    return s

