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

With ``Config.gemm_window`` (CFG's window mode, for depthwise convolutions; block_in ==
block_out) lane o's copy can instead take channel o's taps: element (b, t) of ``inp_q_{o}``
is INP element (b, o) of the word pushed t pushes ago (``W_t``, t < block_in), newest first,
so ``sums[b][o] = sum_t W_t[b][o] * wgt[o][t]``. ``push`` and ``first`` come with ``inp``
(the same cycle) and are registered alongside it wherever it is (``push_r``/``first_r``,
``push_f``/``first_f``): ``push`` marks a window-mode word (the copies take the window, and
the window shifts it in), ``first`` the first of an inner-loop pass (the older words count
as zero, and are cleared as it shifts in). The window is a shift register of the
block_in - 1 previous words, kept per lane (``win_{o}_{t}``: ``W_{t+1}``'s elements (b, o),
fed from the lane's INP group, so it splits as the copies do). Without the flag none of it
is built and the array has no ``push``/``first`` ports.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, Value, signed, unsigned
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
            **({"push": In(1), "first": In(1)} if c.gemm_window else {}),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        window = c.gemm_window
        wgt_in, inp_in = self.wgt, [self.inp] * self.inp_groups
        push, first = (self.push, self.first) if window else (None, None)  # the flags of the word in inp_in

        def delayed(suffix: str) -> tuple[Signal, Signal]:
            """push and first registered with the INP word (only where the window is built)."""
            if not window:
                return push, first
            regs = Signal(name=f"push_{suffix}"), Signal(name=f"first_{suffix}", reset_less=True)
            m.d.sync += [regs[0].eq(push), regs[1].eq(first)]
            return regs

        if c.operand_read_register:
            # with the fan-out register, the group copies come after this one
            read_copies = 1 if c.inp_fanout_register else self.inp_groups
            wgt_in = Signal.like(self.wgt, name="wgt_r", reset_less=True)
            inp_in = [Signal.like(self.inp, name=f"inp_r_{g}", reset_less=True) for g in range(read_copies)]
            m.d.sync += [wgt_in.eq(self.wgt), *(r.eq(self.inp) for r in inp_in)]
            push, first = delayed("r")
        if c.inp_fanout_register:  # WGT needs no register here: the tensor pipeline reads it a cycle later
            groups = [Signal.like(self.inp, name=f"inp_f_{g}", reset_less=True) for g in range(self.inp_groups)]
            m.d.sync += [f.eq(inp_in[0]) for f in groups]
            inp_in = groups
            push, first = delayed("f")
        wgt = Signal.like(self.wgt, name="wgt_q", reset_less=True)
        m.d.sync += wgt.eq(wgt_in)
        copies = []
        for o in range(c.block_out):
            copies.append(Signal.like(self.inp, name=f"inp_q_{o}", reset_less=True))
            word = inp_in[o * self.inp_groups // c.block_out]
            if not window:
                m.d.sync += copies[o].eq(word)
                continue
            # Lane o's window: win[t] holds elements (b, o) of W_{t+1}; the first word of a pass
            # sees zeros there, and shifts them in.
            ew = c.inp_width
            newest = Cat(*(word.word_select(b * c.block_in + o, ew) for b in range(c.batch)))
            win = [Signal(c.batch * ew, name=f"win_{o}_{t}", reset_less=True) for t in range(c.block_in - 1)]
            older = [Mux(first, 0, w) for w in win]
            taps = [newest, *older]  # W_0 ... W_{block_in - 1}, elements (b, o)
            with m.If(push):
                m.d.sync += [w.eq(v) for w, v in zip(win, taps)]
            windowed = Cat(*(taps[t].word_select(b, ew) for b in range(c.batch) for t in range(c.block_in)))
            m.d.sync += copies[o].eq(Mux(push, windowed, word))
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
