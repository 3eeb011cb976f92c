"""GPU schedules of reductions (sum/max/min over axes), pooling and softmax.

Every output element is one thread (the reduction runs in that thread's registers); outputs
are fused and split into blocks of ``num_thread``. Softmax runs as two kernels, one thread
per row: the row maximum and the exponentials, then the row sum and the normalisation,
with the per-row values in registers (``local``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.softmax import softmax_stages
from ....topi.util import as_list, traverse_inline
from .common import bind_flat, total


def schedule_reduce(outs: te.Tensor | Sequence[te.Tensor], num_thread: int = 256, inline: Sequence[str] = ()) -> Schedule:
    """One thread per output element; injective producers (and stages tagged ``inline``, such
    as a weight re-layout) inlined. A reduction feeding an injective output (average pooling's
    division, a ReLU after a convolution) is computed in that thread's registers."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    reductions: list[te.ComputeOp] = []
    out_ops = {t.op for t in outs}

    def visit(op: te.ComputeOp) -> None:
        if op.tag in inline and op not in out_ops:
            s[op].compute_inline()
        elif op.reduce_axis and op not in out_ops:
            reductions.append(op)

    traverse_inline(s, outs, visit)
    for t in outs:
        st = s[t]
        axes = list(st.op.axis)
        fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
        _, tx = bind_flat(st, fused, min(num_thread, total(t)))
        for op in reductions:
            s[op].set_scope("local")
            s[op].compute_at(st, tx)
    return s


def schedule_pool(outs: te.Tensor | Sequence[te.Tensor], num_thread: int = 256) -> Schedule:
    """Pooling (max/avg, global too): a reduction over the window per output element."""
    return schedule_reduce(outs, num_thread)


def schedule_softmax(outs: te.Tensor | Sequence[te.Tensor], num_thread: int = 128) -> Schedule:
    """Two kernels, one thread per row: max + exp, then sum + normalise."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    for t in outs:
        ax, ex, sm, mx = softmax_stages(t)
        rows = total(t) // int(t.shape[ax].value)
        for st, red in ((s[ex], mx), (s[t], sm)):
            axes = list(st.op.axis)
            others = [a for d, a in enumerate(axes) if d != ax]
            if others:
                st.reorder(*others, axes[ax])
                row = st.fuse(*others) if len(others) > 1 else others[0]
            else:
                row, _ = st.split(axes[ax], nparts=1)
            _, tx = bind_flat(st, row, min(num_thread, rows))
            s[red].set_scope("local")
            s[red].compute_at(st, tx)
    return s
