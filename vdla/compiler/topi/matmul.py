"""float32 matrix multiply ``C = A @ B`` and its tiled, vectorised, parallel CPU schedule.

The schedule packs B into column panels ``PB[j // bn, k, j % bn]`` (contiguous vector
loads), accumulates an ``mr x bn`` block of C in a local cache (registers after LLVM's
SROA), splits k for L1/L2 locality, unrolls the register block and runs the column
panels in parallel.
"""

from __future__ import annotations

from .. import te
from ..autotvm.dispatch import query

#: B's panel width untuned (the hand pick of the paper's Figure 2 schedule)
DEFAULT_BN = 64


def matmul(n: int, m: int, k: int, dtype: str = "float32", bn: int | None = None) -> tuple[te.Tensor, ...]:
    """Declare ``C[n, m] = sum_k A[n, k] * B[k, m]`` with B packed in panels of ``bn`` columns.

    Returns (A, B, C); ``m`` must be a multiple of ``bn``. ``bn`` None: the panel width of a
    tuned ``matmul.x86`` record of ``[n, m, k]`` under ``autotvm.apply_history_best``, else 64.
    """
    if bn is None:
        bn = panel_width(n, m, k) or DEFAULT_BN
    if m % bn:
        raise ValueError(f"matmul: m={m} must be a multiple of the panel width bn={bn}")
    A = te.placeholder((n, k), dtype, name="A")
    B = te.placeholder((k, m), dtype, name="B")
    PB = te.compute((m // bn, k, bn), lambda x, y, z: B[y, x * bn + z], name="PB")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * PB[j // bn, r, j % bn], axis=r), name="C")
    return A, B, C




def workload(n: int, m: int, k: int) -> list[object]:
    """The key tuned records of this product are found by (the ``matmul.x86`` template's args)."""
    return ["matmul.x86", [n, m, k]]


def panel_width(n: int, m: int, k: int) -> int | None:
    """The panel width ``bn`` of the tuned record of ``[n, m, k]`` under
    ``autotvm.apply_history_best`` (None: untuned)."""
    tuned = query("llvm", workload(n, m, k))
    return int(tuned["tile_bn"].val) if tuned is not None else None
