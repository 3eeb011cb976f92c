"""AXI4 memory master and AXI4-Lite control slave for the VDLA core.

`AxiMaster` puts the core's four memory-request ports (`vdla.hardware.interfaces`) on
ONE AXI4 manager port; `AxiLiteControl` is the control/status register file;
`vdla.hardware.top.AxiTop` joins them to a `Core`.

AXI4 master
-----------

- Every command ``{addr, beats}`` is split into INCR bursts of at most ``max_burst``
  beats (1..256, the AXI4 limit; default ``config.timing.max_burst_beats``, so the golden
  simulator's cycle model describes the same bursts). A burst never crosses a 4 KiB
  boundary. ``AxSIZE`` is the full bus width; addresses are bus-aligned.
- Reads: fetch, load and compute each have a read-data FIFO of ``read_fifo_depth``
  beats. A burst is only requested when its FIFO has room for all of it (space is
  reserved when the burst is issued), so ``RREADY`` is always high and a stalled reader
  never blocks the shared R channel: no head-of-line deadlock between stages. ``ARID``
  names the port (0 fetch, 1 load, 2 compute); R beats are routed by ``RID``, so the
  slave may interleave or reorder bursts of different IDs.
- Arbitration of the AR channel: round robin between fetch, load and compute, one burst
  per grant (the port granted last has the lowest priority next); a port without FIFO room
  is skipped. The address slot is a register, so a new burst can be issued every cycle.
- Writes: only store writes, so AW needs no arbiter. ``AWID`` is 0. W beats follow the
  AW bursts in order (``WLAST`` on each burst's last beat); at most ``write_bursts``
  bursts are outstanding. Once every burst of a store command has its B response, the
  store port gets its one response.
- Reads and writes use the independent AXI channels concurrently. A write is
  acknowledged to the core only after its B response, so the token protocol orders
  a STORE before any LOAD that depends on it.
- ``bus_error``: a response other than OKAY on R or B (sticky until ``clear``).

AXI4-Lite control slave: register map
-------------------------------------

The registers are :mod:`vdla.hardware.regmap`'s (``REGISTERS`` is its AXI view: control,
status, instruction address and count, cycles, error code and index, MAGIC/VERSION, debug
registers, counters from 0x40); the address bus is ``ctrl_addr_width`` bits, 8 by
default; responses are OKAY.

Start/done handshake: a write of 1 to CONTROL latches INSN_ADDR and INSN_COUNT and pulses
the core's start in the cycle the write response is issued. From that cycle on STATUS
reads done = 0 and running = 1 (done is masked while the start is in flight), so a host
that polls STATUS after its write completes can never see the previous run's done.
done (and error, if set) then stay set until the next start. ``irq`` is done.
INSN_ADDR/INSN_COUNT may be rewritten while the core runs; the new values take effect at
the next start.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from ..config import Config
from .core import COUNTER_NAMES, QUEUES, STAGES
from .errors import ERROR_BITS
from .interfaces import ADDR_WIDTH, read_master, write_master
from .regmap import AXI, COUNTER_BASE, MAGIC, STATUS_BITS, VERSION, registers

__all__ = [
    "axi4_signature", "axi4_lite_signature", "AxiMaster", "AxiLiteControl", "REGISTERS", "COUNTER_BASE",
    "MAGIC", "VERSION", "STATUS_BITS", "READ_PORTS",
]

ID_WIDTH = 2
#: Read ports in ARID order.
READ_PORTS = ("fetch", "load", "compute")
#: Register name -> byte offset of the AXI4-Lite slave (`vdla.hardware.regmap`, counters included).
REGISTERS = registers(AXI)


def axi4_signature(addr_width: int, data_width: int, id_width: int = ID_WIDTH) -> wiring.Signature:
    """An AXI4 manager port (flat AXI signal names: awvalid, wdata, ...), from the manager's side."""
    strb = data_width // 8
    return wiring.Signature({
        "awid": Out(id_width), "awaddr": Out(addr_width), "awlen": Out(8), "awsize": Out(3), "awburst": Out(2),
        "awlock": Out(1), "awcache": Out(4), "awprot": Out(3), "awqos": Out(4), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_width), "wstrb": Out(strb), "wlast": Out(1), "wvalid": Out(1), "wready": In(1),
        "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "arid": Out(id_width), "araddr": Out(addr_width), "arlen": Out(8), "arsize": Out(3), "arburst": Out(2),
        "arlock": Out(1), "arcache": Out(4), "arprot": Out(3), "arqos": Out(4), "arvalid": Out(1), "arready": In(1),
        "rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1), "rvalid": In(1),
        "rready": Out(1),
    })


def axi4_lite_signature(addr_width: int = 8, data_width: int = 32) -> wiring.Signature:
    """An AXI4-Lite manager port (flat names), from the manager's side; a slave uses it flipped."""
    return wiring.Signature({
        "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
        "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1), "wready": In(1),
        "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
        "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
    })


def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


def _pair(lo, hi) -> Value:
    """Two levels in one register: ``lo`` in bits [15:0], ``hi`` in [31:16]."""
    return Value.cast(lo)[:16] | (Value.cast(hi)[:16] << 16)


class _Splitter:
    """Holds one command and proposes its next burst: ``n`` beats at ``addr`` (``pending``)."""

    def __init__(self, m: Module, cmd, bus_bytes: int, max_burst: int, name: str) -> None:
        self.addr = Signal(ADDR_WIDTH, name=f"{name}_addr")
        self.left = Signal(32, name=f"{name}_left")
        self.n = Signal(range(max_burst + 1), name=f"{name}_n")
        self.pending = Signal(name=f"{name}_pending")
        self.take = Signal(name=f"{name}_take")  # the proposed burst is issued this cycle
        log_b = _log2(bus_bytes)
        to_4k = Signal(range((4096 >> log_b) + 1), name=f"{name}_to_4k")
        cap = min(max_burst, 4096 // bus_bytes)
        first = Signal(range(cap + 1), name=f"{name}_first")  # min(left, cap)
        m.d.comb += [
            to_4k.eq((4096 - self.addr[:12]) >> log_b),
            first.eq(Mux(self.left < cap, self.left, cap)),
            self.n.eq(Mux(to_4k < first, to_4k, first)),
            self.pending.eq(self.left != 0),
            cmd.ready.eq(self.left == 0),
        ]
        with m.If(self.take):
            m.d.sync += [self.addr.eq(self.addr + (self.n << log_b)), self.left.eq(self.left - self.n)]
        with m.If(cmd.valid & cmd.ready):
            m.d.sync += [self.addr.eq(cmd.payload.addr), self.left.eq(cmd.payload.beats)]


class AxiMaster(wiring.Component):
    """The core's fetch/load/compute read ports and store write port on one AXI4 port."""

    def __init__(self, config: Config, *, max_burst: int | None = None, read_fifo_depth: int | None = None,
                 write_bursts: int = 8) -> None:
        self.config = config
        self.max_burst = config.timing.max_burst_beats if max_burst is None else max_burst
        if not 1 <= self.max_burst <= 256:
            raise ValueError(f"max_burst must be in 1..256 (AXI4 INCR), not {self.max_burst}")
        self.read_fifo_depth = read_fifo_depth or max(4 * self.max_burst, 64)
        if self.read_fifo_depth < self.max_burst:
            raise ValueError(f"read_fifo_depth ({self.read_fifo_depth}) must hold one burst ({self.max_burst})")
        self.write_bursts = write_bursts
        bw = config.bus_width
        super().__init__({
            **{name: In(read_master(bw)) for name in READ_PORTS},
            "store": In(write_master(bw)),
            "bus": Out(axi4_signature(ADDR_WIDTH, bw)),
            "clear": In(1),
            "bus_error": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        B, bw = c.bus_bytes, c.bus_width
        bus = self.bus
        size = _log2(B)
        m.d.comb += [
            bus.arsize.eq(size), bus.arburst.eq(1), bus.arcache.eq(0b0011),
            bus.awsize.eq(size), bus.awburst.eq(1), bus.awcache.eq(0b0011), bus.awid.eq(0),
        ]

        # -- reads ---------------------------------------------------------------------------------
        depth = self.read_fifo_depth
        ports = [getattr(self, name) for name in READ_PORTS]
        splitters, wants = [], []
        for i, (name, port) in enumerate(zip(READ_PORTS, ports)):
            sp = _Splitter(m, port.cmd, B, self.max_burst, f"rd_{name}")
            q = fifo.SyncFIFOBuffered(width=bw, depth=depth)
            m.submodules[f"rdata_{name}"] = q
            used = Signal(range(depth + 1), name=f"rd_{name}_used")  # beats reserved in the FIFO
            popped = q.r_rdy & port.data.ready
            m.d.comb += [
                port.data.valid.eq(q.r_rdy), port.data.payload.eq(q.r_data), q.r_en.eq(port.data.ready),
                q.w_data.eq(bus.rdata), q.w_en.eq(bus.rvalid & (bus.rid == i)),
            ]
            m.d.sync += used.eq(used + Mux(sp.take, sp.n, 0) - popped)
            want = Signal(name=f"rd_{name}_want")
            m.d.comb += want.eq(sp.pending & (used + sp.n <= depth))
            splitters.append(sp)
            wants.append(want)
        m.d.comb += bus.rready.eq(1)

        # AR slot and round-robin arbiter.
        arvalid = Signal()
        m.d.comb += bus.arvalid.eq(arvalid)
        load_ar = ~arvalid | bus.arready
        last = Signal(range(len(ports)), init=len(ports) - 1)
        grant = Signal(range(len(ports)))
        any_want = Signal()
        with m.Switch(last):
            for lst in range(len(ports)):
                with m.Case(lst):
                    order = [(lst + 1 + k) % len(ports) for k in range(len(ports))]
                    for k, i in enumerate(order):
                        with (m.If if k == 0 else m.Elif)(wants[i]):
                            m.d.comb += [grant.eq(i), any_want.eq(1)]
        with m.If(load_ar):
            m.d.sync += arvalid.eq(any_want)
            with m.If(any_want):
                m.d.sync += [last.eq(grant), bus.arid.eq(grant)]
                for i, sp in enumerate(splitters):
                    with m.If(grant == i):
                        m.d.comb += sp.take.eq(1)
                        m.d.sync += [bus.araddr.eq(sp.addr), bus.arlen.eq(sp.n - 1)]

        # -- writes --------------------------------------------------------------------------------
        st = self.store
        wsp = _Splitter(m, st.cmd, B, self.max_burst, "wr")
        # The splitters of the last elaboration, for the formal proofs' invariants (no hardware).
        self.splitters = dict(zip((*READ_PORTS, "store"), (*splitters, wsp)))
        m.submodules.wlen = wlen = fifo.SyncFIFO(width=8, depth=self.write_bursts)
        m.submodules.bflag = bflag = fifo.SyncFIFO(width=1, depth=self.write_bursts)
        awvalid = Signal()
        m.d.comb += bus.awvalid.eq(awvalid)
        load_aw = ~awvalid | bus.awready
        issue = load_aw & wsp.pending & wlen.w_rdy & bflag.w_rdy
        m.d.comb += [
            wsp.take.eq(issue),
            wlen.w_en.eq(issue), wlen.w_data.eq(wsp.n - 1),
            bflag.w_en.eq(issue), bflag.w_data.eq(wsp.left == wsp.n),  # the command's last burst
        ]
        with m.If(load_aw):
            m.d.sync += awvalid.eq(issue)
            with m.If(issue):
                m.d.sync += [bus.awaddr.eq(wsp.addr), bus.awlen.eq(wsp.n - 1)]
        # W beats, burst by burst.
        beat = Signal(8)
        wlast = beat == wlen.r_data
        m.d.comb += [
            bus.wvalid.eq(wlen.r_rdy & st.data.valid),
            bus.wdata.eq(st.data.payload.data), bus.wstrb.eq(st.data.payload.strb), bus.wlast.eq(wlast),
            st.data.ready.eq(wlen.r_rdy & bus.wready),
        ]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += beat.eq(Mux(wlast, 0, beat + 1))
            m.d.comb += wlen.r_en.eq(wlast)
        # B responses -> one response per store command.
        resps = Signal(range(self.write_bursts + 2))
        got = bus.bvalid & bus.bready
        m.d.comb += [bus.bready.eq(bflag.r_rdy), bflag.r_en.eq(got), st.resp.valid.eq(resps != 0), st.resp.payload.eq(0)]
        m.d.sync += resps.eq(resps + (got & bflag.r_data) - (st.resp.valid & st.resp.ready))

        # -- errors --------------------------------------------------------------------------------
        with m.If((bus.rvalid & bus.rready & (bus.rresp != 0)) | (got & (bus.bresp != 0))):
            m.d.sync += self.bus_error.eq(1)
        with m.If(self.clear):
            m.d.sync += self.bus_error.eq(0)
        return m


class AxiLiteControl(wiring.Component):
    """The control/status registers (see the module docstring) behind an AXI4-Lite slave port.

    Core side: ``start``, ``insn_addr``, ``insn_count`` out; status, counters and debug in
    (same names and shapes as `vdla.hardware.Core`'s ports).
    """

    def __init__(self, config: Config, counters_layout, debug_layout, addr_width: int = 8) -> None:
        self.config = config
        self.addr_width = addr_width
        if addr_width < 8:
            raise ValueError("the register map needs an 8-bit address")
        super().__init__({
            "bus": In(axi4_lite_signature(addr_width)),
            "start": Out(1),
            "insn_addr": Out(32),
            "insn_count": Out(32),
            "running": In(1),
            "done": In(1),
            "error": In(1),
            "error_code": In(ERROR_BITS),
            "error_index": In(32),
            "bus_error": In(1),
            "counters": In(counters_layout),
            "debug": In(debug_layout),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        bus = self.bus
        reg_addr, reg_count = Signal(32), Signal(32)

        # -- writes: take AW and W (in either order), then answer on B -----------------------
        aw_got, w_got = Signal(), Signal()
        aw_addr = Signal(self.addr_width)
        w_data, w_strb = Signal(32), Signal(4)
        bvalid = Signal()
        m.d.comb += [
            bus.awready.eq(~aw_got & ~bvalid), bus.wready.eq(~w_got & ~bvalid),
            bus.bvalid.eq(bvalid), bus.bresp.eq(0),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_got.eq(1), aw_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_got.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        with m.If(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        def masked(old):
            return Cat(*(Mux(w_strb[k], w_data[8 * k: 8 * k + 8], old[8 * k: 8 * k + 8]) for k in range(4)))

        start = Signal()
        m.d.sync += start.eq(0)
        with m.If(aw_got & w_got):
            m.d.sync += [aw_got.eq(0), w_got.eq(0), bvalid.eq(1)]
            word = aw_addr[2:8]
            with m.If(aw_addr[8:] == 0):
                with m.Switch(word):
                    with m.Case(REGISTERS["control"] >> 2):
                        with m.If(w_strb[0] & w_data[0] & ~self.running):
                            m.d.sync += [start.eq(1), self.insn_addr.eq(reg_addr), self.insn_count.eq(reg_count)]
                    with m.Case(REGISTERS["insn_addr"] >> 2):
                        m.d.sync += reg_addr.eq(masked(reg_addr))
                    with m.Case(REGISTERS["insn_count"] >> 2):
                        m.d.sync += reg_count.eq(masked(reg_count))
        m.d.comb += self.start.eq(start)

        # -- reads: one cycle from AR to R ----------------------------------------------------
        dbg, cnt = self.debug, self.counters
        status = Signal(32)
        m.d.comb += [
            status[STATUS_BITS["done"]].eq(self.done & ~start),
            status[STATUS_BITS["running"]].eq(self.running | start),
            status[STATUS_BITS["error"]].eq(self.error & ~start),
            status[STATUS_BITS["bus_error"]].eq(self.bus_error),
        ]
        values = {
            "status": status, "insn_addr": reg_addr, "insn_count": reg_count, "cycles": cnt.cycles,
            "error_code": self.error_code, "error_index": self.error_index,
            "magic": Const(MAGIC, 32), "version": Const(VERSION, 32),
            "debug_state": Cat(*(Value.cast(getattr(dbg, f"{s}_state")) for s in STAGES), Const(0, 2), dbg.fetch_busy),
            "debug_lq": _pair(getattr(dbg, QUEUES[0]), getattr(dbg, QUEUES[1])),
            "debug_sq": _pair(getattr(dbg, QUEUES[2]), getattr(dbg, QUEUES[3])),
            "debug_cmdq": _pair(dbg.load_queue, dbg.compute_queue),
            "debug_cmdq_s": dbg.store_queue,
            **{f"counter_{name}": getattr(cnt, name) for name in COUNTER_NAMES},
        }
        rvalid, rdata = Signal(), Signal(32)
        m.d.comb += [bus.arready.eq(~rvalid), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata), bus.rresp.eq(0)]
        with m.If(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [rvalid.eq(1), rdata.eq(0)]
            with m.If(bus.araddr[8:] == 0):
                with m.Switch(bus.araddr[2:8]):
                    for name, value in values.items():
                        with m.Case(REGISTERS[name] >> 2):
                            m.d.sync += rdata.eq(value)
        return m


# Formal properties (proved by `nox -s formal`, stated in vdla/hardware/formal/properties.py):
# axi_master: AR/AW VALID held until READY with a stable payload; no burst crosses 4 KiB or exceeds max_burst;
# AxSIZE/AxBURST fixed (k-induction). axi_master_w: W likewise (bounded model check). axi_response: with a
# slave and ports that stall at most one cycle in a row, RREADY is always high and every read command gets
# its beats and every store command its response, no port waiting 20 cycles in a row (bounded, 30 cycles).
# (Kept at the end of the file: the RTLIL names source lines, which the board bitstreams hash.)
