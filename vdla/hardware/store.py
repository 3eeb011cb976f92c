"""The store stage: STORE OUT, a 2D strided DMA from the OUT buffer to memory.

Its tokens: pop_prev waits for compute's g2s token (the results are in OUT: RAW),
push_prev sends an s2g token once memory has acknowledged every write (compute may
overwrite OUT: WAR). Store has no next stage; pop_next/push_next are ignored. A STORE
with x_size = 0 is a NOP that only moves tokens. A row read past OUT raises
``error`` = `ErrorCode.SRAM_RANGE` (the instruction still completes; what it wrote is void).

OUT rows are read one per cycle through a synchronous read port whose enable doubles
as the pipeline stall. An element as wide as the bus or wider goes out as
``elem_bytes / bus_bytes`` beats of one write command per DRAM row; a narrower one as a
one-beat command with byte strobes (simple, one element per cycle).
"""

from __future__ import annotations

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .dma import log2
from .errors import ErrorCode
from .interfaces import ADDR_WIDTH, sram_read, token, write_master
from .stage import run_stage, stage_status
from .tokens import TokenPorts

__all__ = ["Store", "MAX_OUTSTANDING"]

#: Write commands the store stage lets wait for their response before it issues more.
MAX_OUTSTANDING = 255


class Store(wiring.Component):
    def __init__(self, config: Config) -> None:
        self.config = config
        c = config
        super().__init__({
            "cmd": In(stream.Signature(isa.INSN_BITS)),
            "g2s": In(token()),
            "s2g": Out(token()),
            "mem": Out(write_master(c.bus_width)),
            "out_rd": Out(sram_read(c.log_acc_depth, 8 * c.out_elem_bytes)),
            "out_elem": Out(1),
            **stage_status(),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        E, B = c.out_elem_bytes, c.bus_bytes
        logE, logB = log2(E), log2(B)
        per_elem = E < B
        beats_per_elem = max(1, E // B)
        raw = Signal(isa.INSN_BITS)
        insn = data.View(isa.amaranth_layout(c, "mem"), raw)
        tokens = TokenPorts(pops={"prev": self.g2s}, pushes={"prev": self.s2g})
        pops, pushes = {"prev": insn.pop_prev}, {"prev": insn.push_prev}
        start = Signal()
        aw = c.dram_addr_width
        cmd, beat, resp, rd = self.mem.cmd, self.mem.data, self.mem.resp, self.out_rd

        # -- write commands: one per row (or per element when elements are narrower than the bus)
        row_addr, col, rows_left = Signal(aw), Signal(16), Signal(16)
        elem_addr = row_addr + col if per_elem else row_addr
        # Write commands not yet acknowledged; at most MAX_OUTSTANDING (a small counter is
        # enough: the memory system answers in order and holds few commands itself).
        outstanding = Signal(range(MAX_OUTSTANDING + 1))
        m.d.comb += [
            cmd.valid.eq((rows_left != 0) & (outstanding != MAX_OUTSTANDING)),
            cmd.payload.addr.eq(((elem_addr << logE)[:ADDR_WIDTH] >> logB) << logB),
            cmd.payload.beats.eq(1 if per_elem else insn.x_size << log2(beats_per_elem)),
        ]
        with m.If(cmd.valid & cmd.ready):
            if per_elem:
                with m.If(col == insn.x_size - 1):
                    m.d.sync += [col.eq(0), row_addr.eq(row_addr + insn.x_stride), rows_left.eq(rows_left - 1)]
                with m.Else():
                    m.d.sync += col.eq(col + 1)
            else:
                m.d.sync += [row_addr.eq(row_addr + insn.x_stride), rows_left.eq(rows_left - 1)]

        # -- OUT reads: elements in SRAM order, `have` = rd.data holds one not yet sent
        # OUT rows, counted with one bit more than OUT's index: a row past OUT is reported, not
        # wrapped (`rd_over`: the base was past it; the counter may wrap back later, once reported).
        rd_addr, rd_over = Signal(len(rd.addr) + 1), Signal()
        rd_col, rd_rows = Signal(16), Signal(16)
        have, take = Signal(), Signal()
        en = ~have | take
        issue = en & (rd_rows != 0)
        m.d.comb += [rd.en.eq(en), rd.addr.eq(rd_addr)]
        with m.If(en):
            m.d.sync += have.eq(issue)
        past = rd_over | (rd_addr[len(rd.addr):] != 0)
        m.d.comb += self.error.eq(Mux(issue & past, ErrorCode.SRAM_RANGE, ErrorCode.NONE))
        with m.If(issue):
            m.d.sync += rd_addr.eq(rd_addr + 1)
            with m.If(rd_col == insn.x_size - 1):
                m.d.sync += [rd_col.eq(0), rd_rows.eq(rd_rows - 1)]
            with m.Else():
                m.d.sync += rd_col.eq(rd_col + 1)

        # -- write data
        m.d.comb += [beat.valid.eq(have), self.out_elem.eq(take)]
        sent = beat.valid & beat.ready
        if per_elem:
            # The element's DRAM address, walked like the commands', places it in its word.
            em_row, em_col = Signal(aw), Signal(16)
            sub = (em_row + em_col)[: logB - logE]
            m.d.comb += [
                beat.payload.data.eq(rd.data.replicate(B // E)),
                beat.payload.strb.eq(Const((1 << E) - 1, B) << (sub << logE)),
                take.eq(sent),
            ]
            with m.If(sent):
                with m.If(em_col == insn.x_size - 1):
                    m.d.sync += [em_col.eq(0), em_row.eq(em_row + insn.x_stride)]
                with m.Else():
                    m.d.sync += em_col.eq(em_col + 1)
        else:
            part = Signal(range(beats_per_elem))
            m.d.comb += [
                beat.payload.data.eq(rd.data.word_select(part, 8 * B) if beats_per_elem > 1 else rd.data),
                beat.payload.strb.eq(-1),
            ]
            with m.If(sent):
                m.d.sync += part.eq(part + 1)
                m.d.comb += take.eq(part == beats_per_elem - 1)

        # -- responses
        m.d.comb += resp.ready.eq(1)
        got = resp.valid & resp.ready
        issued = cmd.valid & cmd.ready
        with m.If(issued & ~got):
            m.d.sync += outstanding.eq(outstanding + 1)
        with m.Elif(got & ~issued):
            m.d.sync += outstanding.eq(outstanding - 1)
        finished = (rows_left == 0) & (rd_rows == 0) & ~have & (outstanding == 0) & ~start

        with m.If(start):
            m.d.sync += [
                row_addr.eq(insn.dram_base), col.eq(0), rows_left.eq(insn.y_size),
                rd_addr.eq(insn.sram_base), rd_over.eq(insn.sram_base[len(rd.addr):] != 0), rd_col.eq(0),
                rd_rows.eq(insn.y_size),
            ]
            if per_elem:
                m.d.sync += [em_row.eq(insn.dram_base), em_col.eq(0)]

        run_stage(m, self, raw=raw, tokens=tokens, pops=pops, pushes=pushes,
                  nop=insn.x_size == 0, start=start, done=finished)
        return m
