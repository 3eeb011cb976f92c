"""Helpers shared by the GPU schedules: binding a fused loop to blocks and threads, cooperative fetch."""

from __future__ import annotations

from typing import Any

from .... import te
from ....schedule.primitives import Schedule, Stage
from ....topi.util import const_int


def bind_flat(st: Stage, axis: Any, num_thread: int) -> tuple[Any, Any]:
    """Split ``axis`` by ``num_thread`` and bind the parts to blockIdx.x / threadIdx.x."""
    bx, tx = st.split(axis, factor=num_thread)
    st.bind(bx, te.thread_axis("blockIdx.x"))
    st.bind(tx, te.thread_axis("threadIdx.x"))
    return bx, tx


def cooperative_fetch(s: Schedule, cache: te.Tensor, threads: list[tuple[Any, int]], vec: int = 1) -> None:
    """Copy a shared tile with every thread of the block: split ``vec`` lanes off its innermost
    axis (vectorised), fuse the rest, then one chunk per thread over ``threads`` =
    [(thread axis, extent), ...] (outermost first). With vec > 1 the tile's last dimension
    must be a multiple of vec and its size a multiple of vec * (number of threads)."""
    st = s[cache]
    axes = list(st.op.axis)
    if vec > 1:
        # split the innermost axis (not the fused one) so each thread's lanes are one contiguous,
        # aligned run in both memories: a single ld.global.v4 / st.shared.v4
        lo, vi = st.split(axes[-1], factor=vec)
        st.vectorize(vi)
        axes = axes[:-1] + [lo]
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    for ax, n in reversed(threads):
        fused, t = st.split(fused, factor=n)
        st.bind(t, ax)


def divisor_at_most(n: int, cap: int) -> int:
    """The largest divisor of ``n`` not above ``cap`` (tiles that divide: no guards, so barriers are legal)."""
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def total(t: te.Tensor) -> int:
    n = 1
    for s in t.shape:
        n *= const_int(s)
    return n
