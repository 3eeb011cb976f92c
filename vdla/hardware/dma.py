"""DMA building blocks: element readers and the 2D strided loader with zero padding.

`ElementReader` turns requests "``count`` elements of ``elem_bytes`` from byte address
``addr``" into memory read commands and streams the returned data out as *chunks* of
``min(elem_bytes, bus_bytes)`` bytes, flagging the last chunk of each element. An element
wider than the bus spans several bus words; a bus word wider than an element holds
several, which are picked out one per cycle.

`Loader2D` executes a LOAD instruction for one memory type: it issues one read request
per DRAM row (``y_size`` rows of ``x_size`` elements, ``x_stride`` elements apart) and
writes ``(y_pad_0 + y_size + y_pad_1) x (x_pad_0 + x_size + x_pad_1)`` consecutive SRAM
rows from ``sram_base``, zeros in the padding, one SRAM write per chunk. Wide elements are
written chunk by chunk through the SRAM's lane enables (no assembly register), so the
loader moves one bus word per cycle. ``widen`` sign-extends each DRAM byte to a lane of
that many bits (LOAD ACC_8BIT).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .interfaces import ADDR_WIDTH, read_master, sram_write

__all__ = ["ElementReader", "Loader2D", "ReadRequest"]


def log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


#: A read request: ``count`` elements from byte address ``addr``.
ReadRequest = data.StructLayout({"addr": unsigned(ADDR_WIDTH), "count": unsigned(32)})


class ElementReader(wiring.Component):
    """Read elements of `elem_bytes` bytes over a `bus_width`-bit read port, as chunks."""

    def __init__(self, elem_bytes: int, bus_width: int, rows_in_flight: int = 4) -> None:
        self.elem_bytes, self.bus_bytes = elem_bytes, bus_width // 8
        self.chunk_bytes = min(elem_bytes, self.bus_bytes)
        self.rows_in_flight = rows_in_flight
        chunk = data.StructLayout({"data": unsigned(8 * self.chunk_bytes), "last": unsigned(1)})
        super().__init__({
            "req": In(stream.Signature(ReadRequest)),
            "mem": Out(read_master(bus_width)),
            "out": Out(stream.Signature(chunk)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        E, B = self.elem_bytes, self.bus_bytes
        req, cmd, beat, out = self.req, self.mem.cmd, self.mem.data, self.out
        if E >= B:
            per_elem = E // B
            m.d.comb += [
                cmd.valid.eq(req.valid),
                cmd.payload.addr.eq(req.payload.addr),
                cmd.payload.beats.eq(req.payload.count << log2(per_elem)),
                req.ready.eq(cmd.ready),
                out.valid.eq(beat.valid),
                out.payload.data.eq(beat.payload),
                beat.ready.eq(out.ready),
            ]
            if per_elem == 1:
                m.d.comb += out.payload.last.eq(1)
            else:
                chunk = Signal(range(per_elem))
                m.d.comb += out.payload.last.eq(chunk == per_elem - 1)
                with m.If(out.valid & out.ready):
                    m.d.sync += chunk.eq(chunk + 1)
            return m

        # Several elements per bus word: remember where each row starts inside its first word.
        per_word, logE, logB = B // E, log2(E), log2(B)
        desc = data.StructLayout({"start": unsigned(log2(per_word)), "count": unsigned(32)})
        m.submodules.rows = rows = fifo.SyncFIFO(width=desc.size, depth=self.rows_in_flight)
        first = req.payload.addr >> logB
        last = (req.payload.addr + (req.payload.count << logE) - 1) >> logB
        w = data.View(desc, rows.w_data)
        m.d.comb += [
            cmd.valid.eq(req.valid & rows.w_rdy),
            cmd.payload.addr.eq(first << logB),
            cmd.payload.beats.eq(last - first + 1),
            req.ready.eq(cmd.ready & rows.w_rdy),
            rows.w_en.eq(req.valid & req.ready),
            w.start.eq(req.payload.addr[logE:logB]),
            w.count.eq(req.payload.count),
        ]
        head = data.View(desc, rows.r_data)
        idx = Signal(32)  # elements of the head row already sent
        sub = Signal(log2(per_word))
        row_end = idx == head.count - 1
        m.d.comb += [
            sub.eq(head.start + idx),
            out.valid.eq(beat.valid & rows.r_rdy),
            out.payload.data.eq(beat.payload.word_select(sub, 8 * E)),
            out.payload.last.eq(1),
        ]
        with m.If(out.valid & out.ready):
            m.d.comb += beat.ready.eq((sub == per_word - 1) | row_end)
            with m.If(row_end):
                m.d.sync += idx.eq(0)
                m.d.comb += rows.r_en.eq(1)
            with m.Else():
                m.d.sync += idx.eq(idx + 1)
        return m


class Loader2D(wiring.Component):
    """Execute LOAD instructions of one memory type into one SRAM.

    `elem_bytes` is the element size in DRAM; the SRAM row holds one element, widened by
    `widen` (bits per DRAM byte) when given. The SRAM write port has one enable per chunk
    (``max(1, elem_bytes / bus_bytes)`` lanes). Pulse ``start`` with ``insn`` valid; ``done``
    pulses when the last SRAM row is written. ``elem`` pulses per element taken from DRAM."""

    def __init__(self, config: Config, elem_bytes: int, sram_addr_width: int, widen: int | None = None) -> None:
        self.config, self.elem_bytes, self.widen = config, elem_bytes, widen
        self.bus_bytes = config.bus_bytes
        self.lanes = max(1, elem_bytes // self.bus_bytes)
        scale = (widen // 8) if widen else 1
        self.row_bits = 8 * elem_bytes * scale
        self.reader = ElementReader(elem_bytes, config.bus_width)
        super().__init__({
            "start": In(1),
            "insn": In(isa.amaranth_layout(config, "mem")),
            "busy": Out(1),
            "done": Out(1),
            "elem": Out(1),
            "mem": Out(read_master(config.bus_width)),
            "sram": Out(sram_write(sram_addr_width, self.row_bits, self.lanes)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.reader = reader = self.reader
        # The reader's memory port is ours.
        m.d.comb += [
            self.mem.cmd.valid.eq(reader.mem.cmd.valid),
            self.mem.cmd.payload.eq(reader.mem.cmd.payload),
            reader.mem.cmd.ready.eq(self.mem.cmd.ready),
            reader.mem.data.valid.eq(self.mem.data.valid),
            reader.mem.data.payload.eq(self.mem.data.payload),
            self.mem.data.ready.eq(reader.mem.data.ready),
        ]
        insn = self.insn
        logE = log2(self.elem_bytes)
        aw = self.config.dram_addr_width

        # -- row requests ----------------------------------------------------------------
        row_addr = Signal(aw)  # DRAM element address of the next row
        rows_left = Signal(16)
        m.d.comb += [
            reader.req.valid.eq(rows_left != 0),
            reader.req.payload.addr.eq((row_addr << logE)[:ADDR_WIDTH]),
            reader.req.payload.count.eq(insn.x_size),
        ]
        with m.If(reader.req.valid & reader.req.ready):
            m.d.sync += [row_addr.eq(row_addr + insn.x_stride), rows_left.eq(rows_left - 1)]

        # -- SRAM writes ---------------------------------------------------------------------
        # insn is held stable by the owner for the whole instruction.
        x_lo, x_hi = insn.x_pad_0, insn.x_pad_0 + insn.x_size
        y_lo, y_hi = insn.y_pad_0, insn.y_pad_0 + insn.y_size
        nx, ny = x_hi + insn.x_pad_1, y_hi + insn.y_pad_1
        x, y = Signal(17), Signal(17)
        addr = Signal(len(self.sram.addr))
        lane = Signal(range(self.lanes))
        active = Signal()
        m.d.comb += self.busy.eq(active | self.start)

        with m.If(self.start):
            m.d.sync += [
                row_addr.eq(insn.dram_base), rows_left.eq(insn.y_size),
                x.eq(0), y.eq(0), lane.eq(0), addr.eq(insn.sram_base), active.eq(1),
            ]

        pad = (x < x_lo) | (x >= x_hi) | (y < y_lo) | (y >= y_hi)
        advance = Signal()
        chunk = reader.out.payload.data
        if self.widen:
            payload = Cat(*(_sext(chunk.word_select(k, 8), self.widen) for k in range(len(chunk) // 8)))
        else:
            payload = chunk
        with m.If(active & (ny == 0)):  # only y_size = 0 and no padding: nothing to write
            m.d.sync += active.eq(0)
            m.d.comb += self.done.eq(1)
        with m.Elif(active):
            with m.If(pad):
                m.d.comb += [self.sram.en.eq(-1), self.sram.data.eq(0), advance.eq(1)]
            with m.Else():
                m.d.comb += reader.out.ready.eq(1)
                with m.If(reader.out.valid):
                    m.d.comb += self.sram.data.eq(payload.replicate(self.lanes))
                    if self.lanes == 1:
                        m.d.comb += [self.sram.en.eq(1), advance.eq(1), self.elem.eq(1)]
                    else:
                        m.d.comb += self.sram.en.eq(Const(1, self.lanes) << lane)
                        m.d.sync += lane.eq(lane + 1)
                        with m.If(lane == self.lanes - 1):
                            m.d.comb += [advance.eq(1), self.elem.eq(1)]
        m.d.comb += self.sram.addr.eq(addr)
        with m.If(advance):
            m.d.sync += addr.eq(addr + 1)
            with m.If(x == nx - 1):
                m.d.sync += [x.eq(0), y.eq(y + 1)]
                with m.If(y == ny - 1):
                    m.d.sync += active.eq(0)
                    m.d.comb += self.done.eq(1)
            with m.Else():
                m.d.sync += x.eq(x + 1)
        return m


def _sext(byte, width: int):
    """Sign-extend an 8-bit value to `width` bits."""
    return Cat(byte, byte[7].replicate(width - 8))
