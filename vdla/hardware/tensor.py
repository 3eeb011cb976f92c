"""The tensor pipeline of the compute stage: GEMM and ALU over a micro-op loop, one
uop-iteration per cycle.

For ``i < iter_out, j < iter_in, k in [uop_bgn, uop_end)`` the iteration uses micro-op
``uop[k]`` with indices ``dst + i*dst_factor_out + j*dst_factor_in`` (likewise src, wgt;
kept as running sums, no multipliers). Stages:

- S0: the loop counters address the uop buffer;
- S1: the micro-op arrives; the indices address INP[src] and WGT[wgt];
- S2: INP/WGT arrive and are registered (so the multipliers start from a register, not
  from a block RAM's slow output across the chip);
- S2r: the GEMM array registers the products; the indices address ACC[dst], ACC[src];
- S2b: the ACC operands arrive and take the value being written by S3 or the one
  written in the previous cycle when the row matches (forwarding: back-to-back
  iterations that hit the same accumulator row see each other, as in program order);
  the GEMM array's adder tree sums the products;
- S3: ACC[dst] := reset ? 0 : ACC[dst] + dot (GEMM) or op(ACC[dst], imm or ACC[src])
  (ALU); OUT[dst] := the low out_width bits of each lane.

Indices past a buffer: the running sums carry one sticky bit above the index width (depths
are powers of two, so "index >= depth" is a carry out or a high bit); S1 pulses
``index_error`` for an iteration whose ACC (dst), INP (GEMM src), ACC (ALU src) or WGT
index is past its buffer, checking what the golden simulator checks (no src/wgt for a GEMM
reset, no src for an ALU immediate). The pipeline runs on with wrapped addresses; its
owner (`Compute`) drops the writes once the core has halted on the error.

Pulse ``start`` with ``insn`` (a GEMM or ALU instruction, held stable); ``done`` pulses
once the last write has happened.
"""

from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .alu import TensorAlu
from .gemm import GemmArray
from .interfaces import sram_read, sram_write

__all__ = ["TensorPipeline"]


class TensorPipeline(wiring.Component):
    def __init__(self, config: Config) -> None:
        self.config = c = config
        acc_bits = 8 * c.acc_elem_bytes
        super().__init__({
            "start": In(1),
            "insn": In(unsigned(isa.INSN_BITS)),
            "busy": Out(1),
            "done": Out(1),
            "uop_rd": Out(sram_read(c.log_uop_depth, 32)),
            "inp_rd": Out(sram_read(c.log_inp_depth, 8 * c.inp_elem_bytes)),
            "wgt_rd": Out(sram_read(c.log_wgt_depth, 8 * c.wgt_elem_bytes)),
            "acc_rd_dst": Out(sram_read(c.log_acc_depth, acc_bits)),
            "acc_rd_src": Out(sram_read(c.log_acc_depth, acc_bits)),
            "acc_wr": Out(sram_write(c.log_acc_depth, acc_bits)),
            "out_wr": Out(sram_write(c.log_acc_depth, 8 * c.out_elem_bytes)),
            "gemm_iter": Out(1),
            "alu_iter": Out(1),
            "index_error": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        g = data.View(isa.amaranth_layout(c, "gemm"), self.insn)
        a = data.View(isa.amaranth_layout(c, "alu"), self.insn)
        is_alu = g.opcode == isa.Op.ALU
        acc_bits, lanes = 8 * c.acc_elem_bytes, c.batch * c.block_out
        dw, sw, ww = c.log_acc_depth, c.uop_src_bits, c.log_wgt_depth

        # -- S0: loop counters ---------------------------------------------------------------
        run = Signal()
        k = Signal(c.log_uop_depth + 1)
        i, j = Signal(c.loop_iter_width), Signal(c.loop_iter_width)
        # i*f_out, i*f_out + j*f_in, each with a sticky carry bit on top (the sum passed 2**width)
        dst_out, dst_cur = Signal(dw + 1), Signal(dw + 1)
        src_out, src_cur = Signal(sw + 1), Signal(sw + 1)
        wgt_out, wgt_cur = Signal(ww + 1), Signal(ww + 1)

        def step(acc: Signal, f) -> Value:
            n = len(acc) - 1
            total = acc[:n] + f
            return Cat(total[:n], total[n] | acc[n])

        src_f_out = Mux(is_alu, a.src_factor_out, g.src_factor_out)
        src_f_in = Mux(is_alu, a.src_factor_in, g.src_factor_in)
        empty = (g.uop_end <= g.uop_bgn) | (g.iter_out == 0) | (g.iter_in == 0)
        with m.If(self.start):
            m.d.sync += [
                run.eq(~empty), k.eq(g.uop_bgn), i.eq(0), j.eq(0),
                dst_out.eq(0), dst_cur.eq(0), src_out.eq(0), src_cur.eq(0), wgt_out.eq(0), wgt_cur.eq(0),
            ]
        with m.Elif(run):
            with m.If(k == g.uop_end - 1):
                m.d.sync += k.eq(g.uop_bgn)
                with m.If(j == g.iter_in - 1):
                    m.d.sync += [
                        j.eq(0), i.eq(i + 1),
                        dst_out.eq(step(dst_out, g.dst_factor_out)), dst_cur.eq(step(dst_out, g.dst_factor_out)),
                        src_out.eq(step(src_out, src_f_out)), src_cur.eq(step(src_out, src_f_out)),
                        wgt_out.eq(step(wgt_out, g.wgt_factor_out)), wgt_cur.eq(step(wgt_out, g.wgt_factor_out)),
                    ]
                    with m.If(i == g.iter_out - 1):
                        m.d.sync += run.eq(0)
                with m.Else():
                    m.d.sync += [
                        j.eq(j + 1), dst_cur.eq(step(dst_cur, g.dst_factor_in)),
                        src_cur.eq(step(src_cur, src_f_in)), wgt_cur.eq(step(wgt_cur, g.wgt_factor_in)),
                    ]
            with m.Else():
                m.d.sync += k.eq(k + 1)
        m.d.comb += self.uop_rd.addr.eq(k)

        # -- S1: micro-op -> operand addresses ---------------------------------------------
        s1_valid = Signal()
        s1_dst, s1_src, s1_wgt = Signal(dw + 1), Signal(sw + 1), Signal(ww + 1)
        m.d.sync += [s1_valid.eq(run), s1_dst.eq(dst_cur), s1_src.eq(src_cur), s1_wgt.eq(wgt_cur)]
        uop = data.View(isa.amaranth_layout(c, "uop"), self.uop_rd.data)
        dst = Signal(dw)
        src = Signal(sw)
        wgt = Signal(ww)
        dst_full, src_full, wgt_full = uop.dst_idx + s1_dst[:dw], uop.src_idx + s1_src[:sw], uop.wgt_idx + s1_wgt[:ww]
        m.d.comb += [
            dst.eq(dst_full), src.eq(src_full), wgt.eq(wgt_full),
            self.inp_rd.addr.eq(src), self.wgt_rd.addr.eq(wgt),
        ]
        # Past the buffer: a carry (now or earlier), or a bit at or above log2(depth) set.
        dst_past = dst_full[c.log_acc_depth:].any() | s1_dst[dw]
        src_past = Mux(is_alu, src_full[c.log_acc_depth:].any(), src_full[c.log_inp_depth:].any()) | s1_src[sw]
        wgt_past = wgt_full[c.log_wgt_depth:].any() | s1_wgt[ww]
        check_src = Mux(is_alu, ~a.use_imm, ~g.reset)
        m.d.comb += self.index_error.eq(s1_valid & (dst_past | (check_src & src_past) | (~is_alu & ~g.reset & wgt_past)))

        # -- S2: INP/WGT registered -----------------------------------------------------------
        s2_valid, s2_dst, s2_src = Signal(), Signal(dw), Signal(dw)
        m.d.sync += [s2_valid.eq(s1_valid), s2_dst.eq(dst), s2_src.eq(src[:dw])]
        inp_q, wgt_q = Signal.like(self.inp_rd.data), Signal.like(self.wgt_rd.data)
        m.d.sync += [inp_q.eq(self.inp_rd.data), wgt_q.eq(self.wgt_rd.data)]

        # -- S2r: products; ACC read (two cycles after INP/WGT, to meet the sums) --------------
        s2r_valid, s2r_dst, s2r_src = Signal(), Signal(dw), Signal(dw)
        m.d.sync += [s2r_valid.eq(s2_valid), s2r_dst.eq(s2_dst), s2r_src.eq(s2_src)]
        m.d.comb += [self.acc_rd_dst.addr.eq(s2r_dst), self.acc_rd_src.addr.eq(s2r_src)]

        # -- S2b: sums, ACC operands (with forwarding) -------------------------------------------
        s2b_valid, s2b_dst, s2b_src = Signal(), Signal(dw), Signal(dw)
        m.d.sync += [s2b_valid.eq(s2r_valid), s2b_dst.eq(s2r_dst), s2b_src.eq(s2r_src)]
        s3_valid, s3_dst = Signal(), Signal(dw)
        s3_a, s3_b, s3_sum = Signal(acc_bits), Signal(acc_bits), Signal(acc_bits)
        result = Signal(acc_bits)
        w_valid, w_dst, w_value = Signal(), Signal(dw), Signal(acc_bits)

        def forwarded(row: Signal, memory_data: Signal):
            return Mux(s3_valid & (s3_dst == row), result,
                       Mux(w_valid & (w_dst == row), w_value, memory_data))

        m.submodules.gemm = gemm = GemmArray(c)
        imm = Signal(signed(c.acc_width))
        m.d.comb += [gemm.inp.eq(inp_q), gemm.wgt.eq(wgt_q), imm.eq(a.imm)]
        m.d.sync += [
            s3_valid.eq(s2b_valid), s3_dst.eq(s2b_dst),
            s3_a.eq(forwarded(s2b_dst, self.acc_rd_dst.data)),
            s3_b.eq(Mux(a.use_imm, imm.as_unsigned().replicate(lanes), forwarded(s2b_src, self.acc_rd_src.data))),
            s3_sum.eq(gemm.sums),
        ]

        # -- S3: result, writes ------------------------------------------------------------------
        m.submodules.alu = alu = TensorAlu(c)
        m.d.comb += [alu.op.eq(a.alu_opcode), alu.a.eq(s3_a), alu.b.eq(s3_b)]
        w = c.acc_width
        accumulated = Cat(*((s3_a.word_select(n, w) + s3_sum.word_select(n, w))[:w] for n in range(lanes)))
        m.d.comb += result.eq(Mux(is_alu, alu.out, Mux(g.reset, 0, accumulated)))
        m.d.comb += [
            self.acc_wr.en.eq(s3_valid), self.acc_wr.addr.eq(s3_dst), self.acc_wr.data.eq(result),
            self.out_wr.en.eq(s3_valid), self.out_wr.addr.eq(s3_dst),
            self.out_wr.data.eq(Cat(*(result.word_select(n, w)[: c.out_width] for n in range(lanes)))),
            self.gemm_iter.eq(s3_valid & ~is_alu & ~g.reset),
            self.alu_iter.eq(s3_valid & is_alu),
        ]
        m.d.sync += [w_valid.eq(s3_valid), w_dst.eq(s3_dst), w_value.eq(result)]

        # -- completion ---------------------------------------------------------------------------
        active = Signal()
        drained = ~run & ~s1_valid & ~s2_valid & ~s2r_valid & ~s2b_valid & ~s3_valid
        m.d.comb += self.busy.eq(active | self.start)
        with m.If(self.start):
            m.d.sync += active.eq(1)
        with m.Elif(active & drained):
            m.d.sync += active.eq(0)
            m.d.comb += self.done.eq(1)
        return m
