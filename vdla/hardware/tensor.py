"""The tensor pipeline of the compute stage: GEMM and ALU over a micro-op loop, one
uop-iteration per cycle.

For ``i < iter_out, j < iter_in, k in [uop_bgn, uop_end)`` the iteration uses micro-op
``uop[k]`` with indices ``dst + i*dst_factor_out + j*dst_factor_in`` (likewise src, wgt;
kept as running sums, no multipliers). A GEMM with ``init`` reads its ACC operand from
the init row, CFG's ``init_base`` + the WGT index, instead of ACC[dst] (the ``cfg`` port:
what the last CFG set, `cfg_layout`). Stages:

- S0: the loop counters address the uop buffer (the init row's running sum starts at
  ``init_base``, so it needs no adder of its own later); with ``Config.gemm_window``, a
  saturating counter of the iterations of the inner-loop pass (``pos``, 0 at each outer
  iteration's first) gives each iteration its window flags: ``first`` (pos 0) and ``live``
  (not one of CFG's ``warmup`` first iterations of a window-mode GEMM), which go down the
  pipeline with it;
- S1: the micro-op arrives and is registered;
- S1q: the indices (micro-op + loop sums, the init row's too) are computed;
- S1a: the row the ACC operand is read from (``rd``: dst, or the init row) is registered
  with dst and src; the INP[src] and WGT[wgt] addresses are registered, WGT's once per column slice of
  the buffer (``wgt_slices``: each copy drives only its slice's block RAMs, which on a large
  part sit across the die from each other);
- S1b (only with ``Config.operand_read_register``): INP/WGT arrive and are registered
  (in the GEMM array, once more before its lane copies); the ACC side waits a stage, so
  the two meet again in S2r; S1c (only with ``Config.gemm_sum_register``): the ACC side
  waits one more, while the GEMM array registers its partial sums between S2r and S2b;
  S1d (only with ``Config.inp_fanout_register``): the ACC side waits one more, while the
  GEMM array copies the INP word once per lane group (WGT's addresses are registered once
  more in S1a, so its word arrives a cycle after INP's, as the GEMM array wants it);
- S2: INP/WGT arrive and the GEMM array registers them (so the multipliers start from a
  register, not from a block RAM's slow output across the chip); the indices address
  ACC[rd], ACC[src]. In CFG's window mode (a non-reset GEMM) the INP word comes with
  ``push`` and ``first`` (S1a's, registered as the word leaves the block RAM: in S2, or S1b
  with its optional registers), and lane o of the array takes channel o's last block_in
  rows of the pass instead (`GemmArray`: its window shifts the word in);
- S2r: the GEMM array registers the products; the ACC rows arrive and are registered
  (the block RAMs' output registers, in flip-flops: Yosys does not use the DP16KD's own);
- S2b: the ACC operands take the row's newest value when it is still in flight
  (forwarding: iterations that hit the same accumulator row see each other, as in
  program order; a row is compared with the row actually read, ``rd``): GEMM's
  accumulate from S3, any result from S4 or from the registers of the previous two
  cycles' writes; the GEMM array's adder tree sums the products;
- S3: GEMM: reset ? (init ? ACC[rd] : 0) : ACC[rd] + dot, into a register; ALU:
  op(ACC[dst], imm or ACC[src]) starts (`TensorAlu`'s first stage: partial products, the
  other operations);
- S3x (ALU only): the ALU's second stage (the partial products summed) into a register,
  so neither the multiplier nor its adders drive the far block RAMs;
- S4: ACC[dst] := the result (unless the iteration is a window-mode warm-up one: S3's
  ``live`` low, it goes no further than S3, so it writes neither ACC nor OUT and is no
  source of forwarding); OUT's value is registered: the low out_width bits of each
  lane, or for a GEMM under CFG's epilogue ``min(max(result >> shift, clip_lo), clip_hi)``
  (the shift and compares start from S4's register, off the forwarding paths);
- W: OUT[dst] := that value, a cycle after the ACC write. That is the cycle ``done``
  pulses in (S4 empty: drained), so it costs no cycle, and OUT is written before the
  instruction pushes its token to store (OUT's only reader).

GEMM runs one iteration per cycle. An ALU iteration whose operand row is one that either
of the two iterations just ahead writes waits until that one has reached S4 (two cycles
behind the one just ahead, one behind the one before; `Timing.alu_raw_distance`, counted
by `vdla.simulator.timing.alu_stall_cycles`), so no ALU result is forwarded
before it is registered.

Indices past a buffer: the running sums carry one sticky bit above the index width (depths
are powers of two, so "index >= depth" is a carry out or a high bit); S1 checks and
``index_error`` pulses a cycle later for an iteration whose ACC (dst), ACC (GEMM init row),
INP (GEMM src), ACC (ALU src) or WGT index is past its buffer, checking what the golden
simulator checks (no src/wgt for a GEMM reset, no src for an ALU immediate). The pipeline runs on with wrapped addresses; its
owner (`Compute`) drops the writes once the core has halted on the error.

Pulse ``start`` with ``insn`` (a GEMM or ALU instruction, held stable) and ``cfg`` (held
too); ``done`` pulses once the last ACC write has happened, with the last OUT write.
Built for a Config with ``gemm_epilogue`` off (a part with no room for them) it has neither init nor the
epilogue: the logic is constant and optimised away, and its owner refuses what would use it.
Likewise with ``Config.gemm_window`` off (the board configs) it has no window: no counter,
flags or GEMM array window are built.

Registers that carry data only (indices, operands, sums, results) have no reset: the valid
bits, which do, say when they count, and a reset net reaching every one of them was itself
a critical path on the ECP5 builds.
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

__all__ = ["STALL_GROUPS", "TensorPipeline", "cfg_layout"]

#: The stages each copy of the ALU hazard's `stall` register holds: S0's loop counters,
#: S1 and S1q with the uop buffer's read enable, S1a with the WGT addresses (and S1b-S1d), S2.
STALL_GROUPS = ("s0", "s1", "s1a", "s2")


def cfg_layout(config: Config) -> data.StructLayout:
    """The state a CFG instruction sets for the GEMMs after it: its fields past the common
    ones (opcode and flags), from the ISA table (init_base, shift, clip_lo, clip_hi, epilogue)."""
    lay = isa.layout(config)
    common = {s.name for s in lay.formats["finish"].slots}
    return data.StructLayout({s.name: (signed if s.signed else unsigned)(s.width)
                              for s in lay.formats["cfg"].slots if s.name not in common})


def data_reg(shape, name: str) -> Signal:
    """A register that carries data only (no reset; see the module doc)."""
    return Signal(shape, name=name, reset_less=True)


class TensorPipeline(wiring.Component):
    def __init__(self, config: Config, *, wgt_slices: int = 1) -> None:
        self.config = c = config
        self.wgt_slices = wgt_slices
        self.gemm_cfg = config.gemm_epilogue  # GEMM init and the epilogue (off: neither; `cfg` is not read)
        self.window = config.gemm_window  # CFG's window mode (off: none of its logic is built)
        acc_bits = 8 * c.acc_elem_bytes
        super().__init__({
            "start": In(1),
            "insn": In(unsigned(isa.INSN_BITS)),
            "cfg": In(cfg_layout(c)),
            "busy": Out(1),
            "done": Out(1),
            "uop_rd": Out(sram_read(c.log_uop_depth, 32)),
            "inp_rd": Out(sram_read(c.log_inp_depth, 8 * c.inp_elem_bytes)),
            "wgt_rd": Out(sram_read(c.log_wgt_depth, 8 * c.wgt_elem_bytes, copies=wgt_slices)),
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

        # An ALU read-after-write one or two iterations apart holds S0-S2 (see S2r). The
        # hazard is known a cycle ahead, so `stall` comes from registers: one per group of
        # stages it holds (`STALL_GROUPS`; the board build keeps them apart), as its enables
        # reach hundreds of flip-flops, on a large part across the die.
        stall_q = {group: Signal(name=f"stall_{group}") for group in STALL_GROUPS}

        # -- S0: loop counters ---------------------------------------------------------------
        run = Signal()
        k = Signal(c.log_uop_depth + 1)
        i, j = Signal(c.loop_iter_width), Signal(c.loop_iter_width)
        # i*f_out, i*f_out + j*f_in, each with a sticky carry bit on top (the sum passed 2**width)
        dst_out, dst_cur = Signal(dw + 1), Signal(dw + 1)
        src_out, src_cur = Signal(sw + 1), Signal(sw + 1)
        wgt_out, wgt_cur = Signal(ww + 1), Signal(ww + 1)
        # GEMM init's row, init_base + the WGT index: the same sums started at CFG's init_base,
        # wide enough for either index (a WGT buffer deeper than ACC, or the reverse)
        iw = max(dw, ww)
        init_out, init_cur = Signal(iw + 1), Signal(iw + 1)

        def step(acc: Signal, f) -> Value:
            n = len(acc) - 1
            total = acc[:n] + f
            return Cat(total[:n], total[n] | acc[n])

        # GEMM and ALU share the loop fields at the same bits (`isa._LOOPS`): read them as GEMM's
        uop_bgn, uop_end, iter_out, iter_in = g.uop_bgn, g.uop_end, g.iter_out, g.iter_in
        dst_f_out, dst_f_in = g.dst_factor_out, g.dst_factor_in
        src_f_out = Mux(is_alu, a.src_factor_out, g.src_factor_out)
        src_f_in = Mux(is_alu, a.src_factor_in, g.src_factor_in)
        empty = (uop_end <= uop_bgn) | (iter_out == 0) | (iter_in == 0)
        with m.If(self.start):
            m.d.sync += [
                run.eq(~empty), k.eq(uop_bgn), i.eq(0), j.eq(0),
                dst_out.eq(0), dst_cur.eq(0), src_out.eq(0), src_cur.eq(0), wgt_out.eq(0), wgt_cur.eq(0),
                init_out.eq(self.cfg.init_base), init_cur.eq(self.cfg.init_base),
            ]
        with m.Elif(run & ~stall_q["s0"]):
            with m.If(k == uop_end - 1):
                m.d.sync += k.eq(uop_bgn)
                with m.If(j == iter_in - 1):
                    m.d.sync += [
                        j.eq(0), i.eq(i + 1),
                        dst_out.eq(step(dst_out, dst_f_out)), dst_cur.eq(step(dst_out, dst_f_out)),
                        src_out.eq(step(src_out, src_f_out)), src_cur.eq(step(src_out, src_f_out)),
                        wgt_out.eq(step(wgt_out, g.wgt_factor_out)), wgt_cur.eq(step(wgt_out, g.wgt_factor_out)),
                        init_out.eq(step(init_out, g.wgt_factor_out)), init_cur.eq(step(init_out, g.wgt_factor_out)),
                    ]
                    with m.If(i == iter_out - 1):
                        m.d.sync += run.eq(0)
                with m.Else():
                    m.d.sync += [
                        j.eq(j + 1), dst_cur.eq(step(dst_cur, dst_f_in)),
                        src_cur.eq(step(src_cur, src_f_in)), wgt_cur.eq(step(wgt_cur, g.wgt_factor_in)),
                        init_cur.eq(step(init_cur, g.wgt_factor_in)),
                    ]
            with m.Else():
                m.d.sync += k.eq(k + 1)
        # Window mode (a non-reset GEMM under CFG's window): `pos` counts the iterations of the
        # inner-loop pass, 0 at its first (saturating: past warmup < block_in it only has to
        # stay there). The pass's first iteration clears the GEMM array's window (`first`); the
        # iterations before `warmup` write nothing (`live` low), carried down with `valid`.
        first0 = live0 = None
        if self.window:
            window_q = data_reg(1, "window_q")  # a registered decode of the held instruction, as init_q
            m.d.sync += window_q.eq(~is_alu & ~g.reset & self.cfg.window)
            pos = Signal(c.window_warmup_bits)
            with m.If(self.start):
                m.d.sync += pos.eq(0)
            with m.Elif(run & ~stall_q["s0"]):
                with m.If((k == uop_end - 1) & (j == iter_in - 1)):
                    m.d.sync += pos.eq(0)
                with m.Elif(~pos.all()):
                    m.d.sync += pos.eq(pos + 1)
            first0, live0 = pos == 0, ~window_q | (pos >= self.cfg.warmup)

        def carry(flag: Value | None, name: str) -> Signal | None:
            """A window flag registered into stage `name` (under the caller's condition)."""
            if flag is None:
                return None
            reg = data_reg(1, name)
            m.d.sync += reg.eq(flag)
            return reg

        # A stall holds S0, S1, S1q and S1a: the uop read port keeps S1's micro-op (en low).
        m.d.comb += [self.uop_rd.addr.eq(k), self.uop_rd.en.eq(~stall_q["s1"])]

        # -- S1: the micro-op arrives and is registered ------------------------------------
        # (a block RAM's output is slow; the index adders and the INP/WGT addresses start
        # from flip-flops instead)
        s1_dst, s1_src, s1_wgt = data_reg(dw + 1, "s1_dst"), data_reg(sw + 1, "s1_src"), data_reg(ww + 1, "s1_wgt")
        s1_init = data_reg(iw + 1, "s1_init")
        s1_valid = Signal()
        with m.If(~stall_q["s1"]):
            m.d.sync += [s1_valid.eq(run), s1_dst.eq(dst_cur), s1_src.eq(src_cur), s1_wgt.eq(wgt_cur), s1_init.eq(init_cur)]
            s1_first, s1_live = carry(first0, "s1_first"), carry(live0, "s1_live")
        s1q_valid = Signal()
        s1q_dst, s1q_src, s1q_wgt = data_reg(dw + 1, "s1q_dst"), data_reg(sw + 1, "s1q_src"), data_reg(ww + 1, "s1q_wgt")
        s1q_init = data_reg(iw + 1, "s1q_init")
        uop_q = data_reg(len(self.uop_rd.data), "uop_q")
        with m.If(~stall_q["s1"]):
            m.d.sync += [s1q_valid.eq(s1_valid), s1q_dst.eq(s1_dst), s1q_src.eq(s1_src), s1q_wgt.eq(s1_wgt),
                         s1q_init.eq(s1_init), uop_q.eq(self.uop_rd.data)]
            s1q_first, s1q_live = carry(s1_first, "s1q_first"), carry(s1_live, "s1q_live")

        # -- S1q: micro-op -> operand indices ------------------------------------------------
        uop = data.View(isa.amaranth_layout(c, "uop"), uop_q)
        dst = Signal(dw)
        src = Signal(sw)
        wgt = Signal(ww)
        dst_full, src_full, wgt_full = uop.dst_idx + s1q_dst[:dw], uop.src_idx + s1q_src[:sw], uop.wgt_idx + s1q_wgt[:ww]
        m.d.comb += [dst.eq(dst_full), src.eq(src_full), wgt.eq(wgt_full)]
        # Past the buffer: a carry (now or earlier), or a bit at or above log2(depth) set.
        dst_past = dst_full[c.log_acc_depth:].any() | s1q_dst[dw]
        src_past = Mux(is_alu, src_full[c.log_acc_depth:].any(), src_full[c.log_inp_depth:].any()) | s1q_src[sw]
        wgt_past = wgt_full[c.log_wgt_depth:].any() | s1q_wgt[ww]
        # GEMM init's ACC row: init_base + the WGT index (init_base is in the running sum)
        init_full = uop.wgt_idx + s1q_init[:iw]
        init = Signal(dw)
        m.d.comb += init.eq(init_full)
        init_past = init_full[c.log_acc_depth:].any() | s1q_init[iw]
        # GEMM with init (a registered copy of the held instruction's decode, as the ones in S2b):
        # its ACC operand is read from the init row, not from dst (with reset too: a copy)
        init_q = data_reg(1, "init_q")
        m.d.sync += init_q.eq(~is_alu & g.init if self.gemm_cfg else 0)
        check_src = Mux(is_alu, ~a.use_imm, ~g.reset)
        # Registered: the check sits behind the uop buffer's read and the index adders, and
        # the core's error latch is far away; the iteration is still five stages from its write.
        m.d.sync += self.index_error.eq(s1q_valid & (dst_past | (check_src & src_past) | (~is_alu & ~g.reset & wgt_past)
                                                     | (init_q & init_past)))

        # -- S1a: INP/WGT addresses registered ------------------------------------------------
        # One WGT address register per slice (the board build keeps the copies apart: Yosys
        # would merge them). A stall holds S1a too.
        # `rd`: the row the ACC operand is read from, which forwarding compares (dst, or the init row)
        # (without GEMM init, `rd` is dst: its registers are dst's)
        def rd_reg(name: str, dst_reg: Signal) -> Signal:
            return data_reg(dw, name) if self.gemm_cfg else dst_reg

        s1a_valid, s1a_dst, s1a_src = Signal(), data_reg(dw, "s1a_dst"), data_reg(sw, "s1a_src")
        s1a_rd = rd_reg("s1a_rd", s1a_dst)
        inp_addr = data_reg(c.log_inp_depth, "inp_addr")
        wgt_addr = [data_reg(ww, f"wgt_addr_{n}") for n in range(self.wgt_slices)]
        wgt_next = wgt
        if c.inp_fanout_register:  # WGT read a cycle after INP (see GemmArray)
            wgt_next = data_reg(ww, "s1a_wgt")
        with m.If(~stall_q["s1a"]):
            m.d.sync += [s1a_valid.eq(s1q_valid), s1a_dst.eq(dst), s1a_src.eq(src), inp_addr.eq(src)]
            s1a_first, s1a_live = carry(s1q_first, "s1a_first"), carry(s1q_live, "s1a_live")
            if self.gemm_cfg:
                m.d.sync += s1a_rd.eq(Mux(init_q, init, dst))
            m.d.sync += [copy.eq(wgt_next) for copy in wgt_addr]
            if c.inp_fanout_register:
                m.d.sync += wgt_next.eq(wgt)
        m.d.comb += self.inp_rd.addr.eq(inp_addr)
        if self.wgt_slices == 1:
            m.d.comb += self.wgt_rd.addr.eq(wgt_addr[0])
        else:
            m.d.comb += [self.wgt_rd.addr[n].eq(copy) for n, copy in enumerate(wgt_addr)]

        # -- S1b: INP/WGT read data registered (Config.operand_read_register) -------------------
        # The GEMM array registers the block RAMs' output once more; the ACC side waits here a
        # cycle, under S1a's stall (the registered operands are not held: an ALU instruction,
        # the only kind that stalls, does not use them).
        # Likewise S1c, for the GEMM adder tree's partial sums (Config.gemm_sum_register).
        pre2_valid, pre2_dst, pre2_src, pre2_rd, pre2_live = s1a_valid, s1a_dst, s1a_src[:dw], s1a_rd, s1a_live
        waits = []
        for stage in ("s1b", "s1c", "s1d")[:c.tensor_stages]:
            valid, dst, src = Signal(name=f"{stage}_valid"), data_reg(dw, f"{stage}_dst"), data_reg(dw, f"{stage}_src")
            rd = rd_reg(f"{stage}_rd", dst)
            with m.If(~stall_q["s1a"]):
                m.d.sync += [valid.eq(pre2_valid), dst.eq(pre2_dst), src.eq(pre2_src), rd.eq(pre2_rd)]
                live = carry(pre2_live, f"{stage}_live")
            pre2_valid, pre2_dst, pre2_src, pre2_rd, pre2_live = valid, dst, src, rd, live
            waits.append(valid)

        # -- S2: INP/WGT registered -----------------------------------------------------------
        # A stall holds S2 (its INP/WGT data is not used by an ALU instruction, the only kind
        # that stalls) and sends a bubble on to S2r.
        s2_valid, s2_dst, s2_src = Signal(), data_reg(dw, "s2_dst"), data_reg(dw, "s2_src")
        s2_rd = rd_reg("s2_rd", s2_dst)
        with m.If(~stall_q["s2"]):
            m.d.sync += [s2_valid.eq(pre2_valid), s2_dst.eq(pre2_dst), s2_src.eq(pre2_src), s2_rd.eq(pre2_rd)]
            s2_live = carry(pre2_live, "s2_live")
        # With Config.acc_read_register the ACC is read from S2's registers and the data is
        # registered on arrival (S2r), so the forwarding multiplexers in S2b start from
        # flip-flops, not from a block RAM's output; without, it is read from S2r's.
        early = c.acc_read_register
        if early:
            m.d.comb += [self.acc_rd_dst.addr.eq(s2_rd), self.acc_rd_src.addr.eq(s2_src)]

        # -- S2r: products; ACC data registered ------------------------------------------------
        s2r_valid, s2r_dst, s2r_src = Signal(), data_reg(dw, "s2r_dst"), data_reg(dw, "s2r_src")
        s2r_rd = rd_reg("s2r_rd", s2r_dst)
        m.d.sync += [s2r_valid.eq(s2_valid & ~stall_q["s2"]), s2r_dst.eq(s2_dst), s2r_src.eq(s2_src), s2r_rd.eq(s2_rd)]
        s2r_live = carry(s2_live, "s2r_live")
        if early:
            acc_dst_q, acc_src_q = data_reg(acc_bits, "acc_dst_q"), data_reg(acc_bits, "acc_src_q")
            m.d.sync += [acc_dst_q.eq(self.acc_rd_dst.data), acc_src_q.eq(self.acc_rd_src.data)]
        else:
            m.d.comb += [self.acc_rd_dst.addr.eq(s2r_rd), self.acc_rd_src.addr.eq(s2r_src)]
            acc_dst_q, acc_src_q = self.acc_rd_dst.data, self.acc_rd_src.data
        # The ALU's result is registered twice (S3x, S4) before it is written, so an ALU
        # iteration cannot take its operand from either of the two just ahead of it: when
        # the iteration entering S2r reads (dst, or src for a tensor operand) the row the one
        # in S2r or in S2b writes, it waits. GEMM's accumulate is a single add and is
        # forwarded from S3 instead.
        # Registered, it is computed from where the iterations will be next cycle: held, S2
        # keeps its iteration, S2r gets a bubble and S2b S2r's; otherwise each moves on one.
        def reads(dst: Value, src: Value, row: Signal) -> Value:
            return (dst == row) | (~a.use_imm & (src == row))

        s2b_valid, s2b_dst, s2b_src = Signal(), data_reg(dw, "s2b_dst"), data_reg(dw, "s2b_src")
        held = s2_valid & s2r_valid & reads(s2_dst, s2_src, s2r_dst)
        moving = pre2_valid & ((s2_valid & reads(pre2_dst, pre2_src, s2_dst))
                               | (s2r_valid & reads(pre2_dst, pre2_src, s2r_dst)))
        m.d.sync += [q.eq(is_alu & Mux(stall_q["s2"], held, moving)) for q in stall_q.values()]

        # -- S2b: sums, ACC operands (with forwarding) -------------------------------------------
        # An operand row may still be in flight: in S3 (GEMM only), in S4 (being written), or
        # written in one of the two previous cycles (after the read in S2, or in the same
        # cycle: the read ports are not transparent). The row matches are compared in S2r and
        # registered, so S2b's multiplexers select with flip-flops. What reaches S4 next comes
        # from S3 (GEMM) or S3x (ALU).
        m.d.sync += [s2b_valid.eq(s2r_valid), s2b_dst.eq(s2r_dst), s2b_src.eq(s2r_src)]
        s2b_live = carry(s2r_live, "s2b_live")
        s3_live = carry(s2b_live, "s3_live")
        # The instruction is held while it runs and its first iteration reaches S2r six (plus
        # one per S1b-S1d) cycles after `start`, so from there on the wide multiplexers select with registered
        # copies of its fields, not with decode logic on the instruction register (the
        # immediate needs none: it is the instruction register's bits, sign-extended).
        alu_q, use_imm_q, reset_q = data_reg(1, "alu_q"), data_reg(1, "use_imm_q"), data_reg(1, "reset_q")
        m.d.sync += [alu_q.eq(is_alu), use_imm_q.eq(a.use_imm), reset_q.eq(g.reset)]
        imm = Signal(signed(c.acc_width))
        m.d.comb += imm.eq(a.imm)
        s3_valid, s3_dst = Signal(), data_reg(dw, "s3_dst")
        # a GEMM iteration that writes (in window mode, not one of a pass's warm-up iterations)
        s2b_writes, s3_writes = (s2b_valid, s3_valid) if s3_live is None else (s2b_valid & s2b_live, s3_valid & s3_live)
        s3x_valid, s3x_dst = Signal(), data_reg(dw, "s3x_dst")
        pre4_valid, pre4_dst = Mux(alu_q, s3x_valid, s3_writes), Mux(alu_q, s3x_dst, s3_dst)
        s4_valid, s4_dst, s4_value = Signal(), data_reg(dw, "s4_dst"), data_reg(acc_bits, "s4_value")
        w_valid, w_dst, w_value = Signal(), data_reg(dw, "w_dst"), data_reg(acc_bits, "w_value")  # S4's write a cycle ago
        w2_value = data_reg(acc_bits, "w2_value")  # S4's write two cycles ago
        gemm_result = Signal(acc_bits)

        def matches(row: Signal, name: str) -> Signal:
            """Registered: will `row` (in S2r now) be in S3 (GEMM), S4, W (W2) when it reaches S2b?"""
            flags = data_reg(4 if early else 3, f"fwd_{name}")
            m.d.sync += flags.eq(Cat(~alu_q & s2b_writes & (s2b_dst == row), pre4_valid & (pre4_dst == row),
                                     s4_valid & (s4_dst == row), w_valid & (w_dst == row))[: len(flags)])
            return flags

        def newest(flags: Signal, memory: Signal, first: int) -> Signal:
            """The row's value from the youngest in-flight source from stage `first` on."""
            value = memory
            for flag, source in list(zip(flags, (gemm_result, s4_value, w_value, w2_value)))[first:][::-1]:
                value = Mux(flag, source, value)
            return value

        # (the ACC operand's row: dst, or GEMM init's row, so an init row that an iteration just
        # ahead writes is forwarded as a dst would be)
        dst_flags, src_flags = matches(s2r_rd, "dst"), matches(s2r_src, "src")
        s3_a, s3_b, s3_sum = data_reg(acc_bits, "s3_a"), data_reg(acc_bits, "s3_b"), data_reg(acc_bits, "s3_sum")

        # With the extra operand or fan-out register, one INP copy per WGT column slice (see GemmArray).
        m.submodules.gemm = gemm = GemmArray(c, inp_groups=self.wgt_slices if c.operand_read_register or c.inp_fanout_register else 1)
        m.d.comb += [gemm.inp.eq(self.inp_rd.data), gemm.wgt.eq(self.wgt_rd.data)]
        if self.window:  # the window flags of the INP word that arrives now: S1a's iteration's
            # (no stall to mind: only an ALU instruction stalls, and it pushes nothing)
            m.d.sync += [gemm.push.eq(s1a_valid & window_q), gemm.first.eq(s1a_first)]
        m.d.sync += [
            s3_valid.eq(s2b_valid), s3_dst.eq(s2b_dst),
            s3_a.eq(newest(dst_flags, acc_dst_q, 0)),
            # S3 holds a GEMM result only in GEMM instructions, which have no src operand
            s3_b.eq(Mux(use_imm_q, imm.as_unsigned().replicate(lanes), newest(src_flags, acc_src_q, 1))),
            s3_sum.eq(gemm.sums),
        ]

        # -- S3, S3x: result ----------------------------------------------------------------------
        m.submodules.alu = alu = TensorAlu(c)
        assert TensorAlu.LATENCY == 1  # S3 -> S3x; `op` is the held instruction's
        m.d.comb += [alu.op.eq(a.alu_opcode), alu.a.eq(s3_a), alu.b.eq(s3_b)]
        w = c.acc_width
        accumulated = Cat(*((s3_a.word_select(n, w) + s3_sum.word_select(n, w))[:w] for n in range(lanes)))
        # reset: zero, or with init the init row's value (a copy; s3_a holds that row's value)
        m.d.comb += gemm_result.eq(Mux(reset_q, Mux(init_q, s3_a, 0), accumulated))
        m.d.sync += [
            s3x_valid.eq(s3_valid & alu_q), s3x_dst.eq(s3_dst),
            s4_valid.eq(pre4_valid), s4_dst.eq(pre4_dst), s4_value.eq(Mux(alu_q, alu.out, gemm_result)),
        ]
        m.d.comb += [
            self.gemm_iter.eq(s3_valid & ~alu_q & ~reset_q),
            self.alu_iter.eq(s3_valid & alu_q),
        ]

        # -- S4: the ACC write; OUT's value ------------------------------------------------------------
        # OUT gets the low out_width bits of each lane, or for a GEMM under CFG's epilogue
        # min(max(value >> shift, clip_lo), clip_hi): computed from S4's register into one of
        # its own and written a cycle after ACC (W), off the forwarding paths. The pipeline is
        # drained (`done`) in that cycle: OUT is written before the instruction pushes a token.
        # The two compares run side by side: below clip_lo, the result is min(clip_lo, clip_hi),
        # which comes from a register (the CFG state is held while the instruction runs).
        # Without the epilogue (Config.gemm_epilogue off), OUT is written with ACC, its low bits, as VTA does.
        low = [s4_value.word_select(n, w)[: c.out_width] for n in range(lanes)]
        m.d.comb += [self.acc_wr.en.eq(s4_valid), self.acc_wr.addr.eq(s4_dst), self.acc_wr.data.eq(s4_value)]
        m.d.sync += [w_valid.eq(s4_valid), w_dst.eq(s4_dst), w_value.eq(s4_value), w2_value.eq(w_value)]
        if self.gemm_cfg:
            cfg = self.cfg
            epilogue_q, floor_q = data_reg(1, "epilogue_q"), data_reg(signed(c.out_width), "clip_floor_q")
            m.d.sync += [epilogue_q.eq(~is_alu & cfg.epilogue),
                         floor_q.eq(Mux(cfg.clip_lo > cfg.clip_hi, cfg.clip_hi, cfg.clip_lo))]
            narrowed = []
            for n in range(lanes):
                shifted = s4_value.word_select(n, w).as_signed() >> cfg.shift
                clipped = Mux(shifted < cfg.clip_lo, floor_q, Mux(shifted > cfg.clip_hi, cfg.clip_hi, shifted))
                narrowed.append(Mux(epilogue_q, clipped[: c.out_width], low[n]))
            out_value = data_reg(8 * c.out_elem_bytes, "out_value")
            m.d.sync += out_value.eq(Cat(*narrowed))

            # -- W: the OUT write ------------------------------------------------------------------------
            m.d.comb += [self.out_wr.en.eq(w_valid), self.out_wr.addr.eq(w_dst), self.out_wr.data.eq(out_value)]
        else:
            m.d.comb += [self.out_wr.en.eq(s4_valid), self.out_wr.addr.eq(s4_dst), self.out_wr.data.eq(Cat(*low))]

        # -- completion ---------------------------------------------------------------------------
        active = Signal()
        drained = ~run & ~s1_valid & ~s1q_valid & ~s1a_valid & ~s2_valid & ~s2r_valid & ~s2b_valid & ~s3_valid & ~s3x_valid & ~s4_valid
        for valid in waits:
            drained &= ~valid
        m.d.comb += self.busy.eq(active | self.start)
        with m.If(self.start):
            m.d.sync += active.eq(1)
        with m.Elif(active & drained):
            m.d.sync += active.eq(0)
            m.d.comb += self.done.eq(1)
        return m
