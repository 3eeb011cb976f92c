"""The host bridge: executes `vdla.hardware.bridge_protocol` frames on a memory port and a register port.

    bridge = Bridge(mem_size=64 << 10, data_width=64, max_block=256, idle_cycles=250_000)
    # bridge.rx / bridge.tx: byte streams (from UARTRx / to UARTTx); bridge.mem, bridge.reg: below
    top = SerialBridge(divisor=divisor_for(25e6, 115200), clk_hz=25e6, mem_size=..., data_width=...)
    # the same with the UART inside: top.rx / top.tx are the pins

The protocol (frames, CRC, NAK rules, duplicate suppression) is specified in
`vdla.hardware.bridge_protocol`, whose `BridgeModel` behaves byte-for-byte like this
gateware. Every command is buffered and CRC-checked (header, then data) before anything
is executed, so a damaged frame is NAKed with no side effect. Write data is held in a
``max_block``-byte `Memory` (block RAM) until its CRC has been checked.

Memory port (``mem``, `mem_port_signature`; directions from the bridge's side)::

    addr   Out  word address (byte address // (data_width // 8))
    we     Out  1 = write, 0 = read
    be     Out  byte enables of a write, one bit per byte lane (lane k = bits 8k+7..8k)
    wdata  Out  write data (the byte is replicated in every lane)
    valid  Out  a request is pending; addr/we/be/wdata are held until it completes
    ready  In   completes the request in a cycle where valid & ready
    rdata  In   read data, taken in the cycle where valid & ready (for reads)

The bridge moves one byte per request (``be`` has one bit set), so any memory with byte
enables serves it without read-modify-write; `connect_sram` adapts a
`amaranth.lib.memory.Memory` read/write port pair (one cycle of read latency).
A memory may keep ``ready`` low as long as it likes (e.g. while the core owns it).

Register port (``reg``, `reg_port_signature`)::

    addr   Out  byte offset of a 32-bit register (a multiple of 4, below 2**reg_addr_width)
    wdata  Out  value to write
    we     Out  write strobe: one cycle, with addr and wdata valid
    rdata  In   value of register ``addr``; sampled two cycles after ``addr`` is set and
                held, so a read through two register stages works. Reads must have no side
                effects (they may be repeated by retries).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from .bridge_protocol import CRC_INIT, CRC_POLY, REG_BYTES, SOF_CMD, SOF_RSP, Op, Status, crc16_update, ping_payload
from .uart import UARTRx, UARTTx

__all__ = ["Bridge", "SerialBridge", "mem_port_signature", "reg_port_signature", "connect_sram", "crc16_next"]

#: The command header after SOF, in arrival order (bytes 1..8 of the frame).
Header = data.StructLayout({"seq": unsigned(8), "op": unsigned(8), "addr": unsigned(32), "len": unsigned(16)})

assert CRC_POLY == 0x1021  # crc16_next below derives its XOR network from the protocol's table


def crc16_next(crc, byte):
    """The CRC-16 register after shifting in `byte`: an XOR network derived from the protocol's CRC."""
    bits = []
    for j in range(16):
        taps = [crc[i] for i in range(16) if (crc16_update(1 << i, 0) >> j) & 1]
        taps += [byte[k] for k in range(8) if (crc16_update(0, 1 << k) >> j) & 1]
        acc = taps[0]
        for t in taps[1:]:
            acc = acc ^ t
        bits.append(acc)
    return Cat(*bits)


def mem_port_signature(data_width: int, addr_width: int) -> wiring.Signature:
    """The bridge's memory port (see the module docstring), from the bridge's side."""
    return wiring.Signature({
        "addr": Out(addr_width), "we": Out(1), "be": Out(data_width // 8), "wdata": Out(data_width),
        "valid": Out(1), "ready": In(1), "rdata": In(data_width),
    })


def reg_port_signature(addr_width: int = 8) -> wiring.Signature:
    """The bridge's control-register port (see the module docstring), from the bridge's side."""
    return wiring.Signature({"addr": Out(addr_width), "wdata": Out(32), "we": Out(1), "rdata": In(32)})


def connect_sram(m: Module, port, read_port, write_port) -> None:
    """Serve a bridge memory port (the bridge's ``mem``) from a `Memory` read port (synchronous,
    enabled) and write port (granularity 8), both as wide as the bridge's data."""
    pending = Signal()
    m.d.comb += [
        read_port.addr.eq(port.addr), write_port.addr.eq(port.addr),
        write_port.data.eq(port.wdata), port.rdata.eq(read_port.data),
    ]
    with m.If(port.valid & port.we):
        m.d.comb += [write_port.en.eq(port.be), port.ready.eq(1)]
    with m.If(port.valid & ~port.we):
        m.d.sync += pending.eq(~pending)  # the data is there the cycle after the address
        m.d.comb += port.ready.eq(pending)


class Bridge(wiring.Component):
    """Frame parser and executor. ``rx``/``tx`` are byte streams; ``mem`` and ``reg`` are the ports.

    Parameters: ``mem_size`` bytes of memory behind ``mem`` (a multiple of the word size),
    ``data_width`` of the memory port (8..; a power of two), ``max_block`` the largest
    WRITE_MEM/READ_MEM (1..65535), ``reg_addr_width`` the register port's byte-offset width,
    ``idle_cycles`` the T_idle of the protocol in clock cycles.
    """

    def __init__(self, *, mem_size: int, data_width: int = 32, max_block: int = 256, reg_addr_width: int = 8,
                 idle_cycles: int = 1000) -> None:
        if data_width < 8 or data_width & (data_width - 1):
            raise ValueError(f"data_width must be a power of two >= 8, not {data_width}")
        self.lane_bytes = data_width // 8
        if mem_size <= 0 or mem_size % self.lane_bytes or mem_size >= 1 << 32:
            raise ValueError(f"mem_size {mem_size} must be a positive multiple of {self.lane_bytes} below 2**32")
        if not 1 <= max_block <= 0xFFFF:
            raise ValueError(f"max_block must be in 1..65535, not {max_block}")
        if not 2 <= reg_addr_width <= 32:
            raise ValueError(f"reg_addr_width must be in 2..32, not {reg_addr_width}")
        if idle_cycles < 1:
            raise ValueError("idle_cycles must be positive")
        self.mem_size, self.data_width, self.max_block = mem_size, data_width, max_block
        self.reg_addr_width, self.idle_cycles = reg_addr_width, idle_cycles
        self.word_addr_width = max(1, ceil_log2(mem_size // self.lane_bytes))
        super().__init__({
            "rx": In(stream.Signature(8)),
            "tx": Out(stream.Signature(8)),
            "mem": Out(mem_port_signature(data_width, self.word_addr_width)),
            "reg": Out(reg_port_signature(reg_addr_width)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        lane_bits = exact_log2(self.lane_bytes)

        m.submodules.buf = buf = Memory(shape=8, depth=self.max_block, init=[])
        buf_wr = buf.write_port()
        buf_rd = buf.read_port()

        hdr = Signal(Header)
        crc = Signal(16)
        cnt = Signal(16)  # byte counter within the current part of a frame
        status = Signal(8)
        rsp_len = Signal(16)
        shreg = Signal(64)  # register write data in; small response data out (LSB first)
        ptr = Signal(32)  # byte address of the next memory access
        last_seq = Signal(8)
        last_valid = Signal()
        idle = Signal(range(self.idle_cycles + 1))
        timeout = Signal()

        rx, tx = self.rx, self.tx
        byte = rx.payload
        got = Signal()
        m.d.comb += [rx.ready.eq(1), got.eq(rx.valid), timeout.eq(idle == self.idle_cycles)]
        with m.If(got):
            m.d.sync += idle.eq(0)
        with m.Elif(~timeout):
            m.d.sync += idle.eq(idle + 1)

        crc_in = Signal(16)
        crc_out = Signal(16)
        crc_byte = Signal(8)
        m.d.comb += crc_out.eq(crc16_next(crc_in, crc_byte))

        is_write = (hdr.op == Op.WRITE_MEM) | (hdr.op == Op.WRITE_REG)
        is_mem = (hdr.op == Op.WRITE_MEM) | (hdr.op == Op.READ_MEM)
        is_reg = (hdr.op == Op.WRITE_REG) | (hdr.op == Op.READ_REG)
        op_ok = (hdr.op == Op.PING) | is_mem | is_reg
        len_ok = Signal()
        addr_ok = Signal()
        with m.If(hdr.op == Op.PING):
            m.d.comb += [len_ok.eq(hdr.len == 0), addr_ok.eq(1)]
        with m.Elif(is_mem):
            m.d.comb += [len_ok.eq(hdr.len <= self.max_block), addr_ok.eq(hdr.addr + hdr.len <= self.mem_size)]
        with m.Else():
            m.d.comb += [
                len_ok.eq(hdr.len == REG_BYTES),
                addr_ok.eq((hdr.addr[:2] == 0) & (hdr.addr >> self.reg_addr_width == 0)),
            ]
        # Sequence window (bridge_protocol, "Duplicates and replays"): a frame is new when its
        # SEQ is 1..127 ahead of the last new one (mod 256); a write that is not new (a retry,
        # or a replay of an older frame) is ACKed with DUPLICATE and not executed.
        ahead = Signal(8)
        m.d.comb += ahead.eq(hdr.seq - last_seq)
        new = ~last_valid | ((ahead != 0) & ~ahead[7])

        # Memory and register ports: addresses follow ptr / the header.
        mem = self.mem
        lane = ptr[:lane_bits]
        m.d.comb += [
            mem.addr.eq(ptr[lane_bits:]),
            mem.wdata.eq(Cat(*[buf_rd.data] * self.lane_bytes)),
            mem.be.eq(Const(1, self.lane_bytes) << lane),
            self.reg.addr.eq(hdr.addr),
            self.reg.wdata.eq(shreg[32:64]),
            buf_rd.addr.eq(cnt),
            buf_wr.addr.eq(cnt),
            buf_wr.data.eq(byte),
        ]
        rdata_byte = mem.rdata.word_select(lane, 8) if lane_bits else mem.rdata[:8]

        info = int.from_bytes(ping_payload(self.max_block, self.mem_size), "little")

        def fail(st, verified: bool) -> None:
            m.d.sync += [status.eq(st), rsp_len.eq(0)]
            if not verified:
                m.d.sync += hdr.eq(0)  # BAD_HCRC and INCOMPLETE NAKs carry SEQ = OP = 0
            m.next = "DRAIN"

        with m.FSM():
            with m.State("HUNT"):
                m.d.comb += [crc_in.eq(CRC_INIT), crc_byte.eq(byte)]
                with m.If(got & (byte == SOF_CMD)):
                    m.d.sync += [crc.eq(crc_out), cnt.eq(0)]
                    m.next = "HEADER"

            with m.State("HEADER"):  # SEQ OP ADDR LEN HCRC: 10 bytes
                m.d.comb += [crc_in.eq(crc), crc_byte.eq(byte)]
                with m.If(got):
                    m.d.sync += [crc.eq(crc_out), cnt.eq(cnt + 1)]
                    with m.If(cnt < 8):
                        m.d.sync += hdr.eq(Cat(hdr.as_value()[8:], byte))
                    with m.If(cnt == 9):
                        m.next = "CHECK"
                with m.Elif(timeout):
                    fail(Status.INCOMPLETE, verified=False)
                    m.next = "RSP_START"

            with m.State("CHECK"):
                m.d.sync += [cnt.eq(0), crc.eq(CRC_INIT), ptr.eq(hdr.addr)]
                with m.If(crc != 0):
                    fail(Status.BAD_HCRC, verified=False)
                with m.Elif(~op_ok):
                    fail(Status.BAD_OP, verified=True)
                with m.Elif(~len_ok):
                    fail(Status.BAD_LEN, verified=True)
                with m.Elif(~addr_ok):
                    fail(Status.BAD_ADDR, verified=True)
                with m.Elif(is_write):
                    m.next = "DATA"
                with m.Else():
                    m.next = "EXEC"

            with m.State("DATA"):  # LEN bytes of data, then DCRC
                m.d.comb += [crc_in.eq(crc), crc_byte.eq(byte)]
                with m.If(got):
                    m.d.sync += [crc.eq(crc_out), cnt.eq(cnt + 1)]
                    with m.If(cnt < hdr.len):
                        m.d.comb += buf_wr.en.eq(1)
                        m.d.sync += shreg.eq(Cat(shreg[8:], byte))
                    with m.If(cnt == hdr.len + 1):
                        m.next = "DCHECK"
                with m.Elif(timeout):
                    fail(Status.INCOMPLETE, verified=False)
                    m.next = "RSP_START"

            with m.State("DCHECK"):
                m.d.sync += cnt.eq(0)
                with m.If(crc != 0):
                    fail(Status.BAD_DCRC, verified=True)
                with m.Else():
                    m.next = "EXEC"

            with m.State("EXEC"):
                m.d.sync += [cnt.eq(0), rsp_len.eq(0), status.eq(Status.OK)]
                with m.If(new | (hdr.op == Op.PING)):  # a PING starts a session: it moves the window
                    m.d.sync += [last_seq.eq(hdr.seq), last_valid.eq(1)]
                with m.If(is_write & ~new):
                    m.d.sync += status.eq(Status.DUPLICATE)
                    m.next = "RSP_START"
                with m.Elif(hdr.op == Op.PING):
                    m.d.sync += [shreg.eq(info), rsp_len.eq(8)]
                    m.next = "RSP_START"
                with m.Elif(hdr.op == Op.WRITE_MEM):
                    m.next = "WMEM_RD"
                with m.Elif(hdr.op == Op.READ_MEM):
                    m.d.sync += rsp_len.eq(hdr.len)
                    m.next = "RSP_START"
                with m.Elif(hdr.op == Op.WRITE_REG):
                    m.d.comb += self.reg.we.eq(1)
                    m.next = "RSP_START"
                with m.Else():  # READ_REG: rdata is sampled two cycles later
                    m.next = "RREG_WAIT"

            with m.State("RREG_WAIT"):
                m.next = "RREG"

            with m.State("RREG"):
                m.d.sync += [shreg.eq(self.reg.rdata), rsp_len.eq(REG_BYTES)]
                m.next = "RSP_START"

            with m.State("WMEM_RD"):  # buf_rd.addr = cnt; its data is valid next cycle
                with m.If(cnt == hdr.len):
                    m.next = "RSP_START"
                with m.Else():
                    m.next = "WMEM_WR"

            with m.State("WMEM_WR"):
                m.d.comb += [mem.valid.eq(1), mem.we.eq(1)]
                with m.If(mem.ready):
                    m.d.sync += [cnt.eq(cnt + 1), ptr.eq(ptr + 1)]
                    m.next = "WMEM_RD"

            with m.State("DRAIN"):  # discard until the line is idle, then NAK
                with m.If(timeout & ~got):
                    m.next = "RSP_START"

            with m.State("RSP_START"):
                m.d.sync += [crc.eq(CRC_INIT), cnt.eq(0)]
                m.next = "RSP_HDR"

            with m.State("RSP_HDR"):  # SOF SEQ OP STATUS LEN, then HCRC
                hdr_bytes = [Const(SOF_RSP, 8), hdr.seq, hdr.op, status, rsp_len[:8], rsp_len[8:]]
                with m.Switch(cnt):
                    for i, b in enumerate(hdr_bytes):
                        with m.Case(i):
                            m.d.comb += tx.payload.eq(b)
                    with m.Case(6):
                        m.d.comb += tx.payload.eq(crc[8:])
                    with m.Default():
                        m.d.comb += tx.payload.eq(crc[:8])
                m.d.comb += [tx.valid.eq(1), crc_in.eq(crc), crc_byte.eq(tx.payload)]
                with m.If(tx.ready):
                    m.d.sync += cnt.eq(cnt + 1)
                    with m.If(cnt < 6):
                        m.d.sync += crc.eq(crc_out)
                    with m.If(cnt == 7):
                        m.d.sync += [cnt.eq(0), crc.eq(CRC_INIT)]
                        with m.If(rsp_len == 0):
                            m.next = "HUNT"
                        with m.Elif(hdr.op == Op.READ_MEM):
                            m.next = "RMEM"
                        with m.Else():
                            m.next = "RSP_DATA"

            with m.State("RMEM"):  # fetch the next byte of a READ_MEM into shreg[0:8]
                m.d.comb += mem.valid.eq(1)
                with m.If(mem.ready):
                    m.d.sync += [shreg[:8].eq(rdata_byte), ptr.eq(ptr + 1)]
                    m.next = "RSP_DATA"

            with m.State("RSP_DATA"):
                m.d.comb += [tx.valid.eq(1), tx.payload.eq(shreg[:8]), crc_in.eq(crc), crc_byte.eq(shreg[:8])]
                with m.If(tx.ready):
                    m.d.sync += [crc.eq(crc_out), cnt.eq(cnt + 1), shreg.eq(shreg >> 8)]
                    with m.If(cnt + 1 == rsp_len):
                        m.d.sync += cnt.eq(0)
                        m.next = "RSP_DCRC"
                    with m.Elif(hdr.op == Op.READ_MEM):
                        m.next = "RMEM"

            with m.State("RSP_DCRC"):
                m.d.comb += [tx.valid.eq(1), tx.payload.eq(Mux(cnt[0], crc[:8], crc[8:]))]
                with m.If(tx.ready):
                    m.d.sync += cnt.eq(cnt + 1)
                    with m.If(cnt == 1):
                        m.next = "HUNT"
        return m


class SerialBridge(wiring.Component):
    """`UARTRx` + `Bridge` + `UARTTx`: ``rx``/``tx`` are the UART pins, ``mem``/``reg`` the bridge's ports.

    ``idle_cycles`` defaults to 10 ms at ``clk_hz`` (at least 20 byte times).
    """

    def __init__(self, *, divisor: int, mem_size: int, data_width: int = 32, max_block: int = 256,
                 reg_addr_width: int = 8, clk_hz: float | None = None, idle_cycles: int | None = None) -> None:
        if idle_cycles is None:
            byte_times = 20 * 10 * divisor
            idle_cycles = max(byte_times, int(clk_hz * 0.01)) if clk_hz else byte_times
        self.bridge = Bridge(mem_size=mem_size, data_width=data_width, max_block=max_block,
                             reg_addr_width=reg_addr_width, idle_cycles=idle_cycles)
        self.divisor = divisor
        super().__init__({
            "rx": In(1, init=1),
            "tx": Out(1, init=1),
            "mem": Out(self.bridge.mem.signature),
            "reg": Out(self.bridge.reg.signature),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.uart_rx = urx = UARTRx(self.divisor)
        m.submodules.uart_tx = utx = UARTTx(self.divisor)
        m.submodules.bridge = bridge = self.bridge
        m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx)]
        wiring.connect(m, urx.stream, bridge.rx)
        wiring.connect(m, bridge.tx, utx.stream)
        wiring.connect(m, bridge.mem, wiring.flipped(self.mem))
        wiring.connect(m, bridge.reg, wiring.flipped(self.reg))
        return m
