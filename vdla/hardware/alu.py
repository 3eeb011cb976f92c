"""The tensor ALU: one operation over all BATCH x BLOCK_OUT accumulator lanes.

Per lane, on acc_width-bit two's-complement values (`vdla.isa.SEMANTIC_CHOICES`):
MIN, MAX (signed), ADD (wraps), MUL (low acc_width bits of the signed product) and SHR,
whose amount is the low log2(acc_width)+1 bits of the operand read as a signed number:
>= 0 is an arithmetic right shift, < 0 a left shift by its magnitude (wrapping).
Purely combinational; the compute pipeline registers around it.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Value, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import Config
from ..isa import AluOp

__all__ = ["TensorAlu", "alu_lane"]


def alu_lane(op: Value, a: Value, b: Value, width: int) -> Value:
    """op(a, b) for one lane; `a`, `b` are `width`-bit raw values, the result is `width` bits."""
    a, b = a.as_signed(), b.as_signed()
    sbits = width.bit_length()  # log2(width) + 1
    amount = b[:sbits].as_signed()
    right = a >> amount[: sbits - 1]
    left = (a << (-amount)[:sbits])[:width]
    shifted = Mux(amount[-1], left, right[:width])
    return Mux(
        op == AluOp.MIN, Mux(a < b, a, b)[:width],
        Mux(op == AluOp.MAX, Mux(a < b, b, a)[:width],
            Mux(op == AluOp.ADD, (a + b)[:width],
                Mux(op == AluOp.SHR, shifted,
                    (a * b)[:width]))))


class TensorAlu(wiring.Component):
    def __init__(self, config: Config) -> None:
        self.config = c = config
        bits = 8 * c.acc_elem_bytes
        super().__init__({"op": In(3), "a": In(unsigned(bits)), "b": In(unsigned(bits)), "out": Out(unsigned(bits))})

    def elaborate(self, platform) -> Module:
        m = Module()
        w = self.config.acc_width
        lanes = len(self.a) // w
        m.d.comb += self.out.eq(
            Cat(*(alu_lane(self.op, self.a.word_select(k, w), self.b.word_select(k, w), w) for k in range(lanes)))
        )
        return m
