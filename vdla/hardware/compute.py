"""The compute stage: LOAD UOP / ACC / ACC_8BIT, GEMM, ALU, CFG and FINISH.

It owns the micro-op and accumulator buffers (as VTA's compute does) and reads INP and
WGT and writes OUT, which the core owns. Its tokens: pop_prev waits for load's l2g
token (RAW), pop_next for store's s2g token (WAR on OUT); after an instruction
completes, push_prev sends g2l (load may overwrite INP/WGT) and push_next sends g2s
(OUT holds results). Instructions run one at a time; GEMM and ALU go through the
`TensorPipeline` at one uop-iteration per cycle. FINISH completes like any instruction
(it may carry flags) and then pulses ``finish``. LOADs with x_size = 0 are NOPs.
CFG completes like a NOP (it moves tokens alike) and sets the registers that the GEMMs
after it read (`tensor.cfg_layout`: init_base, shift, clip_lo, clip_hi, epilogue, and with
``Config.gemm_window`` window and warmup), until the next CFG; FINISH and the core's reset at every start put them back to 0. Built with
``Config.gemm_epilogue`` off it has no such registers.

Errors (``error``, `vdla.hardware.errors`): a GEMM/ALU whose ``uop_end`` is past the uop
buffer or whose ``uop_bgn > uop_end`` is refused at start (UOP_RANGE); an iteration whose
index is past its buffer (UOP_INDEX, found by the tensor pipeline) and a LOAD row past
UOP/ACC (SRAM_RANGE, dropped by the loader) are reported as they come up. Once the core has
halted, the tensor pipeline's ACC/OUT writes are dropped: the error reaches ``halt`` before
the offending iteration reaches its write, so no index wraps onto another row.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .buffers import make_buffer, write_lanes
from .dma import Loader2D, Target
from .errors import ErrorCode
from .interfaces import connect_read_port, read_master, sram_read, sram_write, token
from .stage import run_stage, stage_status
from .tensor import TensorPipeline, cfg_layout
from .tokens import TokenPorts

__all__ = ["Compute"]


class Compute(wiring.Component):
    def __init__(self, config: Config, *, io_registers: bool = True, wgt_slices: int = 1) -> None:
        self.config = c = config
        self.loader = Loader2D(c, [
            Target("uop", isa.Mem.UOP, c.uop_elem_bytes, c.log_uop_depth),
            Target("acc", isa.Mem.ACC, c.acc_elem_bytes, c.log_acc_depth),
            Target("acc8", isa.Mem.ACC_8BIT, c.acc8_elem_bytes, c.log_acc_depth, widen=c.acc_width),
        ], io_registers=io_registers)
        self.gemm_cfg = c.gemm_epilogue
        self.tensor = TensorPipeline(c, wgt_slices=wgt_slices)
        super().__init__({
            "cmd": In(stream.Signature(isa.INSN_BITS)),
            "l2g": In(token()),
            "s2g": In(token()),
            "g2l": Out(token()),
            "g2s": Out(token()),
            "mem": Out(read_master(c.bus_width)),
            "inp_rd": Out(sram_read(c.log_inp_depth, 8 * c.inp_elem_bytes)),
            "wgt_rd": Out(sram_read(c.log_wgt_depth, 8 * c.wgt_elem_bytes, copies=wgt_slices)),
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
        m.submodules.loader = loader = self.loader
        m.submodules.tensor = tensor = self.tensor
        # Buffers are made here (ports are added to them below), once per elaboration.
        m.submodules.uop_mem = uop_mem = make_buffer(c, "uop")
        m.submodules.acc_mem = acc_mem = make_buffer(c, "acc")
        self.buffers = {"uop": uop_mem, "acc": acc_mem}

        raw = Signal(isa.INSN_BITS)
        mem_insn = data.View(isa.amaranth_layout(c, "mem"), raw)
        opcode = mem_insn.opcode
        mtype = mem_insn.memory_type
        m.d.comb += [loader.insn.eq(mem_insn), tensor.insn.eq(raw)]
        wiring.connect(m, wiring.flipped(self.mem), loader.mem)

        # -- buffers ---------------------------------------------------------------------
        uop_wp, uop_rp = uop_mem.write_port(), uop_mem.read_port()
        m.d.comb += [
            uop_wp.en.eq(loader.uop_wr.en), uop_wp.addr.eq(loader.uop_wr.addr), uop_wp.data.eq(loader.uop_wr.data),
        ]
        connect_read_port(m, tensor.uop_rd, uop_rp)
        lanes = write_lanes(c, "acc")
        acc_wp = acc_mem.write_port(granularity=len(acc_mem.data[0]) // lanes if lanes > 1 else None)
        acc_rp_dst, acc_rp_src = acc_mem.read_port(), acc_mem.read_port()
        connect_read_port(m, tensor.acc_rd_dst, acc_rp_dst)
        connect_read_port(m, tensor.acc_rd_src, acc_rp_src)
        # Which loader port writes comes from a register: the instruction is held while it runs
        # and its first row arrives from memory cycles after it starts; decoding the instruction
        # register into the select of the ACC write data's multiplexers was a 45F critical path.
        acc8_q = Signal(name="acc8_q")
        m.d.sync += acc8_q.eq(mtype == isa.Mem.ACC_8BIT)
        with m.If(tensor.acc_wr.en):  # once the core has halted (an index past ACC among the causes), no more
            m.d.comb += [acc_wp.en.eq((~self.halt).replicate(len(acc_wp.en))), acc_wp.addr.eq(tensor.acc_wr.addr),
                         acc_wp.data.eq(tensor.acc_wr.data)]
        with m.Elif(acc8_q):
            acc8 = loader.acc8_wr
            per_lane = lanes // len(acc8.en)
            m.d.comb += [
                acc_wp.en.eq(Cat(*(b.replicate(per_lane) for b in acc8.en))),
                acc_wp.addr.eq(acc8.addr), acc_wp.data.eq(acc8.data),
            ]
        with m.Else():
            acc = loader.acc_wr
            m.d.comb += [acc_wp.en.eq(acc.en), acc_wp.addr.eq(acc.addr), acc_wp.data.eq(acc.data)]
        for ours, theirs in ((self.inp_rd, tensor.inp_rd), (self.wgt_rd, tensor.wgt_rd)):
            m.d.comb += [ours.en.eq(theirs.en), ours.addr.eq(theirs.addr), theirs.data.eq(ours.data)]
        m.d.comb += [
            self.out_wr.en.eq(tensor.out_wr.en & ~self.halt), self.out_wr.addr.eq(tensor.out_wr.addr),
            self.out_wr.data.eq(tensor.out_wr.data),
            self.uop_elem.eq(loader.elem & (mtype == isa.Mem.UOP)), self.acc_elem.eq(loader.elem & (mtype != isa.Mem.UOP)),
            self.gemm_iter.eq(tensor.gemm_iter), self.alu_iter.eq(tensor.alu_iter),
        ]

        # -- sequencer ----------------------------------------------------------------------
        tokens = TokenPorts(pops={"prev": self.l2g, "next": self.s2g}, pushes={"prev": self.g2l, "next": self.g2s})
        pops = {"prev": mem_insn.pop_prev, "next": mem_insn.pop_next}
        pushes = {"prev": mem_insn.push_prev, "next": mem_insn.push_next}
        is_tensor = (opcode == isa.Op.GEMM) | (opcode == isa.Op.ALU)
        is_load = (opcode == isa.Op.LOAD) & (mem_insn.x_size != 0)
        # A uop range past the uop buffer (or reversed) is refused at start: the instruction then
        # ends the next cycle without running (the core halts on the error).
        gemm = data.View(isa.amaranth_layout(c, "gemm"), raw)
        bad_uops = is_tensor & ((gemm.uop_end > c.uop_depth) | (gemm.uop_bgn > gemm.uop_end))
        start, refused = Signal(), Signal()
        m.d.comb += [tensor.start.eq(start & is_tensor & ~bad_uops), loader.start.eq(start & is_load)]
        m.d.sync += refused.eq(start & bad_uops)
        with m.If(start & bad_uops):
            m.d.comb += self.error.eq(ErrorCode.UOP_RANGE)
        with m.Elif(tensor.index_error):
            m.d.comb += self.error.eq(ErrorCode.UOP_INDEX)
        with m.Elif(loader.range_error):
            m.d.comb += self.error.eq(ErrorCode.SRAM_RANGE)
        retire = run_stage(m, self, raw=raw, tokens=tokens, pops=pops, pushes=pushes,
                           nop=~is_tensor & ~is_load,  # CFG, FINISH and NOPs only move tokens
                           start=start, done=loader.done | tensor.done | refused)
        # FINISH completes like any instruction (it may carry flags), then signals the core.
        m.d.comb += self.finish.eq(retire & (opcode == isa.Op.FINISH))
        # CFG's state (init base and epilogue), for the GEMMs after it: set when the CFG retires
        # (the next instruction starts later), back to its defaults at FINISH and with the
        # datapath's reset at every start.
        if self.gemm_cfg:  # (without, fetch refuses CFG, and the tensor pipeline reads no `cfg`)
            cfg_insn = data.View(isa.amaranth_layout(c, "cfg"), raw)
            cfg = Signal(cfg_layout(c), name="cfg")
            m.d.comb += tensor.cfg.eq(cfg)
            with m.If(retire & (opcode == isa.Op.CFG)):
                m.d.sync += [getattr(cfg, name).eq(getattr(cfg_insn, name)) for name in cfg_layout(c).members]
            with m.If(self.finish):
                m.d.sync += cfg.eq(0)
        return m
