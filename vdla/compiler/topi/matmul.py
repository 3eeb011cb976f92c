"""float32 matrix multiply ``C = A @ B`` and its tiled, vectorised, parallel CPU schedule;
:func:`batch_matmul`, numpy's ``a @ b`` with broadcast batch dimensions (the graph's ``matmul``).

The schedule packs B into column panels ``PB[j // bn, k, j % bn]`` (contiguous vector
loads), accumulates an ``mr x bn`` block of C in a local cache (registers after LLVM's
SROA), splits k for L1/L2 locality, unrolls the register block and runs the column
panels in parallel.
"""

from __future__ import annotations

import numpy as np

from .. import te
from ..autotvm.dispatch import query
from ..tir.nodes import Expr, make_const
from .util import INJECTIVE, const_shape

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


def batch_matmul(a: te.Tensor, b: te.Tensor, out_dtype: str | None = None, col_block: int = 8) -> te.Tensor:
    """numpy's ``a @ b`` for ``a[..., N, K]`` and ``b[..., K, M]`` (both at least 2-D) with the batch
    dimensions broadcast: ``out[*batch, i, j] = sum_k a[*batch_a, i, k] * b[*batch_b, k, j]``
    (attention's ``[B, H, S, D] x [B, H, D, S]``, a ``[B, S, D] x [D, E]`` projection); TVM's
    ``batch_matmul`` without the transposes.

    Where ``M`` is above ``col_block`` and not a multiple of it (a sequence length such as 197), B
    is padded with zero columns to one (``batch_matmul_pad``: a CPU schedule materialises it, a
    GPU one inlines it), the product computed over the padded columns and the output sliced
    from it: every vector of a row tile is whole, none guarded."""
    ash, bsh = const_shape(a), const_shape(b)
    if len(ash) < 2 or len(bsh) < 2 or ash[-1] != bsh[-2]:
        raise ValueError(f"batch_matmul: needs [..., N, K] x [..., K, M], got {ash} and {bsh}")
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(ash[:-2], bsh[:-2]))
    except ValueError:
        raise ValueError(f"batch_matmul: the batch dimensions of {ash} and {bsh} do not broadcast") from None
    n, k, m = ash[-2], ash[-1], bsh[-1]
    out_dtype = out_dtype or a.dtype
    mp = -(-m // col_block) * col_block if col_block and m > col_block else m
    if mp != m:
        src = b
        zero = te.const(0, b.dtype)
        b = te.compute((*bsh[:-1], mp), lambda *i: te.if_then_else(i[-1] < m, src[i], zero), name="b_pad",
                       tag="batch_matmul_pad")
    r = te.reduce_axis((0, k), name="k")

    def bidx(shape: tuple[int, ...], idx: tuple[Expr, ...]) -> list[Expr]:
        """``idx`` (the output's batch indices) read from an operand of batch ``shape`` (1: broadcast)."""
        off = len(batch) - len(shape)
        return [make_const(0, "int32") if d == 1 else idx[off + q] for q, d in enumerate(shape)]

    def fcompute(*idx: Expr) -> Expr:
        bi, i, j = idx[:-2], idx[-2], idx[-1]
        return te.sum(a[(*bidx(ash[:-2], bi), i, r)].astype(out_dtype)
                      * b[(*bidx(bsh[:-2], bi), r, j)].astype(out_dtype), axis=r)

    c = te.compute((*batch, n, mp), fcompute, name="batch_matmul", tag="batch_matmul",
                   attrs={"workload": ["batch_matmul.x86", [list(ash), list(bsh)]]})
    if mp == m:
        return c
    return te.compute((*batch, n, m), lambda *i: c[i], name="batch_matmul_slice", tag=INJECTIVE)


def workload(n: int, m: int, k: int) -> list[object]:
    """The key tuned records of this product are found by (the ``matmul.x86`` template's args)."""
    return ["matmul.x86", [n, m, k]]


def panel_width(n: int, m: int, k: int) -> int | None:
    """The panel width ``bn`` of the tuned record of ``[n, m, k]`` under
    ``autotvm.apply_history_best`` (None: untuned)."""
    tuned = query("llvm", workload(n, m, k))
    return int(tuned["tile_bn"].val) if tuned is not None else None
