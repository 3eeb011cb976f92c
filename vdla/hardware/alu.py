"""The tensor ALU: one operation over all BATCH x BLOCK_OUT accumulator lanes, in two stages.

Per lane, on acc_width-bit two's-complement values (`vdla.isa.SEMANTIC_CHOICES`):
MIN, MAX (signed), ADD (wraps), MUL (low acc_width bits of the signed product) and SHR,
whose amount is the low log2(acc_width)+1 bits of the operand read as a signed number:
>= 0 is an arithmetic right shift, < 0 a left shift by its magnitude (wrapping).

The result comes one clock after the operands (`TensorAlu.LATENCY`). The first stage
registers MIN/MAX/ADD/SHR's result and the three half-width partial products of MUL (one
DSP multiplier each; a 16-bit lane's whole product on one); the second adds them and picks.
A whole acc_width multiply, its adders and the write-back in one cycle were the ECP5 builds'
critical path. With ``Config.alu_compare_register`` MIN/MAX's compare is registered (one bit)
with the operand it may pick, and the pick is made in the second stage: on the 85F the
compare's 32-bit carry chain routed into the select of all 32 result bits was next. The
registers carry data only (the pipeline's valid bits say when it counts), so they have no
reset: a reset net reaching every datapath flip-flop was itself a critical path.
The low acc_width bits of a product do not depend on signedness, so the halves are unsigned:
``a*b mod 2**w = lo(a)*lo(b) + ((hi(a)*lo(b) + lo(a)*hi(b)) mod 2**(w-h)) * 2**h``.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import Config
from ..isa import AluOp

__all__ = ["TensorAlu", "alu_lane"]


#: The widest operands one DSP multiplier takes (iCE40 SB_MAC16: 16 x 16; ECP5 MULT18X18D: 18 x 18).
SINGLE_MULTIPLIER_BITS = 16


def alu_lane(m: Module, op: Value, a: Value, b: Value, width: int, *, compare_register: bool = False) -> Value:
    """op(a, b) for one lane, a cycle later; `a`, `b` are `width`-bit raw values, `op` a
    register (the registers go into `m`), the result is `width` bits. With
    `compare_register` (`Config.alu_compare_register`) MIN/MAX register their compare and
    `b`, and pick in the second stage."""
    a, b = a.as_signed(), b.as_signed()
    sbits = width.bit_length()  # log2(width) + 1
    amount = b[:sbits].as_signed()
    right = a >> amount[: sbits - 1]
    left = (a << (-amount)[:sbits])[:width]
    shifted = Mux(amount[-1], left, right[:width])
    other = Signal(width, reset_less=True)
    if compare_register:
        minmax = (op == AluOp.MIN) | (op == AluOp.MAX)
        # `other` takes a, and the second stage picks b where MIN/MAX say (b_q, pick_b):
        # the compare's carry chain then ends in one flip-flop, not in the select of every bit.
        pick_b, b_q = Signal(reset_less=True), Signal(width, reset_less=True)
        m.d.sync += [other.eq(Mux(minmax, a[:width], Mux(op == AluOp.ADD, (a + b)[:width], shifted))), b_q.eq(b),
                     pick_b.eq(minmax & ((a < b) == (op == AluOp.MAX)))]
    else:
        m.d.sync += other.eq(
            Mux(op == AluOp.MIN, Mux(a < b, a, b)[:width],
                Mux(op == AluOp.MAX, Mux(a < b, b, a)[:width],
                    Mux(op == AluOp.ADD, (a + b)[:width], shifted))))
    ua, ub = a.as_unsigned(), b.as_unsigned()
    if width <= SINGLE_MULTIPLIER_BITS:  # one DSP block does it: register its product
        product = Signal(width, reset_less=True)
        m.d.sync += product.eq((ua * ub)[:width])
    else:
        h = (width + 1) // 2
        low = Signal(2 * h, reset_less=True)
        cross_a, cross_b = Signal(width - h, reset_less=True), Signal(width - h, reset_less=True)
        m.d.sync += [
            low.eq(ua[:h] * ub[:h]),
            cross_a.eq((ua[h:] * ub[:h])[: width - h]),
            cross_b.eq((ua[:h] * ub[h:])[: width - h]),
        ]
        product = (low + Cat(Const(0, h), cross_a + cross_b))[:width]
    is_mul = Signal(reset_less=True)
    m.d.sync += is_mul.eq(op == AluOp.MUL)
    if compare_register:
        return Mux(is_mul, product, Mux(pick_b, b_q, other))
    return Mux(is_mul, product, other)


class TensorAlu(wiring.Component):
    """The ALU over all lanes. `op` is an instruction's, held while it runs: it is taken a
    cycle ahead of the operands (`OP_LEAD`)."""

    #: Clock cycles from operands (`a`, `b`) to `out`.
    LATENCY = 1
    #: Clock cycles `op` must be ahead of the operands it applies to.
    OP_LEAD = 1

    def __init__(self, config: Config) -> None:
        self.config = c = config
        bits = 8 * c.acc_elem_bytes
        super().__init__({"op": In(3), "a": In(unsigned(bits)), "b": In(unsigned(bits)), "out": Out(unsigned(bits))})

    def elaborate(self, platform) -> Module:
        m = Module()
        w = self.config.acc_width
        lanes = len(self.a) // w
        # Each lane decodes its own registered copy of `op` (kept apart by the board build):
        # the decode of one copy reaching every lane's multiplexers was an ECP5 critical path.
        ops = [Signal.like(self.op, name=f"op_{k}", reset_less=True) for k in range(lanes)]
        m.d.sync += [copy.eq(self.op) for copy in ops]
        m.d.comb += self.out.eq(
            Cat(*(alu_lane(m, ops[k], self.a.word_select(k, w), self.b.word_select(k, w), w,
                           compare_register=self.config.alu_compare_register) for k in range(lanes)))
        )
        return m
