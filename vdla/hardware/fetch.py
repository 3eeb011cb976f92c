"""The fetch stage: reads the instruction stream and routes each instruction, in order.

After ``launch`` it reads ``insn_count`` 128-bit instructions from byte address
``insn_addr`` with one read command and sends each to a command queue, as VTA does:
STORE to store, LOAD of INP/WGT to load, everything else (GEMM, ALU, CFG, FINISH, LOAD
of UOP/ACC/ACC_8BIT) to compute. It stalls while the target queue is full.

Fetch also checks what the hardware cannot execute and stops there with an error
(`vdla.hardware.errors.ErrorCode`) naming the instruction's index: an illegal opcode (on a
Config with ``gemm_epilogue`` off also CFG and a GEMM with init), a memory type the
instruction cannot use (LOAD of OUT or of an unknown type, STORE of anything but OUT),
an unknown ALU opcode, or a stream that ends without FINISH (or is empty). It stops
dispatching after FINISH, and when ``halt`` says a stage's error stopped the core. Once
stopped it still takes in (and drops) the rest of the stream, so the memory port always
completes its command.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .dma import ElementReader
from .errors import ERROR_BITS, ErrorCode
from .interfaces import read_master

__all__ = ["Fetch", "ErrorCode"]


class Fetch(wiring.Component):
    def __init__(self, config: Config, *, count_width: int = 32, io_registers: bool = True) -> None:
        self.config = config
        self.gemm_cfg = config.gemm_epilogue  # off: CFG and GEMM init are refused as illegal opcodes
        self.io_registers = io_registers  # the holding register `cur` (below); off: decode from the read data
        self.count_width = count_width  # bits of insn_count (and of the indices counted against it)
        self.reader = ElementReader(isa.INSN_BYTES, config.bus_width)
        insn_stream = stream.Signature(isa.INSN_BITS)
        super().__init__({
            "launch": In(1),
            "halt": In(1),  # a stage's error stopped the core: dispatch nothing more, drain the stream
            "insn_addr": In(32),
            "insn_count": In(count_width),
            "mem": Out(read_master(config.bus_width)),
            "load_cmd": Out(insn_stream),
            "compute_cmd": Out(insn_stream),
            "store_cmd": Out(insn_stream),
            "error": Out(1),  # pulse: an error was found
            "error_code": Out(ERROR_BITS),
            "error_index": Out(count_width),  # the instruction being dispatched (or found wrong)
            "busy": Out(1),  # launched and not yet finished with the stream
            "stall": Out(1),  # holding an instruction its queue has no room for
            "dispatch": Out(1),  # pulse: an instruction was sent to a queue
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        m.submodules.reader = reader = self.reader
        m.d.comb += [
            self.mem.cmd.valid.eq(reader.mem.cmd.valid),
            self.mem.cmd.payload.eq(reader.mem.cmd.payload),
            reader.mem.cmd.ready.eq(self.mem.cmd.ready),
            reader.mem.data.valid.eq(self.mem.data.valid),
            reader.mem.data.payload.eq(self.mem.data.payload),
            self.mem.data.ready.eq(reader.mem.data.ready),
        ]

        count, received, index = (Signal(self.count_width) for _ in range(3))
        requested, launched, stopped = Signal(), Signal(), Signal()
        m.d.comb += [
            reader.req.valid.eq(launched & ~requested & (count != 0)),
            reader.req.payload.addr.eq(self.insn_addr),
            reader.req.payload.count.eq(count),
        ]
        with m.If(reader.req.valid & reader.req.ready):
            m.d.sync += requested.eq(1)

        # -- assemble instructions from bus-word chunks -------------------------------------
        # Earlier chunks of an instruction go into a shift register; with the last one the
        # whole instruction moves into `cur`, which decode and dispatch read. The memory's
        # `ready` depends on flip-flops only (is `cur` free): decoding straight from the
        # memory's read data, or letting the last chunk in as `cur` is dispatched, put the
        # decoder and the queues' `ready` on one path to the RAM's address. The cost: the
        # last chunk waits a cycle for `cur`, so a bus as wide as an instruction fetches one
        # every other cycle (a 64-bit bus needs two cycles per instruction anyway).
        chunk = reader.out.payload
        cbits = len(chunk.data)
        asm = Signal(isa.INSN_BITS)
        whole = Cat(asm[cbits:], chunk.data) if cbits < isa.INSN_BITS else chunk.data
        cur, have = Signal(isa.INSN_BITS), Signal()
        dispatch = Signal()
        if self.io_registers:
            m.d.comb += reader.out.ready.eq(~chunk.last | ~have | stopped)
            with m.If(dispatch | stopped):  # `cur` is free next cycle
                m.d.sync += have.eq(0)
        else:  # the last chunk stays on the reader's stream until the instruction is dispatched
            m.d.comb += [cur.eq(whole), have.eq(reader.out.valid & chunk.last),
                         reader.out.ready.eq(~chunk.last | dispatch | stopped)]
        with m.If(reader.out.valid & reader.out.ready):
            m.d.sync += asm.eq(whole)
            with m.If(chunk.last):
                m.d.sync += received.eq(received + 1)
                if self.io_registers:
                    m.d.sync += [cur.eq(whole), have.eq(~stopped)]

        # -- decode, check, route ----------------------------------------------------------------
        mem = data.View(isa.amaranth_layout(c, "mem"), cur)
        alu = data.View(isa.amaranth_layout(c, "alu"), cur)
        op, mt = mem.opcode, mem.memory_type
        is_load, is_store = op == isa.Op.LOAD, op == isa.Op.STORE
        to_load = is_load & ((mt == isa.Mem.INP) | (mt == isa.Mem.WGT))
        loadable = (mt == isa.Mem.UOP) | (mt == isa.Mem.WGT) | (mt == isa.Mem.INP) | (mt == isa.Mem.ACC) | (
            mt == isa.Mem.ACC_8BIT)
        code = Signal(ERROR_BITS)
        illegal = op > max(isa.Op)  # (the opcodes are 0 ... CFG, with no gap)
        if not self.gemm_cfg:  # a Config without them (its GEMM has no init bit: VTA's layout)
            illegal |= op == isa.Op.CFG
        with m.If(illegal):
            m.d.comb += code.eq(ErrorCode.ILLEGAL_OPCODE)
        with m.Elif((is_load & ~loadable) | (is_store & (mt != isa.Mem.OUT))):
            m.d.comb += code.eq(ErrorCode.BAD_MEMORY_TYPE)
        with m.Elif((op == isa.Op.ALU) & (alu.alu_opcode > max(isa.AluOp))):
            m.d.comb += code.eq(ErrorCode.BAD_ALU_OPCODE)
        targets = [(self.load_cmd, to_load), (self.store_cmd, is_store), (self.compute_cmd, ~to_load & ~is_store)]
        ready = Signal()
        for port, sel in targets:
            m.d.comb += [port.payload.eq(cur), port.valid.eq(have & ~stopped & (code == 0) & sel)]
            with m.If(sel):
                m.d.comb += ready.eq(port.ready)
        m.d.comb += [
            dispatch.eq(have & ~stopped & (code == 0) & ready),
            self.dispatch.eq(dispatch),
            self.stall.eq(have & ~stopped & (code == 0) & ~ready),
            self.error_index.eq(index),
        ]
        with m.If(dispatch):
            m.d.sync += index.eq(index + 1)
            with m.If(op == isa.Op.FINISH):
                m.d.sync += stopped.eq(1)
        with m.If(have & ~stopped & (code != 0)):
            m.d.comb += [self.error.eq(1), self.error_code.eq(code)]
            m.d.sync += stopped.eq(1)
        with m.If(self.halt):
            m.d.sync += stopped.eq(1)
        with m.If(launched & ~stopped & (index == count) & ~have):
            m.d.comb += [self.error.eq(1), self.error_code.eq(ErrorCode.NO_FINISH)]
            m.d.sync += stopped.eq(1)

        m.d.comb += self.busy.eq(launched & ~(stopped & (received == count)))
        with m.If(self.launch):
            m.d.sync += [
                count.eq(self.insn_count), received.eq(0), index.eq(0), requested.eq(0),
                launched.eq(1), stopped.eq(0),
            ]
        if self.io_registers:
            with m.If(self.launch):
                m.d.sync += have.eq(0)
        return m
