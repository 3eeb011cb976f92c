"""CPU schedule of injective (element-wise and broadcast) operators: fused, vectorised, parallel when large
(NCHW[x]c outputs: the channel block vectorised, rows in parallel).

The declarations are in :mod:`vdla.compiler.topi.elemwise`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_int, traverse_inline


def schedule_injective(outs: te.Tensor | Sequence[te.Tensor], lanes: int = 16, min_parallel: int = 4096) -> Schedule:
    """Default CPU schedule of injective outputs: inline injective producers, fuse all axes,
    vectorise an inner split of ``lanes`` and run the outer loop in parallel when large."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    for t in outs:
        _schedule_injective_stage(s, t, lanes, min_parallel)
    return s


def _schedule_injective_stage(s: Schedule, t: te.Tensor, lanes: int, min_parallel: int) -> None:
    st = s[t]
    axes = list(st.op.axis)
    if not axes:
        return
    shape = [x.value if hasattr(x, "value") else None for x in t.shape]
    if len(axes) == 5 and shape[4] is not None and shape[4] <= lanes and None not in shape:
        # NCHW[x]c: the block is the vector and the loops keep their own indices (an index
        # unravelled from one fused loop costs divisions per element: a ShuffleNet shuffle ran
        # at 10 ns per element that way)
        n, c, y, x, k = axes
        st.vectorize(k)
        if shape[0] * shape[1] * shape[2] * shape[3] * shape[4] >= min_parallel:
            st.parallel(st.fuse(n, c, y))
        return
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    total = 1
    for x in t.shape:
        try:
            total *= const_int(x)
        except ValueError:
            total = None  # type: ignore[assignment]
            break
    if total is not None and total < lanes:
        return
    outer, inner = st.split(fused, factor=lanes)
    st.vectorize(inner)
    if total is None or total >= min_parallel:
        st.parallel(outer)
