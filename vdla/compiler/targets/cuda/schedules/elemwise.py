"""GPU schedule of injective (element-wise and broadcast) operators, fused into one kernel.

Injective producers are inlined into the output (one kernel reads the inputs once), the
output's axes are fused and split into blocks of ``num_thread`` threads; ``vec`` lanes per
thread give vector loads and stores when the size allows (a tuning knob, as is num_thread).
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, traverse_inline
from .common import bind_flat, total


def schedule_injective(outs: te.Tensor | Sequence[te.Tensor], num_thread: int = 256, vec: int = 4) -> Schedule:
    """One kernel per output: producers inlined, fused axes split into blocks of num_thread threads."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    for t in outs:
        schedule_injective_stage(s, t, num_thread, vec)
    return s


def schedule_injective_stage(s: Schedule, t: te.Tensor, num_thread: int = 256, vec: int = 4) -> None:
    """Fuse ``t``'s axes and bind them to blocks of num_thread threads; the last axis is split
    by vec first (vectorised) so that each thread's lanes are contiguous and aligned."""
    st = s[t]
    axes = list(st.op.axis)
    n = total(t)
    last = int(t.shape[-1].value)
    if vec > 1 and last % vec == 0 and n % (vec * num_thread) == 0:
        lo, vi = st.split(axes[-1], factor=vec)
        st.vectorize(vi)
        axes = axes[:-1] + [lo]
    elif n < num_thread:
        num_thread = n
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    bind_flat(st, fused, num_thread)
