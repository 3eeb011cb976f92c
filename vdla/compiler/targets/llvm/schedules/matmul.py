"""CPU schedule of the blocked matrix multiply (the paper's Figure 2 shape).

The declarations are in :mod:`vdla.compiler.topi.matmul`; each ``schedule_*`` takes the output
tensor(s) and returns a :class:`~vdla.compiler.schedule.primitives.Schedule` for ``vdla.build(..., "llvm")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .... import te
from ....autotvm.dispatch import current_config, schedule_knobs
from ....schedule.primitives import Schedule
from ....topi.matmul import panel_width, workload


@dataclass
class MatmulConfig:
    """Knobs of :func:`schedule_matmul_cpu`."""

    mr: int = 4  # rows of the register block (mr x bn accumulators)
    kc: int = 256  # k split (cache block)
    ku: int = 4  # k unroll
    parallel: bool = True


def _define(k: int) -> Any:
    def define(cfg: Any) -> None:
        cfg.define_knob("tile_y", [1, 2, 4, 8])
        cfg.define_knob("tile_k", sorted({c for c in (32, 64, 128, 256, 512) if c < k} | {256, k}))
        cfg.define_knob("unroll_k", [1, 2, 4, 8])
        cfg.define_knob("parallel", [True, False])
    return define


def matmul_knobs(n: int, m: int, k: int, bn: int) -> MatmulConfig:
    """The :class:`MatmulConfig` of a ``matmul.x86`` template point, the tuned record of
    ``[n, m, k]`` under ``apply_history_best`` (when it declared the same panel width ``bn``),
    or the defaults."""
    hand = MatmulConfig()
    picked = schedule_knobs("llvm", workload(n, m, k), _define(k),
                            {"tile_y": hand.mr, "tile_k": hand.kc, "unroll_k": hand.ku, "parallel": hand.parallel})
    tuned_bn = panel_width(n, m, k)
    if current_config() is None and tuned_bn is not None and tuned_bn != bn:
        return hand  # a record tuned for other panels: its register block does not fit these
    return MatmulConfig(mr=int(picked["tile_y"]), kc=int(picked["tile_k"]), ku=int(picked["unroll_k"]),
                        parallel=bool(picked["parallel"]))


def schedule_matmul_cpu(C: te.Tensor, cfg: MatmulConfig | None = None) -> Schedule:
    """The default CPU schedule for a :func:`matmul` output (``cfg``: explicit knobs; None: an
    autotvm template's point, a tuned record, or :class:`MatmulConfig`'s defaults)."""
    PB = C.op.input_tensors()[1] if C.op.input_tensors()[0].name == "A" else C.op.input_tensors()[0]
    bn = int(PB.shape[2].value)
    if cfg is None:
        n, m = (int(d.value) for d in C.shape)
        cfg = matmul_knobs(n, m, int(PB.shape[1].value), bn)
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
