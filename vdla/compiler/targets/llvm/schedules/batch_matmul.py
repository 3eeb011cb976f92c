"""CPU schedule of :func:`~vdla.compiler.topi.batch_matmul` (the graph's ``matmul``: attention's
``Q @ Kᵀ`` and ``P @ V``, numpy's broadcast batch dimensions).

A register tile of ``mr`` rows x ``vw`` columns of one batch entry accumulates in a local cache
(registers after LLVM's SROA) over k, unrolled by ``ku``: per k, ``mr`` broadcast scalars of A times
one ``vw``-lane vector of B's row k (contiguous). The batch entries and row blocks run in parallel;
a fused element-wise tail (scale, mask add) is computed from the tile as it is stored. B padded to
whole vectors (``batch_matmul_pad``, columns not a multiple of 8) is computed first, in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged, traverse_inline

__all__ = ["schedule_batch_matmul"]


def schedule_batch_matmul(outs: te.Tensor | Sequence[te.Tensor], mr: int = 4, vw: int = 16, ku: int = 4) -> Schedule:
    """Default CPU schedule: ``mr`` x ``vw`` register tiles (``vw`` lanes along the output columns:
    ``vw``, a half or a quarter of it where that divides them, else clipped to them; the last
    partial vector is guarded), k unrolled by ``ku``, (batch, row blocks) in parallel."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    bm = find_tagged(outs, "batch_matmul")
    traverse_inline(s, outs, lambda op: None)
    ct = bm.output(0)
    *_, n, m = const_shape(ct)
    k = int(bm.reduce_axis[0].dom.extent.value)
    # lanes that divide the columns where some do (a guarded vector falls back to a scalar loop)
    vw = next((w for w in (vw, vw // 2, vw // 4) if w >= 4 and m % w == 0), min(vw, m))
    mr, ku = min(mr, n), min(ku, k)
    if bm in {t.op for t in outs}:
        acc = s[s.cache_write(ct, "local")]
        out = s[bm]
    else:
        if len(outs) != 1:
            raise ValueError("schedule_batch_matmul: a fused tail must have exactly one output")
        out, acc = s[outs[0]], s[bm]
    *b, i, j = out.op.axis
    io, ii = out.split(i, factor=mr)
    jo, ji = out.split(j, factor=vw)
    out.reorder(*b, io, jo, ii, ji)
    out.parallel(out.fuse(*b, io) if b else io)
    out.unroll(ii)
    out.vectorize(ji)
    acc.compute_at(out, jo)
    *_, ic, jc = acc.op.axis
    (r,) = acc.op.reduce_axis
    ko, ki = acc.split(r, factor=ku)
    acc.reorder(ko, ki, ic, jc)
    acc.unroll(ki)
    acc.unroll(ic)
    acc.vectorize(jc)
    for t in bm.input_tensors():
        if isinstance(t.op, te.ComputeOp) and t.op.tag == "batch_matmul_pad":  # B's zero columns, once
            ps = s[t.op]
            *lead, kr, _ = ps.op.axis
            ps.parallel(ps.fuse(*lead, kr) if lead else kr)
    return s
