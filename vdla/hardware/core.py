"""The VDLA core: fetch, load, compute and store with their queues and buffers.

::

    memory -> fetch --load cmd--> load ----------l2g/g2l---------- compute ----g2s/s2g---- store -> memory
                    --compute cmd------------------------------------^                      ^
                    --store cmd---------------------------------------------------------------
    buffers: load writes INP, WGT; compute owns UOP, ACC, reads INP/WGT, writes OUT; store reads OUT

Ports (see `vdla.hardware.interfaces` for the memory-request protocol):

- ``fetch_mem``, ``load_mem``, ``compute_mem``: read masters; ``store_mem``: write master.
  One port per stage, as VTA's HLS design has; a bus wrapper arbitrates them.
- control: pulse ``start`` with ``insn_addr`` (byte address, 16-byte aligned) and
  ``insn_count``; ignored while ``running``. Start clears ``done`` and ``error``, the next
  cycle resets every queue and stage (the buffers keep their contents), and the one after
  launches fetch, which takes ``insn_addr`` and ``insn_count`` then: hold them till launch.
- status: ``running``; ``done`` (set when FINISH completes, or when an error has stopped
  the core and every stage has finished the instruction it was executing; stays set
  until the next start); ``error`` with ``error_code`` (`vdla.hardware.errors.ErrorCode`:
  an encoding fetch rejects, or an index past a buffer a stage finds) and ``error_index``
  (the instruction: each carries its index through its command queue).
- ``counters`` (`Counters`): cycles since start, per stage busy/stall cycles and retired
  instructions, uop-iterations, elements moved; ``debug``: per stage state and the token
  queue levels, for watchdogs and waveforms.
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal, unsigned
from amaranth.hdl import ResetInserter
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .buffers import check_slices, make_buffer, write_lanes
from .compute import Compute
from .errors import ERROR_BITS, ErrorCode
from .fetch import Fetch
from .interfaces import connect_read_port, read_master, write_master
from .load import Load
from .stage import State
from .store import Store
from .tokens import TokenQueue

__all__ = ["Core", "Counters", "Debug", "ErrorCode", "STAGES", "COUNTER_NAMES"]

STAGES = ("load", "compute", "store")
#: Counter fields, in order: what `Counters` holds.
COUNTER_NAMES = (
    "cycles", "fetch_busy", "fetch_stall", "fetch_insns",
    *(f"{s}_{k}" for s in STAGES for k in ("busy", "stall", "insns")),
    "gemm_iters", "alu_iters", "inp_elems", "wgt_elems", "uop_elems", "acc_elems", "out_elems",
)
Counters = data.StructLayout({name: unsigned(32) for name in COUNTER_NAMES})
QUEUES = ("l2g", "g2l", "g2s", "s2g")


def debug_layout(config: Config) -> data.StructLayout:
    fields = {f"{s}_state": State for s in STAGES}
    fields.update({q: unsigned(config.dep_queue_depth.bit_length()) for q in QUEUES})
    fields.update({f"{s}_queue": unsigned(config.cmd_queue_depth.bit_length()) for s in STAGES})
    fields["fetch_busy"] = unsigned(1)
    return data.StructLayout(fields)


Debug = debug_layout


class Core(wiring.Component):
    """The core for `config`. ``count_width`` bounds ``insn_count`` (and the instruction
    indices fetch keeps): 32 bits by default; a board with little memory passes fewer.
    ``range_checks``: latch the errors the stages find (an index past a buffer), each with
    its instruction's index carried through the command queues. On by default; a board with
    no room for it turns it off (its host validates every program before it runs,
    `vdla.runtime.Device.run`): fetch's checks stay, and the stages still drop rows past a
    buffer and skip a GEMM/ALU whose uop range is out of bounds, but report none of it.
    CFG's GEMM epilogue and GEMM init are built where ``Config.gemm_epilogue`` says (a part
    with no room for them turns it off, and fetch then refuses CFG and a GEMM with init as
    ILLEGAL_OPCODE)."""

    def __init__(self, config: Config, *, count_width: int = 32, range_checks: bool = True,
                 io_registers: bool = True, wgt_slices: int = 1) -> None:
        self.config = c = config
        self.count_width = count_width
        self.range_checks = range_checks
        self.io_registers = io_registers
        check_slices(c, "wgt", wgt_slices)
        self.wgt_slices = wgt_slices
        super().__init__({
            "start": In(1),
            "insn_addr": In(32),
            "insn_count": In(32),
            "running": Out(1),
            "done": Out(1),
            "error": Out(1),
            "error_code": Out(ERROR_BITS),
            "error_index": Out(32),
            "counters": Out(Counters),
            "debug": Out(debug_layout(c)),
            "fetch_mem": Out(read_master(c.bus_width)),
            "load_mem": Out(read_master(c.bus_width)),
            "compute_mem": Out(read_master(c.bus_width)),
            "store_mem": Out(write_master(c.bus_width)),
        })

    @property
    def buffers(self) -> dict:
        """The buffer Memories ("uop", "inp", "wgt", "acc", "out") of the last elaboration."""
        return {**self._compute.buffers, **self._buffers}

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        begin = Signal()  # a start taken: the control registers' reset
        # The datapath's reset, `begin` registered: a flip-flop, not start's logic, drives a net
        # that spans the die (on the 85F that logic's route into the load unit's write enables
        # was the critical path). The datapath is held halted through that cycle.
        clear = Signal()
        dp = Module()  # the datapath, under `clear` reset
        m.submodules.datapath = ResetInserter(clear)(dp)

        dp.submodules.fetch = fetch = Fetch(c, count_width=self.count_width, io_registers=self.io_registers)
        dp.submodules.load = load = Load(c, io_registers=self.io_registers, wgt_slices=self.wgt_slices)
        dp.submodules.compute = compute = Compute(c, io_registers=self.io_registers, wgt_slices=self.wgt_slices)
        dp.submodules.store = store = Store(c)
        stages = {"load": load, "compute": compute, "store": store}

        # Command queues: fetch -> stages. Each instruction travels with its index in the stream,
        # which `index[name]` holds while the stage holds the instruction (for the errors it finds).
        index = {}
        index_bits = self.count_width if self.range_checks else 0
        for name, stage in stages.items():
            q = fifo.SyncFIFOBuffered(width=isa.INSN_BITS + index_bits, depth=c.cmd_queue_depth)
            dp.submodules[f"{name}_queue"] = q
            out = getattr(fetch, f"{name}_cmd")
            index[name] = Signal(index_bits, name=f"{name}_index")
            dp.d.comb += [
                q.w_data.eq(Cat(out.payload, fetch.error_index[:index_bits])), q.w_en.eq(out.valid),
                out.ready.eq(q.w_rdy),
                stage.cmd.payload.eq(q.r_data[: isa.INSN_BITS]), stage.cmd.valid.eq(q.r_rdy),
                q.r_en.eq(stage.cmd.ready), getattr(self.debug, f"{name}_queue").eq(q.level),
            ]
            with dp.If(q.r_en & q.r_rdy):
                dp.d.sync += index[name].eq(q.r_data[isa.INSN_BITS:])
        # Token queues.
        ends = {"l2g": (load.l2g, compute.l2g), "g2l": (compute.g2l, load.g2l),
                "g2s": (compute.g2s, store.g2s), "s2g": (store.s2g, compute.s2g)}
        for name, (producer, consumer) in ends.items():
            q = TokenQueue(c.dep_queue_depth)
            dp.submodules[name] = q
            wiring.connect(dp, producer, q.push)
            wiring.connect(dp, q.pop, consumer)
            dp.d.comb += getattr(self.debug, name).eq(q.level)

        # Buffers shared between stages: INP, WGT (load -> compute), OUT (compute -> store).
        # `buffers` names every buffer Memory of the last elaboration (for testbenches).
        buffers = self._buffers = {}
        self._compute = compute
        for kind, writer, reader in (("inp", load.inp_wr, compute.inp_rd), ("wgt", load.wgt_wr, compute.wgt_rd)):
            # Column slices (WGT on a large part): slice k holds bits [k*w, (k+1)*w) of every
            # row, with its own copies of the read address and of the write address and data; the
            # DMA's write lanes (bus words) split between them. One slice is the whole buffer,
            # named plainly.
            n = self.wgt_slices if kind == "wgt" else 1
            slices = tuple(make_buffer(c, kind, slices=n) for _ in range(n))
            buffers[kind] = slices if n > 1 else slices[0]
            w, lanes = len(slices[0].data[0]), write_lanes(c, kind) // n
            for k, mem in enumerate(slices):
                dp.submodules[f"{kind}_mem_{k}" if n > 1 else f"{kind}_mem"] = mem
                wp = mem.write_port(granularity=w // lanes if lanes > 1 else None)
                dp.d.comb += [wp.en.eq(writer.en[k * lanes:(k + 1) * lanes]),
                              wp.addr.eq(writer.addr[k] if n > 1 else writer.addr),
                              wp.data.eq(writer.data[k * w:(k + 1) * w])]
                rp = mem.read_port()
                dp.d.comb += [rp.en.eq(reader.en), rp.addr.eq(reader.addr[k] if n > 1 else reader.addr),
                              reader.data[k * w:(k + 1) * w].eq(rp.data)]
        out_mem = buffers["out"] = make_buffer(c, "out")
        dp.submodules.out_mem = out_mem
        out_wp = out_mem.write_port()
        dp.d.comb += [out_wp.en.eq(compute.out_wr.en), out_wp.addr.eq(compute.out_wr.addr),
                      out_wp.data.eq(compute.out_wr.data)]
        connect_read_port(dp, store.out_rd, out_mem.read_port())

        # Memory ports.
        wiring.connect(m, wiring.flipped(self.fetch_mem), fetch.mem)
        wiring.connect(m, wiring.flipped(self.load_mem), load.mem)
        wiring.connect(m, wiring.flipped(self.compute_mem), compute.mem)
        wiring.connect(m, wiring.flipped(self.store_mem), store.mem)

        # -- control ---------------------------------------------------------------------------
        halt = Signal()  # an error stopped the run
        # The units' halt: `halt`, and the `clear` cycle too (the datapath still holds the last
        # run's state then). A flip-flop of its own: `halt | clear` in logic went into the ACC
        # write multiplexers' select logic, a 45F critical path.
        stop = Signal()
        m.d.comb += self.error.eq(halt)
        for unit in (fetch, *stages.values()):
            dp.d.comb += unit.halt.eq(stop)
        m.d.comb += [fetch.insn_addr.eq(self.insn_addr), fetch.insn_count.eq(self.insn_count)]
        launching = Signal()
        m.d.comb += [begin.eq(self.start & ~self.running), fetch.launch.eq(launching)]
        m.d.sync += [clear.eq(begin), launching.eq(clear)]
        with m.If(begin):
            m.d.sync += [self.running.eq(1), self.done.eq(0), halt.eq(0), stop.eq(1), self.error_code.eq(0),
                         self.error_index.eq(0)]
        with m.If(clear):
            m.d.sync += stop.eq(0)
        # The first error stops the core: fetch's (an encoding it rejects) or a stage's (an index
        # past a buffer, with the index of the instruction that stage holds). Not while `clear`:
        # the datapath still holds the last run's state.
        with m.If(~halt & ~clear):
            with m.If(fetch.error):
                m.d.sync += [halt.eq(1), stop.eq(1), self.error_code.eq(fetch.error_code),
                             self.error_index.eq(fetch.error_index)]
            for name, stage in stages.items() if self.range_checks else ():
                with m.Elif(stage.error != ErrorCode.NONE):
                    m.d.sync += [halt.eq(1), stop.eq(1), self.error_code.eq(stage.error),
                                 self.error_index.eq(index[name])]
        executing = [stage.status.state == State.EXEC for stage in stages.values()]
        quiet = ~fetch.busy
        for e in executing:
            quiet = quiet & ~e
        with m.If(self.running & ~clear & ((compute.finish & ~halt) | (halt & quiet & ~launching))):
            m.d.sync += [self.running.eq(0), self.done.eq(1)]

        # -- counters ----------------------------------------------------------------------------
        cnt = self.counters
        events = {
            "cycles": 1, "fetch_busy": fetch.busy, "fetch_stall": fetch.stall, "fetch_insns": fetch.dispatch,
            "gemm_iters": compute.gemm_iter, "alu_iters": compute.alu_iter,
            "inp_elems": load.inp_elem, "wgt_elems": load.wgt_elem, "uop_elems": compute.uop_elem,
            "acc_elems": compute.acc_elem, "out_elems": store.out_elem,
        }
        for name, stage in stages.items():
            st = stage.status
            events[f"{name}_busy"] = (st.state != State.IDLE) & ~st.stall
            events[f"{name}_stall"] = st.stall
            events[f"{name}_insns"] = st.retire
            m.d.comb += getattr(self.debug, f"{name}_state").eq(st.state)
        m.d.comb += self.debug.fetch_busy.eq(fetch.busy)
        for name, ev in events.items():
            field = getattr(cnt, name)
            with m.If(begin):
                m.d.sync += field.eq(0)
            with m.Elif(self.running & ~clear & ev):  # counted from launch: `clear` belongs to no run
                m.d.sync += field.eq(field + 1)
        return m




# Formal properties (proved by `nox -s formal`, stated in vdla/hardware/formal/properties.py):
# command_queue: the fetch -> stage SyncFIFOBuffered never takes a write when full nor offers a
# read when empty, level == writes - reads (k-induction); command_queue_order: words leave in order
# (bounded model check).
# (Kept at the end of the file: the RTLIL names source lines, which the board bitstreams hash.)
