"""DMA building blocks: the element reader and the 2D strided loader with zero padding.

`ElementReader` turns requests "``count`` elements from byte address ``addr``" into
memory read commands and streams the returned data out as *chunks* of
``min(elem_bytes, bus_bytes)`` bytes, flagging the last chunk of each element. The
element size is one of a fixed set (``sizes``), picked per instruction by the ``size``
input, so one reader serves every memory type a stage loads. An element wider than the
bus spans several bus words; a bus word wider than an element holds several, which are
picked out one per cycle.

`Loader2D` executes the LOAD instructions of a stage: one engine for all the memory
types (`Target`) the stage loads, since a stage runs one instruction at a time. It
issues one read request per DRAM row (``y_size`` rows of ``x_size`` elements,
``x_stride`` elements apart) and writes ``(y_pad_0 + y_size + y_pad_1) x (x_pad_0 +
x_size + x_pad_1)`` consecutive SRAM rows from ``sram_base``, zeros in the padding, one
SRAM write per chunk. Wide elements are written chunk by chunk through the SRAM's lane
enables (no assembly register), so the loader moves one bus word per cycle. A target's
``widen`` sign-extends each DRAM byte to a lane of that many bits (LOAD ACC_8BIT).

The 2D walk counts down through the segments of each dimension (padding before, data,
padding after) instead of comparing positions against their bounds: a down-counter and a
segment number per dimension is all the logic it needs, which matters on small FPGAs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .interfaces import ADDR_WIDTH, MemCmd, read_master, sram_write
from .skid import SkidBuffer

__all__ = ["ElementReader", "Loader2D", "ReadRequest", "Target"]


def log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


#: A read request: ``count`` elements from byte address ``addr``.
ReadRequest = data.StructLayout({"addr": unsigned(ADDR_WIDTH), "count": unsigned(32)})


def _pick(m: Module, index, values: Sequence, width: int) -> Signal:
    """A signal equal to ``values[index]`` (a mux over the element sizes)."""
    out = Signal(width)
    with m.Switch(index):
        for i, v in enumerate(values):
            with m.Case(i):
                m.d.comb += out.eq(v)
    return out


class ElementReader(wiring.Component):
    """Read elements of one of `sizes` bytes over a `bus_width`-bit read port, as chunks.

    ``size`` (an index into `sizes`) must stay put while the reader has requests in flight.
    With ``cmd_register`` the memory commands leave through a `SkidBuffer` (a cycle more per
    command): their address and beat count come out of adders and the element-size
    multiplexers, which should not share a cycle with the route to a far memory."""

    def __init__(self, sizes: int | Sequence[int], bus_width: int, rows_in_flight: int = 2,
                 count_width: int = 32, cmd_register: bool = False) -> None:
        self.cmd_register = cmd_register
        self.sizes = (sizes,) if isinstance(sizes, int) else tuple(sizes)
        self.count_width = count_width  # bits of the requests' counts that can be set
        self.bus_bytes = bus_width // 8
        self.chunks = tuple(min(e, self.bus_bytes) for e in self.sizes)
        self.chunk_bytes = max(self.chunks)
        # Row requests issued ahead of their data (only elements narrower than the bus use this
        # FIFO). Two are enough for the board memory, which serves one command at a time, and for
        # the presets, whose only narrow elements are uops (usually one row per load); many short
        # rows over a high-latency AXI memory would want more, but each entry costs descriptor
        # flip-flops that the iCE40 cannot spare.
        self.rows_in_flight = rows_in_flight
        chunk = data.StructLayout({"data": unsigned(8 * self.chunk_bytes), "last": unsigned(1)})
        super().__init__({
            "req": In(stream.Signature(ReadRequest)),
            "size": In(range(len(self.sizes))),
            "mem": Out(read_master(bus_width)),
            "out": Out(stream.Signature(chunk)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        B, logB = self.bus_bytes, log2(self.bus_bytes)
        req, cmd, beat, out = self.req, self.mem.cmd, self.mem.data, self.out
        if self.cmd_register:
            m.submodules.cmd_register = skid = SkidBuffer(MemCmd)
            wiring.connect(m, skid.o, wiring.flipped(self.mem.cmd))
            cmd = skid.i
        # Chunks per element (1 for elements no wider than the bus).
        per_elem = [max(1, e // B) for e in self.sizes]
        if all(e >= B for e in self.sizes):
            # Every element is whole bus words: a row is count * per_elem beats, passed through.
            beats = _pick(m, self.size, [req.payload.count << log2(p) for p in per_elem], 32)
            m.d.comb += [
                cmd.valid.eq(req.valid),
                cmd.payload.addr.eq(req.payload.addr),
                cmd.payload.beats.eq(beats),
                req.ready.eq(cmd.ready),
                out.valid.eq(beat.valid),
                out.payload.data.eq(beat.payload),
                beat.ready.eq(out.ready),
            ]
            if max(per_elem) == 1:
                m.d.comb += out.payload.last.eq(1)
            else:
                chunk = Signal(range(max(per_elem)))
                last = _pick(m, self.size, [chunk == p - 1 for p in per_elem], 1)
                m.d.comb += out.payload.last.eq(last)
                with m.If(out.valid & out.ready):
                    m.d.sync += chunk.eq(Mux(last, 0, chunk + 1))
            return m

        # Some elements are narrower than the bus: a row may start inside a word, so each row's
        # first chunk position and length go into a FIFO that the data side follows.
        sub_bits = logB - log2(min(self.chunks))
        cw = self.count_width + log2(max(per_elem))  # bits of a row's chunk count
        desc = data.StructLayout({"start": unsigned(sub_bits), "count": unsigned(cw)})
        m.submodules.rows = rows = fifo.SyncFIFO(width=desc.size, depth=self.rows_in_flight)
        count = req.payload.count[: self.count_width]
        nbytes = _pick(m, self.size, [count << log2(e) for e in self.sizes], self.count_width + log2(max(self.sizes)))
        # Words spanned: only the start's offset inside its word matters, which keeps the sum narrow.
        beats = ((req.payload.addr[:logB] + nbytes - 1) >> logB) + 1
        w = data.View(desc, rows.w_data)
        m.d.comb += [
            cmd.valid.eq(req.valid & rows.w_rdy),
            cmd.payload.addr.eq(req.payload.addr[logB:] << logB),
            cmd.payload.beats.eq(beats),
            req.ready.eq(cmd.ready & rows.w_rdy),
            rows.w_en.eq(req.valid & req.ready),
            w.start.eq(_pick(m, self.size, [req.payload.addr[log2(c):logB] for c in self.chunks], sub_bits)),
            w.count.eq(_pick(m, self.size, [count << log2(p) for p in per_elem], cw)),
        ]
        head = data.View(desc, rows.r_data)
        idx = Signal(cw)  # chunks of the head row already sent
        sub = Signal(sub_bits)  # chunk position inside the current bus word
        row_end = idx == head.count - 1
        word_end = _pick(m, self.size, [sub[: logB - log2(c)] == (B // c) - 1 if c < B else 1 for c in self.chunks], 1)
        elem_end = _pick(m, self.size, [idx[: log2(p)] == p - 1 if p > 1 else 1 for p in per_elem], 1)
        m.d.comb += [
            sub.eq(head.start + idx),
            out.valid.eq(beat.valid & rows.r_rdy),
            out.payload.data.eq(_pick(m, self.size, [beat.payload.word_select(sub[: logB - log2(c)], 8 * c)
                                                     if c < B else beat.payload for c in self.chunks],
                                      8 * self.chunk_bytes)),
            out.payload.last.eq(elem_end),
        ]
        with m.If(out.valid & out.ready):
            m.d.comb += beat.ready.eq(word_end | row_end)
            with m.If(row_end):
                m.d.sync += idx.eq(0)
                m.d.comb += rows.r_en.eq(1)
            with m.Else():
                m.d.sync += idx.eq(idx + 1)
        return m


@dataclass(frozen=True)
class Target:
    """A memory type a `Loader2D` loads: its DRAM element size and the SRAM it fills."""

    #: The port name (``f"{name}_wr"`` on the loader).
    name: str
    memory: isa.Mem
    elem_bytes: int
    sram_addr_width: int
    #: Bits per DRAM byte in the SRAM row (sign-extended), or None to copy bytes.
    widen: int | None = None
    #: Column slices of the SRAM (`vdla.hardware.buffers`): each gets its own copy of the
    #: write address and data registers, as no one register should drive every block RAM.
    slices: int = 1

    def lanes(self, bus_bytes: int) -> int:
        """SRAM write enables: one per bus word of the element."""
        return max(1, self.elem_bytes // bus_bytes)

    @property
    def row_bits(self) -> int:
        return 8 * self.elem_bytes * ((self.widen // 8) if self.widen else 1)


class Loader2D(wiring.Component):
    """Execute LOAD instructions for `targets` (one engine, one instruction at a time).

    ``insn.memory_type`` picks the target; ``insn`` is held stable by the owner for the whole
    instruction. Pulse ``start`` with it; ``done`` pulses when the last SRAM row is written
    (with ``io_registers`` the writes leave through a register and ``done`` comes with
    the last one; a part too small for those flip-flops goes without).
    ``elem`` pulses per element taken from DRAM. Each target has a write port
    ``<name>_wr``; only the selected target's enables are ever set.

    A row at or past the target's depth (the SRAM row counter has one bit more than the
    widest index; a base past the end is caught at start) is dropped, and so is every later
    row of the instruction: ``range_error`` is high while they come (`ErrorCode.SRAM_RANGE`;
    the core latches the first). The data is still taken from memory, so the instruction
    completes as usual."""

    def __init__(self, config: Config, targets: Sequence[Target], *, io_registers: bool = True) -> None:
        self.config, self.targets = config, tuple(targets)
        self.io_registers = io_registers
        self.bus_bytes = config.bus_bytes
        x_size_bits = isa.amaranth_layout(config, "mem")["x_size"].shape.width
        self.reader = ElementReader([t.elem_bytes for t in self.targets], config.bus_width, count_width=x_size_bits,
                                    cmd_register=io_registers)
        super().__init__({
            "start": In(1),
            "insn": In(isa.amaranth_layout(config, "mem")),
            "busy": Out(1),
            "done": Out(1),
            "elem": Out(1),
            "range_error": Out(1),
            "mem": Out(read_master(config.bus_width)),
            **{f"{t.name}_wr": Out(sram_write(t.sram_addr_width, t.row_bits, t.lanes(self.bus_bytes), t.slices))
               for t in self.targets},
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.reader = reader = self.reader
        wiring.connect(m, wiring.flipped(self.mem), reader.mem)
        insn, targets = self.insn, self.targets
        aw = self.config.dram_addr_width

        which = Signal(range(len(targets)))  # the target of `insn`
        for i, t in enumerate(targets):
            with m.If(insn.memory_type == t.memory):
                m.d.comb += which.eq(i)
        m.d.comb += reader.size.eq(which)

        # -- row requests ----------------------------------------------------------------
        row_addr = Signal(aw)  # DRAM element address of the next row
        rows_left = Signal(16)
        byte_addr = _pick(m, which, [(row_addr << log2(t.elem_bytes))[:ADDR_WIDTH] for t in targets], ADDR_WIDTH)
        m.d.comb += [
            reader.req.valid.eq(rows_left != 0),
            reader.req.payload.addr.eq(byte_addr),
            reader.req.payload.count.eq(insn.x_size),
        ]
        with m.If(reader.req.valid & reader.req.ready):
            m.d.sync += [row_addr.eq(row_addr + insn.x_stride), rows_left.eq(rows_left - 1)]

        # -- the 2D walk: segment 0 = padding before, 1 = data, 2 = padding after ------------
        xs, ys = Signal(2), Signal(2)
        x_left, y_left = Signal(16), Signal(16)
        addr = Signal(max(t.sram_addr_width for t in targets) + 1)
        past = _pick(m, which, [addr[t.sram_addr_width:] != 0 for t in targets], 1)  # row >= depth
        # This instruction's rows are past the buffer from here on: its base was, or a row was
        # (the counter, one bit wider than the widest buffer's index, could wrap back later).
        over = Signal()
        base_past = _pick(m, which, [insn.sram_base[t.sram_addr_width:] != 0 for t in targets], 1)
        active = Signal()
        m.d.comb += self.busy.eq(active | self.start)

        def first_x():  # x_size >= 1 here (x_size = 0 is a NOP the stage handles)
            return [xs.eq(Mux(insn.x_pad_0 != 0, 0, 1)), x_left.eq(Mux(insn.x_pad_0 != 0, insn.x_pad_0, insn.x_size))]

        with m.If(self.start):
            m.d.sync += [row_addr.eq(insn.dram_base), rows_left.eq(insn.y_size), addr.eq(insn.sram_base),
                         active.eq(1), over.eq(base_past), *first_x()]
            with m.If(insn.y_pad_0 != 0):
                m.d.sync += [ys.eq(0), y_left.eq(insn.y_pad_0)]
            with m.Elif(insn.y_size != 0):
                m.d.sync += [ys.eq(1), y_left.eq(insn.y_size)]
            with m.Else():  # only bottom padding (or nothing: y_left = 0 ends the walk at once)
                m.d.sync += [ys.eq(2), y_left.eq(insn.y_pad_1)]

        pad = (xs != 1) | (ys != 1)
        advance = Signal()
        lane = Signal(range(max(t.lanes(self.bus_bytes) for t in targets)))
        chunk = reader.out.payload.data
        m.d.comb += reader.out.ready.eq(active & (y_left != 0) & ~pad)
        writing = active & (y_left != 0) & (pad | reader.out.valid)
        m.d.comb += self.range_error.eq(writing & (past | over))
        with m.If(writing & past):
            m.d.sync += over.eq(1)
        # The SRAM writes (and `done` with them) leave through a register: the memory's read
        # data would otherwise cross the chip twice in one cycle, from the memory's block RAMs
        # to the buffer's (the ULX3S-85F's critical path).
        finished = Signal()
        out = m.d.sync if self.io_registers else m.d.comb
        out += self.done.eq(finished)
        for i, t in enumerate(targets):
            port, lanes = getattr(self, f"{t.name}_wr"), t.lanes(self.bus_bytes)
            en = Signal.like(port.en, name=f"{t.name}_en_next")
            addr_next = Signal(t.sram_addr_width, name=f"{t.name}_addr_next")
            data_next = Signal(len(port.data) // t.slices, name=f"{t.name}_data_next")
            bits = chunk[: 8 * min(t.elem_bytes, self.bus_bytes)]
            if t.widen:
                bits = Cat(*(_sext(bits.word_select(k, 8), t.widen) for k in range(len(bits) // 8)))
            m.d.comb += [addr_next.eq(addr), data_next.eq(Mux(pad, 0, bits.replicate(lanes // t.slices)))]
            with m.If(active & (which == i) & (y_left != 0) & ~past & ~over):
                with m.If(pad):
                    m.d.comb += en.eq(-1)
                with m.Elif(reader.out.valid):
                    m.d.comb += en.eq(Const(1, lanes) << lane if lanes > 1 else 1)
            out += port.en.eq(en)
            if t.slices == 1:
                out += [port.addr.eq(addr_next), port.data.eq(data_next)]
            else:  # separate registers, which the board build keeps apart (Yosys would merge them)
                # Each slice registers the bus word once and fans it out to its own block RAMs: a
                # register per replica (2048 flip-flops on the 85F's WGT buffer) left router2
                # short of wires around the block RAMs.
                w, copies = len(port.data) // t.slices, lanes // t.slices
                assert len(bits) * copies == w, (t.name, len(bits), copies, w)
                for k in range(t.slices):
                    a, d = Signal.like(addr_next, name=f"{t.name}_wr_addr_{k}"), Signal(len(bits), name=f"{t.name}_wr_data_{k}")
                    out += [a.eq(addr_next), d.eq(Mux(pad, 0, bits))]
                    m.d.comb += [port.addr[k].eq(a), port.data[k * w:(k + 1) * w].eq(d.replicate(copies))]

        with m.If(active & (y_left == 0)):  # y_size = 0 and no padding: nothing to write
            m.d.sync += active.eq(0)
            m.d.comb += finished.eq(1)
        with m.Elif(active):
            with m.If(pad):
                m.d.comb += advance.eq(1)
            with m.Elif(reader.out.valid):
                m.d.sync += lane.eq(lane + 1)
                with m.If(reader.out.payload.last):
                    m.d.sync += lane.eq(0)
                    m.d.comb += [advance.eq(1), self.elem.eq(1)]

        x_more = Mux(xs == 0, 1, (xs == 1) & (insn.x_pad_1 != 0))  # another segment follows in this row
        with m.If(advance):
            m.d.sync += addr.eq(addr + 1)
            with m.If(x_left != 1):
                m.d.sync += x_left.eq(x_left - 1)
            with m.Elif(x_more):
                m.d.sync += [xs.eq(xs + 1), x_left.eq(Mux(xs == 0, insn.x_size, insn.x_pad_1))]
            with m.Else():  # end of a row
                m.d.sync += first_x()
                with m.If(y_left != 1):
                    m.d.sync += y_left.eq(y_left - 1)
                with m.Elif((ys == 0) & (insn.y_size != 0)):
                    m.d.sync += [ys.eq(1), y_left.eq(insn.y_size)]
                with m.Elif((ys != 2) & (insn.y_pad_1 != 0)):
                    m.d.sync += [ys.eq(2), y_left.eq(insn.y_pad_1)]
                with m.Else():
                    m.d.sync += active.eq(0)
                    m.d.comb += finished.eq(1)
        return m


def _sext(byte, width: int):
    """Sign-extend an 8-bit value to `width` bits."""
    return Cat(byte, byte[7].replicate(width - 8))
