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
    writes minus reads and stays within the depth; instructions leave in the order they
    entered (a tagged instruction is read exactly when its predecessors are).
``axi_master`` (`vdla.hardware.axi.AxiMaster`, small config)
    ARVALID and AWVALID, once raised, stay high until ARREADY / AWREADY with ARADDR,
    ARLEN, ARID (AWADDR, AWLEN) unchanged; WVALID likewise holds WDATA, WSTRB and WLAST;
    no burst crosses a 4 KiB boundary and none is longer than ``max_burst`` beats; AxSIZE
    is the bus width and AxBURST INCR.

Not proved here: that every request is eventually answered (a liveness property; the
RTL watchdog and the differential fuzz cover it), and the datapath's arithmetic (the
golden simulator's differential tests do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amaranth import Cat, Elaboratable, Module, ResetSignal, Signal, Value
from amaranth.hdl import Assert, Assume
from amaranth.lib import fifo

from ...config import PRESETS
from ..axi import AxiMaster
from ..interfaces import ADDR_WIDTH
from ..stage import State, run_stage
from ..tokens import TokenPorts, TokenQueue

__all__ = ["PROOFS", "Proof", "TokenQueueProps", "StageSequencerProps", "CommandQueueProps", "AxiMasterProps"]


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
    the read with that position."""

    def __init__(self, depth: int, width: int = 8) -> None:
        super().__init__()
        self.depth, self.width = depth, width

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
    """The AXI4 master with free memory-request ports and a free AXI slave."""

    def __init__(self, config_name: str = "small", max_burst: int = 4) -> None:
        super().__init__()
        self.config = PRESETS[config_name]
        self.max_burst = max_burst

    def elaborate(self, platform) -> Module:
        m = Module()
        self.no_reset(m)
        c = self.config
        dut = m.submodules.dut = AxiMaster(c, max_burst=self.max_burst, read_fifo_depth=2 * self.max_burst,
                                           write_bursts=2)
        bus = dut.bus
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
        for ch, payload in (("ar", Cat(bus.araddr, bus.arlen, bus.arid)), ("aw", Cat(bus.awaddr, bus.awlen)),
                            ("w", Cat(bus.wdata, bus.wstrb, bus.wlast))):
            valid, ready = getattr(bus, f"{ch}valid"), getattr(bus, f"{ch}ready")
            held, last = Signal(name=f"{ch}_held"), Signal(len(payload), name=f"{ch}_last")
            m.d.sync += [held.eq(valid & ~ready), last.eq(payload)]
            m.d.comb += Assert(~held | (valid & (payload == last)))
        for ch in ("ar", "aw"):
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
        Proof("command_queue", lambda: CommandQueueProps(4, 4), "bmc", 14, False),
        Proof("axi_master", lambda: AxiMasterProps("small"), "bmc", 16, False),
    )
}
