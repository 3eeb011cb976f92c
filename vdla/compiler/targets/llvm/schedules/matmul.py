"""CPU schedule of the blocked matrix multiply (the paper's Figure 2 shape).

The declarations are in :mod:`vdla.compiler.topi.matmul`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .... import te
from ....schedule.primitives import Schedule


@dataclass
class MatmulConfig:
    """Knobs of :func:`schedule_matmul_cpu`."""

    mr: int = 4  # rows of the register block (mr x bn accumulators)
    kc: int = 256  # k split (cache block)
    ku: int = 4  # k unroll
    parallel: bool = True


def schedule_matmul_cpu(C: te.Tensor, cfg: MatmulConfig | None = None) -> Schedule:
    """The default CPU schedule for a :func:`matmul` output."""
    cfg = cfg or MatmulConfig()
    PB = C.op.input_tensors()[1] if C.op.input_tensors()[0].name == "A" else C.op.input_tensors()[0]
    bn = int(PB.shape[2].value)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=bn)
    io, ii = s[C].split(i, factor=cfg.mr)
    (r,) = s[CC].op.reduce_axis
    ko, kr = s[CC].split(r, factor=cfg.kc)
    s[C].reorder(jo, io, ii, ji)
    s[CC].compute_at(s[C], io)
    ic, jc = s[CC].op.axis
    kro, kri = s[CC].split(kr, factor=cfg.ku)
    s[CC].reorder(ko, kro, kri, ic, jc)
    s[CC].vectorize(jc)
    s[CC].unroll(ic)
    s[CC].unroll(kri)
    s[C].vectorize(ji)
    s[C].unroll(ii)
    x, y, z = s[PB].op.axis
    s[PB].vectorize(z)
    if cfg.parallel:
        s[C].parallel(jo)
        s[PB].parallel(x)
    return s
