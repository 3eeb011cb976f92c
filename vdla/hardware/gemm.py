"""The GEMM array: BATCH x BLOCK_OUT dot products of BLOCK_IN signed products each.

``sums[b][o] = sum_c inp[b][c] * wgt[o][c]`` (weights are o-major, as VTA stores them),
exact, then cut to acc_width bits (accumulation wraps there anyway). Three steps: the
operands are registered (``inp`` and ``wgt`` come straight from the block RAMs), the
products are registered, then a balanced adder tree of depth log2(BLOCK_IN) sums them
combinationally (``sums`` belongs to the operands of two cycles before); the compute
pipeline registers the sums. The registers split block-RAM read, multiply and add, which
on an FPGA would otherwise all fall in one clock period. They hold data only (the compute
pipeline's valid bits say when it counts), so they have no reset.

Every INP element meets all BLOCK_OUT weight rows, so one INP register would drive
BLOCK_OUT multipliers spread over the DSP columns and the LUT lanes: each output lane
gets its own copy (``inp_q_{o}``), which the board build keeps apart (Yosys would merge
identical registers; `vdla.hardware.boards.build` marks these ``keep``).

With ``Config.operand_read_register`` the operands are registered once more as they leave
the block RAMs (``sums`` then belongs to the operands of three cycles before): a block
RAM's output is slow (5.8 ns on ECP5), and the 85F's critical path was that output routed
across the die to a far lane's INP copy. The INP word gets ``inp_groups`` copies of that
first register (``inp_r_{g}``), each feeding the lane copies of ``block_out / inp_groups``
consecutive lanes: the lanes a WGT column slice feeds, so each copy sits near its slice.

With ``Config.inp_fanout_register`` the INP word is registered once more after that
(``sums`` a cycle later again), into ``inp_groups`` copies (``inp_f_{g}``) that then feed
the lane copies, while ``inp_r`` is a single register (on the ECP5 builds the block RAM's
own output register): on the 85F one register driving all lanes' multiplier inputs was
the critical path, 13-16 ns of route. ``wgt`` is not registered again: it belongs to the
``inp`` of the cycle before (the tensor pipeline reads the WGT buffer a cycle later).

With ``Config.gemm_sum_register`` the adder tree is cut halfway: each group of
``2**ceil(log2(block_in) / 2)`` products is summed into a register (``part_{b}_{o}_{g}``)
and the rest of the tree sums those (``sums`` a cycle later again). On the 85F the products
of multipliers spread over the DSP rows, summed whole in one period, were a critical path.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal, Value, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import Config

__all__ = ["GemmArray", "adder_tree"]


def adder_tree(terms: list[Value]) -> Value:
    """Sum `terms` in a balanced binary tree."""
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


class GemmArray(wiring.Component):
    def __init__(self, config: Config, *, inp_groups: int = 1) -> None:
        self.config = c = config
        if inp_groups < 1 or c.block_out % inp_groups:
            raise ValueError(f"inp_groups={inp_groups} must divide block_out ({c.block_out})")
        self.inp_groups = inp_groups
        super().__init__({
            "inp": In(unsigned(8 * c.inp_elem_bytes)),
            "wgt": In(unsigned(8 * c.wgt_elem_bytes)),
            "sums": Out(unsigned(8 * c.acc_elem_bytes)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        wgt_in, inp_in = self.wgt, [self.inp] * self.inp_groups
        if c.operand_read_register:
            # with the fan-out register, the group copies come after this one
            read_copies = 1 if c.inp_fanout_register else self.inp_groups
            wgt_in = Signal.like(self.wgt, name="wgt_r", reset_less=True)
            inp_in = [Signal.like(self.inp, name=f"inp_r_{g}", reset_less=True) for g in range(read_copies)]
            m.d.sync += [wgt_in.eq(self.wgt), *(r.eq(self.inp) for r in inp_in)]
        if c.inp_fanout_register:  # WGT needs no register here: the tensor pipeline reads it a cycle later
            groups = [Signal.like(self.inp, name=f"inp_f_{g}", reset_less=True) for g in range(self.inp_groups)]
            m.d.sync += [f.eq(inp_in[0]) for f in groups]
            inp_in = groups
        wgt = Signal.like(self.wgt, name="wgt_q", reset_less=True)
        m.d.sync += wgt.eq(wgt_in)
        copies = []
        for o in range(c.block_out):
            copies.append(Signal.like(self.inp, name=f"inp_q_{o}", reset_less=True))
            m.d.sync += copies[o].eq(inp_in[o * self.inp_groups // c.block_out])
        lanes = []
        for b in range(c.batch):
            for o in range(c.block_out):
                products = []
                for k in range(c.block_in):
                    p = Signal(signed(c.inp_width + c.wgt_width), name=f"prod_{b}_{o}_{k}", reset_less=True)
                    m.d.sync += p.eq(copies[o].word_select(b * c.block_in + k, c.inp_width).as_signed()
                                     * wgt.word_select(o * c.block_in + k, c.wgt_width).as_signed())
                    products.append(p)
                if c.gemm_sum_register:
                    group = 1 << -(-(c.block_in.bit_length() - 1) // 2)  # 2**ceil(log2(block_in) / 2)
                    parts = []
                    for g in range(0, c.block_in, group):
                        part = Signal(signed(len(products[0]) + group.bit_length() - 1), name=f"part_{b}_{o}_{g // group}",
                                      reset_less=True)
                        m.d.sync += part.eq(adder_tree(products[g:g + group]))
                        parts.append(part)
                    products = parts
                lane = Signal(signed(c.acc_width), name=f"sum_{b}_{o}")  # sign-extends or wraps
                m.d.comb += lane.eq(adder_tree(products))
                lanes.append(lane)

        m.d.comb += self.sums.eq(Cat(*lanes))
        return m
