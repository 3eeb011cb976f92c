"""Property wrappers: each instantiates one unit of the core unchanged and states what it guarantees.

Inputs the unit takes from its environment are free signals (ports of the wrapper), so
the solver tries every sequence of them; `Assume` restricts them only where the unit
relies on a rule of its environment (the stream rules of `vdla.hardware.interfaces`: a
valid is held until ready, with a stable payload). The reset is held low: every state the
proof reaches is reached from the reset values. What is proved:

``token_queue`` (`vdla.hardware.tokens.TokenQueue`)
    never overflows (a push is accepted only below ``depth``) nor underflows (a pop only
    above 0); ``level`` always equals accepted pushes minus accepted pops (conservation);
    push.ready / pop.valid are exactly "not full" / "not empty".
``stage_sequencer`` (`vdla.hardware.stage.run_stage` with `TokenPorts`, on real token queues)
    no instruction starts executing (``start``) or skips to PUSH before every token its
    flags ask for is popped in that same cycle; a token is popped only in that cycle and
    only from a queue the instruction names; tokens are pushed only in PUSH; every
    instruction taken from the command queue retires exactly once, and each queue
    receives exactly one push per retired instruction whose flag names it (none lost,
    none twice).
``command_queue`` (the ``SyncFIFOBuffered`` fetch -> stage queue of `vdla.hardware.core`)
    never accepts a write when full nor offers a read when empty; ``level`` equals
    writes minus reads and stays within the depth (k-induction). ``command_queue_order``:
    instructions leave in the order they entered (a tagged instruction is read exactly when
    its predecessors are; bounded: it rests on the FIFO's internal pointers).
``axi_master`` (`vdla.hardware.axi.AxiMaster`, small config)
    ARVALID and AWVALID, once raised, stay high until ARREADY / AWREADY with ARADDR,
    ARLEN, ARID (AWADDR, AWLEN) unchanged; no burst crosses a 4 KiB boundary and none is
    longer than ``max_burst`` beats; AxSIZE is the bus width and AxBURST INCR (k-induction,
    strengthened by the invariant that each command splitter's address stays bus-aligned).
    ``axi_master_w``: WVALID likewise holds WDATA, WSTRB and WLAST (bounded: it rests on the
    write-length FIFO's internal pointers).
``axi_response`` (`AxiMaster` between a fair slave and fair ports, `AxiResponseProps`)
    every request is answered: RREADY is always high, and every read command gets its beats
    and every store command its response, no port waiting 20 cycles in a row (bounded model
    check to 30 cycles: a bounded form of the liveness property "every request is
    eventually answered").

Not proved here: liveness beyond the bound's depth (the RTL watchdog and the differential
fuzz cover long runs), and the datapath's arithmetic (the golden simulator's differential
tests do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume, Fragment
from amaranth.lib import fifo

from ...config import PRESETS
from ..axi import READ_PORTS, AxiMaster
from ..interfaces import ADDR_WIDTH
from ..stage import State, run_stage
from ..tokens import TokenPorts, TokenQueue

__all__ = ["PROOFS", "Proof", "TokenQueueProps", "StageSequencerProps", "CommandQueueProps", "AxiMasterProps",
           "AxiResponseProps"]


class _Props(Elaboratable):
    """A wrapper whose free inputs are listed in ``inputs`` (the ports of the converted design)."""

    def __init__(self) -> None:
        self.inputs: list[Signal] = []

    def free(self, width: int | range = 1, name: str = "") -> Signal:
        s = Signal(width, name=name)
        self.inputs.append(s)
        return s

    def ports(self) -> list[Signal]:
        return self.inputs

    @staticmethod
    def no_reset(m: Module) -> None:
        m.d.comb += Assume(~ResetSignal())

    @staticmethod
    def stream_rules(m: Module, valid: Value, ready: Value, payload: Value, name: str) -> None:
        """Assume an input stream holds valid until ready, with a stable payload."""
        held = Signal(name=f"{name}_held")
        last = Signal(len(payload), name=f"{name}_last")
        m.d.sync += [held.eq(valid & ~ready), last.eq(payload)]
        m.d.comb += Assume(~held | (valid & (payload == last)))


class TokenQueueProps(_Props):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.depth = depth

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        m.submodules.dut = q = TokenQueue(self.depth)
        push, pop = self.free(name="push_valid"), self.free(name="pop_ready")
        m.d.comb += [q.push.valid.eq(push), q.pop.ready.eq(pop)]
        put, take = q.push.valid & q.push.ready, q.pop.valid & q.pop.ready
        held = Signal(range(self.depth + 2))  # accepted pushes minus accepted pops, counted here
        m.d.sync += held.eq(held + put - take)
        m.d.comb += [
            Assert(q.level <= self.depth),
            Assert(q.level == held),
            Assert(~put | (q.level < self.depth)),  # no overflow
            Assert(~take | (q.level > 0)),  # no underflow
            Assert(q.push.ready == (q.level != self.depth)),
            Assert(q.pop.valid == (q.level != 0)),
        ]
        return m


class _Stage:
    """The ports `run_stage` drives: a command stream, halt and status."""

    def __init__(self) -> None:
        from amaranth.lib import stream

        from ..stage import StageStatus

        self.cmd = stream.Signature(5).flip().create()
        self.halt = Signal()
        self.status = Signal(StageStatus)


class StageSequencerProps(_Props):
    """A stage popping from two queues (prev, next) and pushing to two, with an execution
    of free length (``done`` is a free input)."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.depth = depth

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        st = _Stage()
        cmd_valid, cmd_payload = self.free(name="cmd_valid"), self.free(5, name="cmd_payload")
        halt, done = self.free(name="halt"), self.free(name="done")
        m.d.comb += [st.cmd.valid.eq(cmd_valid), st.cmd.payload.eq(cmd_payload), st.halt.eq(halt)]
        self.stream_rules(m, cmd_valid, st.cmd.ready, cmd_payload, "cmd")
        qs = {}
        for k in ("in_prev", "in_next", "out_prev", "out_next"):
            qs[k] = m.submodules[k] = TokenQueue(self.depth)
        # The environment pushes into the queues the stage pops, and pops the ones it pushes.
        for k in ("in_prev", "in_next"):
            m.d.comb += qs[k].push.valid.eq(self.free(name=f"{k}_push"))
        for k in ("out_prev", "out_next"):
            m.d.comb += qs[k].pop.ready.eq(self.free(name=f"{k}_pop"))
        tokens = TokenPorts({"prev": qs["in_prev"].pop, "next": qs["in_next"].pop},
                            {"prev": qs["out_prev"].push, "next": qs["out_next"].push})
        raw = Signal(5)
        pops = {"prev": raw[0], "next": raw[1]}
        pushes = {"prev": raw[2], "next": raw[3]}
        start = Signal()
        retire = run_stage(m, st, raw=raw, tokens=tokens, pops=pops, pushes=pushes, nop=raw[4], start=start,
                           done=done)
        state = st.status.state
        popped = {k: qs[f"in_{k}"].pop.valid & qs[f"in_{k}"].pop.ready for k in pops}
        pushed = {k: qs[f"out_{k}"].push.valid & qs[f"out_{k}"].push.ready for k in pushes}
        go = Signal(name="go")  # the instruction's tokens are there and the core is not halted
        m.d.comb += go.eq(tokens.can_pop(pops) & ~halt)
        for k in pops:
            m.d.comb += [
                Assert(~start | ~pops[k] | popped[k]),  # executes only with its tokens popped now
                Assert(~popped[k] | ((state == State.WAIT) & go & pops[k])),  # pops only then, only what it names
                Assert(~qs[f"in_{k}"].pop.ready | (state == State.WAIT) & go),
            ]
        m.d.comb += Assert(~start | ((state == State.WAIT) & go & ~raw[4]))
        # Counting: taken - retired is 0 or 1; pushes + owed == armed, per queue.
        taken = Signal(4)
        retired = Signal(4)
        m.d.sync += [taken.eq(taken + (st.cmd.valid & st.cmd.ready)), retired.eq(retired + retire)]
        busy = state != State.IDLE
        m.d.comb += Assert((taken - retired)[:4] == busy)
        for k in pushes:
            armed, count = Signal(4, name=f"armed_{k}"), Signal(4, name=f"pushed_{k}")
            m.d.sync += [armed.eq(armed + ((state == State.WAIT) & go & pushes[k])), count.eq(count + pushed[k])]
            owed = tokens.pending[k]
            m.d.comb += [
                Assert((count + owed)[:4] == armed),
                Assert(~qs[f"out_{k}"].push.valid | (state == State.PUSH)),  # pushes only in PUSH
                Assert(~owed | (state == State.EXEC) | (state == State.PUSH)),
            ]
        return m


class CommandQueueProps(_Props):
    """The fetch -> stage command queue: amaranth's SyncFIFOBuffered as the core builds it.

    Order is checked with a tag: the environment marks one written word (``mark``); its
    position is counted from the writes before it, and the read that returns it must be
    the read with that position. With ``order=False`` only the flow rules (level, full,
    empty) are asserted: they close by k-induction, while the order rests on the FIFO's
    internal pointers and storage, which no wrapper can name (a bounded proof)."""

    def __init__(self, depth: int, width: int = 8, order: bool = True) -> None:
        super().__init__()
        self.depth, self.width, self.order = depth, width, order

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        m.submodules.q = q = fifo.SyncFIFOBuffered(width=self.width, depth=self.depth)
        w_en, r_en, w_data = self.free(name="w_en"), self.free(name="r_en"), self.free(self.width, name="w_data")
        mark = self.free(name="mark")
        m.d.comb += [q.w_en.eq(w_en), q.r_en.eq(r_en), q.w_data.eq(w_data)]
        write, read = q.w_en & q.w_rdy, q.r_en & q.r_rdy
        level = Signal(range(self.depth + 2))
        m.d.sync += level.eq(level + write - read)
        m.d.comb += [
            Assert(q.level == level),
            Assert(q.level <= self.depth),
            Assert(q.w_rdy == (q.level != self.depth)),
            Assert(~q.r_rdy | (q.level != 0)),  # (a written word shows at the output a cycle later)
        ]
        if not self.order:
            return m
        # Order: words are numbered as written and as read (mod 2^5); the marked word is
        # written once, and must come out with the same number and the same data.
        n_w, n_r = Signal(5), Signal(5)
        m.d.sync += [n_w.eq(n_w + write), n_r.eq(n_r + read)]
        tagged, tag_n, tag_data, seen = Signal(), Signal(5), Signal(self.width), Signal()
        m.d.comb += Assume(~(mark & tagged))  # one marked word per trace
        with m.If(mark & write):
            m.d.sync += [tagged.eq(1), tag_n.eq(n_w), tag_data.eq(w_data)]
        with m.If(tagged & read & (n_r == tag_n)):
            m.d.sync += seen.eq(1)
            m.d.comb += Assert(q.r_data == tag_data)
        # Writes outnumber reads by at most depth, so numbers mod 32 stay unambiguous.
        m.d.comb += Assert(((n_w - n_r)[:5]) == q.level)
        m.d.comb += Assert(~tagged | seen | ((tag_n - n_r)[:5] < q.level))
        return m


class AxiMasterProps(_Props):
    """The AXI4 master with free memory-request ports and a free AXI slave. ``channels``: whose
    VALID/payload rules are asserted (AR and AW close by k-induction; W rests on the write-length
    FIFO's internal pointers, which no wrapper can name, so it is a bounded proof)."""

    def __init__(self, config_name: str = "small", max_burst: int = 4, channels: tuple[str, ...] = ("ar", "aw", "w")
                 ) -> None:
        super().__init__()
        self.config = PRESETS[config_name]
        self.max_burst = max_burst
        self.channels = channels

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        c = self.config
        dut = AxiMaster(c, max_burst=self.max_burst, read_fifo_depth=2 * self.max_burst, write_bursts=2)
        m.submodules.dut = Fragment.get(dut, platform)  # elaborated here: its splitters are named below
        bus = dut.bus
        # Invariants for k-induction (true from reset, so only unreachable states are excluded): each
        # command splitter's address stays bus-aligned.
        log_b = (c.bus_bytes - 1).bit_length()
        for sp in dut.splitters.values():
            m.d.comb += Assert(sp.addr[:log_b] == 0)
        for name in ("fetch", "load", "compute"):
            port = getattr(dut, name)
            v, a, b = self.free(name=f"{name}_cmd_valid"), self.free(ADDR_WIDTH, name=f"{name}_addr"), self.free(
                12, name=f"{name}_beats")
            m.d.comb += [port.cmd.valid.eq(v), port.cmd.payload.addr.eq(a), port.cmd.payload.beats.eq(b),
                         port.data.ready.eq(self.free(name=f"{name}_data_ready"))]
            m.d.comb += Assume(a[: (c.bus_bytes - 1).bit_length()] == 0)  # bus-aligned, as the stages issue
            self.stream_rules(m, v, port.cmd.ready, Cat(a, b), f"{name}_cmd")
        st = dut.store
        v, a, b = self.free(name="store_cmd_valid"), self.free(ADDR_WIDTH, name="store_addr"), self.free(
            12, name="store_beats")
        m.d.comb += [st.cmd.valid.eq(v), st.cmd.payload.addr.eq(a), st.cmd.payload.beats.eq(b)]
        m.d.comb += Assume(a[: (c.bus_bytes - 1).bit_length()] == 0)
        self.stream_rules(m, v, st.cmd.ready, Cat(a, b), "store_cmd")
        dv, dd = self.free(name="store_data_valid"), self.free(len(st.data.payload.as_value()), name="store_data")
        m.d.comb += [st.data.valid.eq(dv), st.data.payload.eq(dd), st.resp.ready.eq(self.free(name="resp_ready"))]
        self.stream_rules(m, dv, st.data.ready, dd, "store_data")
        for sig in ("arready", "awready", "wready", "bvalid", "rvalid", "rlast"):
            m.d.comb += getattr(bus, sig).eq(self.free(name=sig))
        m.d.comb += [bus.rid.eq(self.free(2, name="rid")), bus.bid.eq(0),
                     bus.rdata.eq(self.free(c.bus_width, name="rdata")), bus.rresp.eq(0), bus.bresp.eq(0)]
        # Handshake rules (VALID held until READY, payload stable), 4 KiB and burst length.
        payloads = {"ar": Cat(bus.araddr, bus.arlen, bus.arid), "aw": Cat(bus.awaddr, bus.awlen),
                    "w": Cat(bus.wdata, bus.wstrb, bus.wlast)}
        for ch in self.channels:
            payload = payloads[ch]
            valid, ready = getattr(bus, f"{ch}valid"), getattr(bus, f"{ch}ready")
            held, last = Signal(name=f"{ch}_held"), Signal(len(payload), name=f"{ch}_last")
            m.d.sync += [held.eq(valid & ~ready), last.eq(payload)]
            m.d.comb += Assert(~held | (valid & (payload == last)))
        for ch in [ch for ch in self.channels if ch != "w"]:
            valid, addr, length = getattr(bus, f"{ch}valid"), getattr(bus, f"{ch}addr"), getattr(bus, f"{ch}len")
            end = Signal(13, name=f"{ch}_end")  # offset in the 4 KiB page one past the burst
            m.d.comb += end.eq(addr[:12] + ((length + 1) << (c.bus_bytes.bit_length() - 1)))
            m.d.comb += [
                Assert(~valid | (end <= 4096)),
                Assert(~valid | (length < self.max_burst)),
                Assert(getattr(bus, f"{ch}size") == (c.bus_bytes.bit_length() - 1)),
                Assert(getattr(bus, f"{ch}burst") == 1),
            ]
        return m


#: Cycles a port of the AXI master may wait for its answer, with the defaults of `AxiResponseProps`.
RESPONSE_BOUND = 20


class AxiResponseProps(_Props):
    """The AXI4 master between fair core ports and a fair AXI4 slave modelled here: every
    command is answered, and no port owed an answer waits ``bound`` cycles in a row.

    The slave answers each AR burst with ``ARLEN + 1`` R beats (in order, RLAST on the last,
    RID of the burst) and each write burst (AW and its last W beat, in either order) with one
    B; it may stall every channel, never for more than ``fair`` cycles in a row, and holds at
    most two read bursts (ARREADY is low while it is full). The core's ports issue commands
    of 1 to ``max_beats`` beats at a page start or at a page's last word (so bursts get split
    at 4 KiB) whenever they like, and take read data and store responses, and send a store
    command's W data after it, each within ``core_fair`` cycles. Asserted: RREADY is always
    high, and a read port owed beats (asked for, not yet delivered) or a store port owed a
    response gets one within ``bound`` cycles. Data values do not steer the master (R data
    and W data are zero here; `AxiMasterProps` checks the W payload's stability).

    With the defaults (bursts of two beats, one stall at most per channel) the longest wait
    the solver finds is 19 cycles: a port granted last by the round robin, behind a full
    slave and the other ports' bursts; bound 20 holds to the proof's depth (30 cycles)."""

    def __init__(self, config_name: str = "small", max_burst: int = 2, fair: int = 1, core_fair: int = 1,
                 max_beats: int = 3, bound: int = RESPONSE_BOUND) -> None:
        super().__init__()
        self.config = PRESETS[config_name]
        self.max_burst, self.fair, self.core_fair, self.max_beats, self.bound = (
            max_burst, fair, core_fair, max_beats, bound)

    def patient(self, m: Module, waiting: Value, acting: Value, name: str, fair: int | None = None) -> None:
        """Assume that while `waiting`, `acting` comes within `fair` (default ``fair``) cycles."""
        fair = self.fair if fair is None else fair
        stall = waiting & ~acting
        if fair == 0:
            m.d.comb += Assume(~stall)
            return
        n = Signal(range(fair + 2), name=f"{name}_stalled")
        m.d.sync += n.eq(Mux(stall, n + 1, 0))
        m.d.comb += Assume(~stall | (n < fair))

    def served(self, m: Module, owed: Value, answer: Value, name: str) -> None:
        """Assert that while `owed`, `answer` comes before ``bound`` cycles pass."""
        n = Signal(range(self.bound + 2), name=f"{name}_waited")
        m.d.sync += n.eq(Mux(owed & ~answer, n + 1, 0))
        m.d.comb += Assert(n < self.bound)

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        c = self.config
        dut = m.submodules.dut = AxiMaster(c, max_burst=self.max_burst, read_fifo_depth=2 * self.max_burst,
                                           write_bursts=2)
        bus = dut.bus
        count = range(4 * self.max_beats * 4)  # beats owed fit (a few commands in flight)

        def command(port, name: str) -> Value:
            """Free commands on `port`: 1..max_beats beats, bus-aligned, stream rules; the beats taken."""
            # Addresses: the start of a 4 KiB page, or its last word (a burst there is split in two).
            v, far = self.free(name=f"{name}_cmd_valid"), self.free(name=f"{name}_page_end")
            a = Mux(far, 4096 - c.bus_bytes, 0)
            b = self.free(range(self.max_beats + 1), name=f"{name}_beats")
            m.d.comb += [port.cmd.valid.eq(v), port.cmd.payload.addr.eq(a), port.cmd.payload.beats.eq(b),
                         Assume(b != 0)]
            self.stream_rules(m, v, port.cmd.ready, Cat(a, b), f"{name}_cmd")
            return Mux(port.cmd.valid & port.cmd.ready, b, 0)

        # -- core side: read ports, fair readers; each owed beat comes within the bound
        for name in READ_PORTS:
            port = getattr(dut, name)
            asked = command(port, name)
            m.d.comb += port.data.ready.eq(self.free(name=f"{name}_data_ready"))
            self.patient(m, port.data.valid, port.data.ready, f"{name}_reader", self.core_fair)
            got = port.data.valid & port.data.ready
            owed = Signal(count, name=f"{name}_owed")  # beats asked for minus beats delivered
            m.d.sync += owed.eq(owed + asked - got)
            self.served(m, owed != 0, got, name)

        # -- core side: the store port; its W data follows its commands, fairly
        st = dut.store
        asked = command(st, "store")
        w_owed = Signal(count, name="store_w_owed")
        dv = self.free(name="store_data_valid")
        m.d.comb += [st.data.valid.eq(dv), st.data.payload.eq(0), Assume(~dv | (w_owed != 0))]
        self.stream_rules(m, dv, st.data.ready, Const(0, 1), "store_data")
        self.patient(m, w_owed != 0, dv, "store_writer", self.core_fair)
        m.d.sync += w_owed.eq(w_owed + asked - (st.data.valid & st.data.ready))
        m.d.comb += st.resp.ready.eq(self.free(name="resp_ready"))
        self.patient(m, st.resp.valid, st.resp.ready, "store_resp", self.core_fair)
        cmds = Signal(range(8), name="store_cmds_owed")  # store commands not yet answered
        answered = st.resp.valid & st.resp.ready
        m.d.sync += cmds.eq(cmds + (asked != 0) - answered)
        self.served(m, cmds != 0, answered, "store")

        # -- the slave: reads. Bursts queue in order (two at most), R beats in order.
        rq = m.submodules.slave_rq = fifo.SyncFIFO(width=2 + 8, depth=2)
        arready = self.free(name="arready")
        m.d.comb += [bus.arready.eq(arready & rq.w_rdy), rq.w_en.eq(bus.arvalid & bus.arready),
                     rq.w_data.eq(Cat(bus.arid, bus.arlen))]
        self.patient(m, bus.arvalid & rq.w_rdy, bus.arready, "slave_ar")
        rbeat = Signal(8, name="slave_rbeat")
        head_id, head_len = rq.r_data[:2], rq.r_data[2:]
        rvalid = self.free(name="rvalid")
        m.d.comb += [bus.rvalid.eq(rvalid & rq.r_rdy), bus.rid.eq(head_id), bus.rlast.eq(rbeat == head_len),
                     bus.rdata.eq(0), bus.rresp.eq(0)]  # (data values do not steer the master)
        self.patient(m, rq.r_rdy, bus.rvalid, "slave_r")
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += rbeat.eq(Mux(bus.rlast, 0, rbeat + 1))
            m.d.comb += rq.r_en.eq(bus.rlast)
        m.d.comb += Assert(bus.rready)  # every R beat the slave presents is taken at once

        # -- the slave: writes. A burst is answered once its AW and its last W beat are in.
        awready, wready, bvalid = self.free(name="awready"), self.free(name="wready"), self.free(name="bvalid")
        m.d.comb += [bus.awready.eq(awready), bus.wready.eq(wready)]
        self.patient(m, bus.awvalid, bus.awready, "slave_aw")
        self.patient(m, bus.wvalid, bus.wready, "slave_w")
        aws, wlasts, bs = (Signal(4, name=f"slave_{k}") for k in ("aws", "wlasts", "bs"))
        m.d.sync += [aws.eq(aws + (bus.awvalid & bus.awready)), wlasts.eq(wlasts + (bus.wvalid & bus.wready & bus.wlast)),
                     bs.eq(bs + (bus.bvalid & bus.bready))]
        due = Signal(name="slave_b_due")
        m.d.comb += [due.eq(((aws - bs)[:4] != 0) & ((wlasts - bs)[:4] != 0)),
                     bus.bvalid.eq(bvalid & due), bus.bid.eq(0), bus.bresp.eq(0)]
        self.patient(m, due, bus.bvalid, "slave_b")
        return m


@dataclass(frozen=True)
class Proof:
    name: str
    build: Callable[[], _Props]
    mode: str  # "prove" (BMC + k-induction) or "bmc"
    depth: int
    quick: bool  # part of the default test run


_SMALL = PRESETS["small"]

#: The proofs `nox -s formal` runs (``quick`` ones also run in the default tests).
PROOFS: dict[str, Proof] = {
    p.name: p for p in (
        Proof("token_queue", lambda: TokenQueueProps(_SMALL.dep_queue_depth), "prove", 8, True),
        Proof("stage_sequencer", lambda: StageSequencerProps(2), "prove", 12, True),
        Proof("command_queue", lambda: CommandQueueProps(4, 4, order=False), "prove", 8, True),
        Proof("command_queue_order", lambda: CommandQueueProps(4, 4), "bmc", 14, False),
        Proof("axi_master", lambda: AxiMasterProps("small", channels=("ar", "aw")), "prove", 6, True),
        Proof("axi_master_w", lambda: AxiMasterProps("small", channels=("w",)), "bmc", 16, False),
        Proof("axi_response", lambda: AxiResponseProps("small"), "bmc", 30, False),
    )
}
