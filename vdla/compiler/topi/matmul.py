"""float32 matrix multiply ``C = A @ B`` and its tiled, vectorised, parallel CPU schedule.

The schedule packs B into column panels ``PB[j // bn, k, j % bn]`` (contiguous vector
loads), accumulates an ``mr x bn`` block of C in a local cache (registers after LLVM's
SROA), splits k for L1/L2 locality, unrolls the register block and runs the column
panels in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..schedule.primitives import Schedule


def matmul(n: int, m: int, k: int, dtype: str = "float32", bn: int = 64) -> tuple[te.Tensor, ...]:
    """Declare ``C[n, m] = sum_k A[n, k] * B[k, m]`` with B packed in panels of ``bn`` columns.

    Returns (A, B, C); ``m`` must be a multiple of ``bn``.
    """
    if m % bn:
        raise ValueError(f"matmul: m={m} must be a multiple of the panel width bn={bn}")
    A = te.placeholder((n, k), dtype, name="A")
    B = te.placeholder((k, m), dtype, name="B")
    PB = te.compute((m // bn, k, bn), lambda x, y, z: B[y, x * bn + z], name="PB")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * PB[j // bn, r, j % bn], axis=r), name="C")
    return A, B, C


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
