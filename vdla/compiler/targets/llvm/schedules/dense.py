"""CPU schedule of ``dense``: a register tile of output rows, the reduction unrolled and vectorised.

The declarations are in :mod:`vdla.compiler.topi.dense`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .... import te
from ....autotvm.dispatch import current_config, query
from ....autotvm.space import ConfigSpace
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, traverse_inline


def schedule_dense(outs: te.Tensor | Sequence[te.Tensor], mr: int = 4, ku: int = 4) -> Schedule:
    """Default CPU schedule of :func:`dense` (with an optional fused injective tail)."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    found: list[te.ComputeOp] = []
    packs: list[te.ComputeOp] = []

    def cb(op: te.ComputeOp) -> None:
        if op.tag == "dense":
            found.append(op)
        elif op.tag == "dense_pack":
            packs.append(op)

    traverse_inline(s, outs, cb)
    if len(found) != 1:
        raise ValueError("schedule_dense: expected one dense operation among the outputs' producers")
    d = found[0]
    ot = d.output(0)
    mr, ku = _knobs(outs, d, mr, ku)
    bn = d.attrs["bn"] if packs or len(d.input_tensors()[1].shape) == 3 else 16
    nb, no = const_shape(ot)
    if d in {t.op for t in outs}:
        acc = s[s.cache_write(ot, "local")]
        out = s[d]
    else:
        out, acc = s[outs[0]], s[d]
    i, j = out.op.axis
    jo, ji = out.split(j, factor=bn)
    io, ii = out.split(i, factor=mr)
    out.reorder(jo, io, ii, ji)
    out.vectorize(ji)
    out.unroll(ii)
    out.parallel(jo)
    acc.compute_at(out, io)
    ic, jc = acc.op.axis
    (r,) = acc.op.reduce_axis
    ko, ki = acc.split(r, factor=ku)
    acc.reorder(ko, ki, ic, jc)
    acc.vectorize(jc)
    acc.unroll(ic)
    acc.unroll(ki)
    for p in packs:
        x, _, z = s[p].op.axis
        s[p].vectorize(z)
        s[p].parallel(x)
    del nb, no
    return s


MR_CHOICES = (1, 2, 4, 8)
KU_CHOICES = (1, 2, 4, 8, 16)


def _knobs(outs: Sequence[te.Tensor], d: te.ComputeOp, mr: int, ku: int) -> tuple[int, int]:
    """(rows per register tile, reduction unroll): the autotvm template's point, a tuned record of
    this workload (``["dense.x86", [batch, in, out, has bias]]``), or the hand pick given."""
    b, k = const_shape(d.input_tensors()[0])
    workload = ["dense.x86", [b, k, const_shape(d.output(0))[1], outs[0].op is not d]]
    cfg = current_config()
    if cfg is not None:
        cfg.define_knob("tile_y", list(MR_CHOICES))
        cfg.define_knob("tile_k", list(KU_CHOICES))
        cfg.workload = workload
        if cfg.is_fallback:
            cfg.set("tile_y", mr)
            cfg.set("tile_k", ku)
        elif not isinstance(cfg, ConfigSpace):
            return int(cfg["tile_y"].val), int(cfg["tile_k"].val)
        return mr, ku
    tuned = query("llvm", workload)
    if tuned is not None:
        return int(tuned["tile_y"].val), int(tuned["tile_k"].val)
    return mr, ku
