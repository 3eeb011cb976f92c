"""The compute stage: LOAD UOP / ACC / ACC_8BIT, GEMM, ALU and FINISH.

It owns the micro-op and accumulator buffers (as VTA's compute does) and reads INP and
WGT and writes OUT, which the core owns. Its tokens: pop_prev waits for load's l2g
token (RAW), pop_next for store's s2g token (WAR on OUT); after an instruction
completes, push_prev sends g2l (load may overwrite INP/WGT) and push_next sends g2s
(OUT holds results). Instructions run one at a time; GEMM and ALU go through the
`TensorPipeline` at one uop-iteration per cycle. FINISH completes like any instruction
(it may carry flags) and then pulses ``finish``. LOADs with x_size = 0 are NOPs.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .buffers import make_buffer, write_lanes
from .dma import Loader2D
from .interfaces import connect_read_port, read_master, sram_read, sram_write, token
from .load import mux_read_master
from .stage import State, stage_status
from .tensor import TensorPipeline
from .tokens import TokenPorts

__all__ = ["Compute"]


class Compute(wiring.Component):
    def __init__(self, config: Config) -> None:
        self.config = c = config
        self.uop_loader = Loader2D(c, c.uop_elem_bytes, c.log_uop_depth)
        self.acc_loader = Loader2D(c, c.acc_elem_bytes, c.log_acc_depth)
        self.acc8_loader = Loader2D(c, c.acc8_elem_bytes, c.log_acc_depth, widen=c.acc_width)
        self.tensor = TensorPipeline(c)
        super().__init__({
            "cmd": In(stream.Signature(isa.INSN_BITS)),
            "l2g": In(token()),
            "s2g": In(token()),
            "g2l": Out(token()),
            "g2s": Out(token()),
            "mem": Out(read_master(c.bus_width)),
            "inp_rd": Out(sram_read(c.log_inp_depth, 8 * c.inp_elem_bytes)),
            "wgt_rd": Out(sram_read(c.log_wgt_depth, 8 * c.wgt_elem_bytes)),
            "out_wr": Out(sram_write(c.log_acc_depth, 8 * c.out_elem_bytes)),
            "finish": Out(1),
            "uop_elem": Out(1),
            "acc_elem": Out(1),
            "gemm_iter": Out(1),
            "alu_iter": Out(1),
            **stage_status(),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        m.submodules.uop_loader = uop_ld = self.uop_loader
        m.submodules.acc_loader = acc_ld = self.acc_loader
        m.submodules.acc8_loader = acc8_ld = self.acc8_loader
        m.submodules.tensor = tensor = self.tensor
        # Buffers are made here (ports are added to them below), once per elaboration.
        m.submodules.uop_mem = uop_mem = make_buffer(c, "uop")
        m.submodules.acc_mem = acc_mem = make_buffer(c, "acc")
        self.buffers = {"uop": uop_mem, "acc": acc_mem}

        raw = Signal(isa.INSN_BITS)
        mem_insn = data.View(isa.amaranth_layout(c, "mem"), raw)
        opcode = mem_insn.opcode
        mtype = mem_insn.memory_type
        for ldr in (uop_ld, acc_ld, acc8_ld):
            m.d.comb += ldr.insn.eq(mem_insn)
        m.d.comb += tensor.insn.eq(raw)
        sel = [mtype == isa.Mem.UOP, mtype == isa.Mem.ACC, mtype == isa.Mem.ACC_8BIT]
        mux_read_master(m, self.mem, [uop_ld.mem, acc_ld.mem, acc8_ld.mem], sel)

        # -- buffers ---------------------------------------------------------------------
        uop_wp, uop_rp = uop_mem.write_port(), uop_mem.read_port()
        m.d.comb += [
            uop_wp.en.eq(uop_ld.sram.en), uop_wp.addr.eq(uop_ld.sram.addr), uop_wp.data.eq(uop_ld.sram.data),
        ]
        connect_read_port(m, tensor.uop_rd, uop_rp)
        lanes = write_lanes(c, "acc")
        acc_wp = acc_mem.write_port(granularity=len(acc_mem.data[0]) // lanes if lanes > 1 else None)
        acc_rp_dst, acc_rp_src = acc_mem.read_port(), acc_mem.read_port()
        connect_read_port(m, tensor.acc_rd_dst, acc_rp_dst)
        connect_read_port(m, tensor.acc_rd_src, acc_rp_src)
        with m.If(tensor.acc_wr.en):
            m.d.comb += [acc_wp.en.eq(-1), acc_wp.addr.eq(tensor.acc_wr.addr), acc_wp.data.eq(tensor.acc_wr.data)]
        with m.Elif(acc8_ld.busy):
            per_lane = lanes // acc8_ld.lanes
            m.d.comb += [
                acc_wp.en.eq(Cat(*(b.replicate(per_lane) for b in acc8_ld.sram.en))),
                acc_wp.addr.eq(acc8_ld.sram.addr), acc_wp.data.eq(acc8_ld.sram.data),
            ]
        with m.Else():
            m.d.comb += [acc_wp.en.eq(acc_ld.sram.en), acc_wp.addr.eq(acc_ld.sram.addr), acc_wp.data.eq(acc_ld.sram.data)]
        for ours, theirs in ((self.inp_rd, tensor.inp_rd), (self.wgt_rd, tensor.wgt_rd)):
            m.d.comb += [ours.en.eq(theirs.en), ours.addr.eq(theirs.addr), theirs.data.eq(ours.data)]
        m.d.comb += [
            self.out_wr.en.eq(tensor.out_wr.en), self.out_wr.addr.eq(tensor.out_wr.addr),
            self.out_wr.data.eq(tensor.out_wr.data),
            self.uop_elem.eq(uop_ld.elem), self.acc_elem.eq(acc_ld.elem | acc8_ld.elem),
            self.gemm_iter.eq(tensor.gemm_iter), self.alu_iter.eq(tensor.alu_iter),
        ]

        # -- sequencer ----------------------------------------------------------------------
        tokens = TokenPorts(pops={"prev": self.l2g, "next": self.s2g}, pushes={"prev": self.g2l, "next": self.g2s})
        pops = {"prev": mem_insn.pop_prev, "next": mem_insn.pop_next}
        pushes = {"prev": mem_insn.push_prev, "next": mem_insn.push_next}
        is_finish = Signal()
        status = self.status
        unit_done = uop_ld.done | acc_ld.done | acc8_ld.done | tensor.done
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [status.state.eq(State.IDLE), self.cmd.ready.eq(~self.halt)]
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += raw.eq(self.cmd.payload)
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += status.state.eq(State.WAIT)
                go = tokens.can_pop(pops) & ~self.halt
                m.d.comb += status.stall.eq(~go)
                with m.If(go):
                    tokens.pop(m, pops)
                    tokens.arm(m, pushes)
                    m.d.sync += is_finish.eq(opcode == isa.Op.FINISH)
                    with m.If((opcode == isa.Op.GEMM) | (opcode == isa.Op.ALU)):
                        m.d.comb += tensor.start.eq(1)
                        m.next = "EXEC"
                    with m.Elif((opcode == isa.Op.LOAD) & (mem_insn.x_size != 0)):
                        m.d.comb += [uop_ld.start.eq(sel[0]), acc_ld.start.eq(sel[1]), acc8_ld.start.eq(sel[2])]
                        m.next = "EXEC"
                    with m.Else():  # FINISH, NOP
                        m.next = "PUSH"
            with m.State("EXEC"):
                m.d.comb += status.state.eq(State.EXEC)
                with m.If(unit_done):
                    m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += status.state.eq(State.PUSH)
                done = tokens.drive(m)
                m.d.comb += status.stall.eq(~done)
                with m.If(done):
                    m.d.comb += [status.retire.eq(1), self.finish.eq(is_finish)]
                    m.next = "IDLE"
        return m
