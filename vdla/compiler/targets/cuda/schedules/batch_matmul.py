"""GPU schedule of :func:`~vdla.compiler.topi.batch_matmul` (the graph's ``matmul``: attention's
``Q @ Kᵀ`` and ``P @ V`` with broadcast batch dimensions, any sizes).

A block computes a ``ty*tm`` x ``tx*tn`` tile of one batch entry (``blockIdx.z``) with ``ty`` x
``tx`` threads, each accumulating a ``tm`` x ``tn`` tile of outputs in registers over k (per k:
``tm`` loads of A, ``tn`` of B, ``tm * tn`` FMAs). The operands come through the L1 cache rather
than shared memory (a warp's loads of B's row k are one contiguous run), so the tiles need not
divide the shape (sequence lengths such as 197): the edges are guarded.
A fused element-wise tail (scale, mask add) is computed from the registers as they are stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged, traverse_inline

__all__ = ["schedule_batch_matmul"]


def _threads(extent: int, cap: int) -> int:
    """Threads along an axis of ``extent``: a power of two up to ``cap`` (fewer for a short axis)."""
    t = 1
    while t < cap and t < extent:
        t *= 2
    return t


def schedule_batch_matmul(outs: te.Tensor | Sequence[te.Tensor], tm: int = 4, tn: int = 4, threads: int = 16) -> Schedule:
    """Register-tiled batched product: ``threads`` x ``threads`` threads per block (fewer along a
    short axis), ``tm`` x ``tn`` outputs per thread (1 along an axis too short to fill them)."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    bm = find_tagged(outs, "batch_matmul")
    traverse_inline(s, outs, lambda op: None)
    for t in bm.input_tensors():
        if isinstance(t.op, te.ComputeOp) and t.op.tag == "batch_matmul_pad":  # read in place (guarded)
            s[t.op].compute_inline()
    ct = bm.output(0)
    *_, n, m = const_shape(ct)
    ty_n, tx_n = _threads(n, threads), _threads(m, threads)
    tm = tm if n >= ty_n * tm else 1
    tn = tn if m >= tx_n * tn else 1
    out = outs[0]
    if out.op is bm:
        CL = s.cache_write(ct, "local")
    else:
        if len(outs) != 1:
            raise ValueError("schedule_batch_matmul: a fused tail must have exactly one output")
        CL = ct
        s[bm].set_scope("local")
    so = s[out]
    *b, i, j = so.op.axis
    by, i = so.split(i, factor=ty_n * tm)
    ty, ii = so.split(i, factor=tm)
    bx, j = so.split(j, factor=tx_n * tn)
    tx, jj = so.split(j, factor=tn)
    so.reorder(*b, by, bx, ty, tx, ii, jj)
    if b:
        so.bind(so.fuse(*b) if len(b) > 1 else b[0], te.thread_axis("blockIdx.z"))
    so.bind(by, te.thread_axis("blockIdx.y"))
    so.bind(bx, te.thread_axis("blockIdx.x"))
    so.bind(ty, te.thread_axis("threadIdx.y"))
    so.bind(tx, te.thread_axis("threadIdx.x"))
    so.unroll(ii)
    so.unroll(jj)
    s[CL].compute_at(so, tx)
    *_, ic, jc = s[CL].op.axis
    (r,) = s[CL].op.reduce_axis
    s[CL].reorder(r, ic, jc)
    s[CL].unroll(ic)
    s[CL].unroll(jc)
    return s
