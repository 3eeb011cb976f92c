"""The board's memory arbiters: the core's four memory ports and the UART bridge on one RAM.

The memory (``ram`` port, `ram_signature`) takes one word (``bus_width`` bits) per
access, a read every cycle at most: ``en`` reads the word at ``addr``, whose data is on
``rdata`` in the next cycle and stays there until the next read (block RAM with a read
enable and SB_SPRAM256KA both hold it); ``we`` are byte write enables (a write when any is
set). Byte addresses are taken modulo the memory's size (the runtime checks programs
against it before they run).

Both arbiters serve one request at a time, whole: a bridge access (one byte) or a read or
write command of the core (all its beats). Priority: bridge, store, compute, load, fetch.
The one exception is fetch's read of the instruction stream, which stalls while a command
queue is full: when another request is waiting it is set aside where it stands and resumed
once nothing else is (otherwise a full queue would keep the stage that empties it from
memory: a deadlock).

- `MemoryArbiter`, the compact one (the iCEBreaker, at 99 % of its logic cells): the
  memory's address comes straight from the arbiter's choice, and the next read goes out in
  the cycle its reader takes the word before it.
- `PipelinedArbiter` (the ULX3S parts): every input of the memory comes from a flip-flop,
  the core's commands, write beats and read words come through skid buffers (`vdla.hardware.skid`), the
  bridge's request is registered as it arrives, and reads are issued up to four ahead into
  a small queue that the reader drains, so a reader's ``ready`` never reaches the memory's
  address in one cycle. Each of these was the critical path of a ULX3S build in turn.
"""

from __future__ import annotations

from amaranth import Array, Cat, Module, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..bridge import mem_port_signature
from ..interfaces import MemCmd, read_master, write_beat, write_master
from ..skid import SkidBuffer

__all__ = ["ram_signature", "MemoryArbiter", "PipelinedArbiter"]


def ram_signature(addr_width: int, data_width: int) -> wiring.Signature:
    """A single-port synchronous RAM, from the user's side (see the module docstring)."""
    return wiring.Signature({
        "addr": Out(addr_width), "en": Out(1), "we": Out(data_width // 8), "wdata": Out(data_width),
        "rdata": In(data_width),
    })


class _Arbiter(wiring.Component):
    """The ports both arbiters have; ``addr_width`` is the RAM's word-address width."""

    READERS = ("compute", "load", "fetch")  # in priority order

    def __init__(self, bus_width: int, addr_width: int) -> None:
        self.bus_width, self.addr_width = bus_width, addr_width
        super().__init__({
            "fetch": In(read_master(bus_width)),
            "load": In(read_master(bus_width)),
            "compute": In(read_master(bus_width)),
            "store": In(write_master(bus_width)),
            "host": In(mem_port_signature(bus_width, addr_width)),
            "ram": Out(ram_signature(addr_width, bus_width)),
        })

    def word(self, addr):
        """The word address of a byte address (modulo the memory's size)."""
        log_bytes = exact_log2(self.bus_width // 8)
        return addr[log_bytes : log_bytes + self.addr_width]

    def others_waiting(self, host_valid, cmd: dict):
        """A request other than fetch's is waiting (fetch's read is then set aside)."""
        return host_valid | cmd["store"].valid | Cat(cmd[n].valid for n in self.READERS if n != "fetch").any()

    def take_store(self, m: Module, store_cmd, ptr: Signal, left: Signal) -> None:
        """In the FSM's IDLE state: take the store's command; its beats are served in WRITE."""
        m.d.comb += store_cmd.ready.eq(1)
        m.d.sync += [ptr.eq(self.word(store_cmd.payload.addr)), left.eq(store_cmd.payload.beats)]
        with m.If(store_cmd.payload.beats != 0):
            m.next = "WRITE"


class MemoryArbiter(_Arbiter):
    """The compact arbiter: the memory's inputs are combinational (see the module docstring)."""

    def elaborate(self, platform) -> Module:
        m = Module()
        ram, host, store = self.ram, self.host, self.store
        cmd = {name: getattr(self, name).cmd for name in (*self.READERS, "store")}
        aw = self.addr_width

        ptr = Signal(aw)
        # Beats still to serve: a command never needs more than the memory holds (programs are
        # checked against its size), so one bit over the word address is enough.
        left = Signal(aw + 1)
        owner = Signal(range(len(self.READERS)))
        fetch = self.READERS.index("fetch")
        parked, parked_ptr, parked_left = Signal(), Signal(aw), Signal(aw + 1)
        others = self.others_waiting(host.valid, cmd)
        # A bridge access is registered before it reaches the memory (the bridge sits far from
        # it) and served a cycle later.
        host_addr, host_wdata = Signal(aw, reset_less=True), Signal(self.bus_width, reset_less=True)
        host_be, host_we = Signal(len(host.be), reset_less=True), Signal(reset_less=True)
        m.d.comb += [host.rdata.eq(ram.rdata), ram.wdata.eq(host_wdata)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(host.valid):
                    m.d.sync += [host_addr.eq(host.addr), host_wdata.eq(host.wdata), host_be.eq(host.be),
                                 host_we.eq(host.we)]
                    m.next = "HOST"
                with m.Elif(cmd["store"].valid):
                    self.take_store(m, cmd["store"], ptr, left)
                for i, name in enumerate(self.READERS):
                    rd = cmd[name]
                    with m.Elif(rd.valid & ~parked if i == fetch else rd.valid):
                        first = self.word(rd.payload.addr)
                        m.d.comb += [rd.ready.eq(1), ram.en.eq(1), ram.addr.eq(first)]
                        m.d.sync += [ptr.eq(first + 1), left.eq(rd.payload.beats), owner.eq(i)]
                        with m.If(rd.payload.beats != 0):
                            m.next = "READ"
                with m.Elif(parked):  # resume the fetch read: read its word again
                    m.d.comb += [ram.en.eq(1), ram.addr.eq(parked_ptr)]
                    m.d.sync += [ptr.eq(parked_ptr + 1), left.eq(parked_left), owner.eq(fetch), parked.eq(0)]
                    m.next = "READ"

            with m.State("READ"):  # ram.rdata holds the word for `owner`; the next read goes out as it is taken
                take = Signal()
                with m.Switch(owner):
                    for i, name in enumerate(self.READERS):
                        with m.Case(i):
                            data = getattr(self, name).data
                            m.d.comb += [data.valid.eq(1), data.payload.eq(ram.rdata), take.eq(data.ready)]
                with m.If(take):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = "IDLE"
                    with m.Else():
                        m.d.comb += [ram.en.eq(1), ram.addr.eq(ptr)]
                        m.d.sync += ptr.eq(ptr + 1)
                with m.Elif((owner == fetch) & others):
                    m.d.sync += [parked.eq(1), parked_ptr.eq(ptr - 1), parked_left.eq(left)]
                    m.next = "IDLE"

            with m.State("WRITE"):
                m.d.comb += store.data.ready.eq(1)
                with m.If(store.data.valid):
                    m.d.comb += [ram.addr.eq(ptr), ram.we.eq(store.data.payload.strb),
                                 ram.wdata.eq(store.data.payload.data)]
                    m.d.sync += [ptr.eq(ptr + 1), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "RESP"

            with m.State("RESP"):
                m.d.comb += store.resp.valid.eq(1)
                with m.If(store.resp.ready):
                    m.next = "IDLE"

            with m.State("HOST"):  # the bridge holds its request until ready
                m.d.comb += ram.addr.eq(host_addr)
                with m.If(host_we):
                    m.d.comb += [ram.we.eq(host_be), host.ready.eq(1)]
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += ram.en.eq(1)
                    m.next = "HOST_READ"

            with m.State("HOST_READ"):
                m.d.comb += host.ready.eq(1)
                m.next = "IDLE"
        return m


class PipelinedArbiter(_Arbiter):
    """The registered arbiter: flip-flops on every path to and from the memory (see the module docstring).

    A read command's words go out through a ``QUEUE``-deep queue: a read issued in one cycle
    has its word in the queue two cycles later (one cycle in the memory's input registers,
    one in the memory), so four in flight or queued keep one word per cycle.
    """

    QUEUE = 4

    def elaborate(self, platform) -> Module:
        m = Module()
        ram, host = self.ram, self.host
        bw, aw = self.bus_width, self.addr_width

        def through_skid(name: str, port, shape):
            m.submodules[name] = skid = SkidBuffer(shape)
            m.d.comb += [skid.i.valid.eq(port.valid), skid.i.payload.eq(port.payload), port.ready.eq(skid.i.ready)]
            return skid.o

        cmd = {name: through_skid(f"{name}_cmd", getattr(self, name).cmd, MemCmd) for name in (*self.READERS, "store")}
        # The words go back through skid buffers too: a reader's `ready` and the logic behind it
        # (its DMA's address and count updates) stay on its side of the die (on the 85F, Yosys
        # shared the accept condition between the two, and the path crossed the die twice).
        words = {}
        for name in self.READERS:
            m.submodules[f"{name}_data"] = skid = SkidBuffer(unsigned(bw))
            port = getattr(self, name).data
            m.d.comb += [port.valid.eq(skid.o.valid), port.payload.eq(skid.o.payload), skid.o.ready.eq(port.ready)]
            words[name] = skid.i
        store_data = through_skid("store_data", self.store.data, write_beat(bw))
        store_resp = self.store.resp

        # The memory's inputs, set a cycle ahead; `en` and `we` are one-cycle pulses.
        addr, wdata = Signal(aw, reset_less=True), Signal(bw, reset_less=True)
        en, we = Signal(), Signal(bw // 8)
        m.d.comb += [ram.addr.eq(addr), ram.wdata.eq(wdata), ram.en.eq(en), ram.we.eq(we)]
        m.d.sync += [en.eq(0), we.eq(0)]

        # The bridge's request as it was a cycle ago. The bridge holds it until `ready` and
        # drops `valid` for at least a cycle after, so a request is never served twice.
        h_valid = Signal()
        h_addr, h_wdata = Signal(aw, reset_less=True), Signal(bw, reset_less=True)
        h_be, h_we = Signal(bw // 8, reset_less=True), Signal(reset_less=True)
        h_rdata = Signal(bw, reset_less=True)
        m.d.sync += [h_valid.eq(host.valid & ~host.ready), h_addr.eq(host.addr), h_wdata.eq(host.wdata),
                     h_be.eq(host.be), h_we.eq(host.we)]
        m.d.comb += host.rdata.eq(h_rdata)

        # The read queue: words arrive two cycles after their read is issued.
        issue = Signal()
        flight = Signal(2)  # reads issued one and two cycles ago
        m.d.sync += flight.eq(Cat(issue, flight[0]))
        arrive = flight[1]
        queue = Array(Signal(bw, name=f"queue_{k}", reset_less=True) for k in range(self.QUEUE))
        head, tail = Signal(range(self.QUEUE)), Signal(range(self.QUEUE))
        count = Signal(range(self.QUEUE + 1))
        outstanding = count + flight[0] + flight[1]
        with m.If(arrive):
            m.d.sync += [queue[tail].eq(ram.rdata), tail.eq(tail + 1)]

        ptr = Signal(aw)
        left = Signal(aw + 1)  # beats not yet issued (a command never needs more than the memory holds)
        owner = Signal(range(len(self.READERS)))
        fetch = self.READERS.index("fetch")
        parked, parked_ptr, parked_left = Signal(), Signal(aw), Signal(aw + 1)
        others = self.others_waiting(h_valid, cmd)

        reading, take = Signal(), Signal()
        with m.Switch(owner):
            for i, name in enumerate(self.READERS):
                with m.Case(i):
                    data = words[name]
                    m.d.comb += [data.valid.eq(reading & (count != 0)), take.eq(data.valid & data.ready)]
        for name in self.READERS:
            m.d.comb += words[name].payload.eq(queue[head])
        with m.If(take):
            m.d.sync += head.eq(head + 1)
        m.d.sync += count.eq(count + arrive - take)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(h_valid):
                    m.d.sync += [addr.eq(h_addr), wdata.eq(h_wdata)]
                    with m.If(h_we):
                        m.d.sync += we.eq(h_be)
                        m.next = "HOST_DONE"  # the write happens as the bridge is answered
                    with m.Else():
                        m.d.sync += en.eq(1)
                        m.next = "HOST_READ"
                with m.Elif(cmd["store"].valid):
                    self.take_store(m, cmd["store"], ptr, left)
                for i, name in enumerate(self.READERS):
                    rd = cmd[name]
                    with m.Elif(rd.valid & ~parked if i == fetch else rd.valid):
                        m.d.comb += rd.ready.eq(1)
                        m.d.sync += [ptr.eq(self.word(rd.payload.addr)), left.eq(rd.payload.beats), owner.eq(i)]
                        with m.If(rd.payload.beats != 0):
                            m.next = "READ"
                with m.Elif(parked):  # resume the fetch read where it was set aside
                    m.d.sync += [ptr.eq(parked_ptr), left.eq(parked_left), owner.eq(fetch), parked.eq(0)]
                    m.next = "READ"

            with m.State("READ"):
                m.d.comb += reading.eq(1)
                with m.If((left != 0) & (outstanding < self.QUEUE)):
                    m.d.comb += issue.eq(1)
                    m.d.sync += [en.eq(1), addr.eq(ptr), ptr.eq(ptr + 1), left.eq(left - 1)]
                with m.If((left == 0) & (outstanding == 0)):
                    m.next = "IDLE"
                with m.Elif((owner == fetch) & others & (count != 0) & ~take):
                    m.next = "PARK"

            with m.State("PARK"):  # let the reads in flight land, then rewind fetch to its first word not taken
                with m.If(flight == 0):
                    m.d.sync += [parked.eq(1), parked_ptr.eq(ptr - count), parked_left.eq(left + count),
                                 count.eq(0), head.eq(0), tail.eq(0)]
                    m.next = "IDLE"

            with m.State("WRITE"):
                m.d.comb += store_data.ready.eq(1)
                with m.If(store_data.valid):
                    m.d.sync += [addr.eq(ptr), we.eq(store_data.payload.strb), wdata.eq(store_data.payload.data),
                                 ptr.eq(ptr + 1), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "RESP"

            with m.State("RESP"):  # the last beat is written in this cycle
                m.d.comb += store_resp.valid.eq(1)
                with m.If(store_resp.ready):
                    m.next = "IDLE"

            with m.State("HOST_READ"):  # the memory reads
                m.next = "HOST_WORD"

            with m.State("HOST_WORD"):
                m.d.sync += h_rdata.eq(ram.rdata)
                m.next = "HOST_DONE"

            with m.State("HOST_DONE"):
                m.d.comb += host.ready.eq(1)
                m.next = "IDLE"
        return m
