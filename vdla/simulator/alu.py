"""Tensor ALU semantics on numpy arrays (the golden definition of MIN/MAX/ADD/SHR/MUL).

All operands arrive as int64 and results wrap to the accumulator width; see
`vdla.isa.SEMANTIC_CHOICES` for the choices made where VTA's implementations differ.
"""

from __future__ import annotations

import numpy as np

from ..isa import AluOp

__all__ = ["apply", "wrap", "shift_amount"]


def wrap(x: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of int64 values to `bits` bits (result stays int64)."""
    half = np.int64(1 << (bits - 1))
    return ((x + half) & np.int64((1 << bits) - 1)) - half


def shift_amount(b: np.ndarray, acc_width: int) -> np.ndarray:
    """The signed shift amount SHR reads from its operand: the low log2(acc_width)+1 bits."""
    bits = acc_width.bit_length()  # log2(acc_width) + 1 for a power of two
    return wrap(np.asarray(b, dtype=np.int64), bits)


def apply(op: int, a: np.ndarray, b: np.ndarray, acc_width: int) -> np.ndarray:
    """op(a, b) element-wise on int64 arrays holding acc_width-bit values."""
    if op == AluOp.MIN:
        return np.minimum(a, b)
    if op == AluOp.MAX:
        return np.maximum(a, b)
    if op == AluOp.ADD:
        return wrap(a + b, acc_width)
    if op == AluOp.MUL:
        # |a|, |b| < 2^31, so the int64 product is exact before wrapping.
        return wrap(a * b, acc_width)
    if op == AluOp.SHR:
        n = shift_amount(b, acc_width)
        right = a >> np.clip(n, 0, acc_width - 1)
        left = wrap(a << np.clip(-n, 0, acc_width), acc_width)
        return np.where(n >= 0, right, left)
    raise ValueError(f"unknown ALU opcode {op}")
