"""The AXI4 master (`vdla.hardware.axi.AxiMaster`) alone, in Amaranth's simulator.

A Python AXI4 slave with random stalls serves a memory image; it checks every burst
(INCR, full-width, at most ``max_burst`` beats, never across 4 KiB), interleaves read
bursts of different IDs, and delays B responses. The tests cover 256-beat bursts,
4 KiB splitting, RID routing, a stalled reader not blocking the others, and writes with
byte strobes acknowledged once per command. (The whole AXI top runs in cocotb on
Verilator in test_verilator.py.)
"""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from vdla.config import PRESETS
from vdla.hardware.axi import READ_PORTS, AxiMaster


async def _send(ctx, stream, **payload) -> None:
    """Offer one transfer on `stream` (the payload fields given) and wait until it is taken;
    valid stays high, so back-to-back calls make back-to-back transfers."""
    for name, value in payload.items():
        ctx.set(getattr(stream.payload, name), value)
    ctx.set(stream.valid, 1)
    await ctx.tick().until(stream.ready)


def _word(addr: int, nbytes: int) -> int:
    """Memory contents: a hash of the word address."""
    return (addr // nbytes * 2654435761 + 12345) % (1 << (8 * nbytes))


class _Slave:
    """AXI4 slave model state shared by the testbenches."""

    def __init__(self, dut: AxiMaster, rng: random.Random) -> None:
        self.dut, self.rng = dut, rng
        self.B = dut.config.bus_bytes
        self.reads: list[list[int]] = []  # [id, addr, beats left]
        self.writes: list[list[int]] = []  # [addr, beats left]
        self.bq: list[int] = []  # cycles until each B response
        self.mem: dict[int, int] = {}
        self.bursts: list[tuple[str, int, int, int]] = []  # (channel, id, addr, beats)
        self.errors: list[str] = []

    def check_burst(self, ch: str, ident: int, addr: int, beats: int, size: int, burst: int) -> None:
        self.bursts.append((ch, ident, addr, beats))
        if burst != 1 or size != self.B.bit_length() - 1 or beats > self.dut.max_burst or addr % self.B:
            self.errors.append(f"{ch}: bad burst addr={addr:#x} beats={beats} size={size} burst={burst}")
        if addr // 4096 != (addr + beats * self.B - 1) // 4096:
            self.errors.append(f"{ch}: burst at {addr:#x} of {beats} beats crosses 4 KiB")

    async def serve(self, ctx) -> None:
        bus, rng = self.dut.bus, self.rng
        sampled = [bus.arvalid, bus.arid, bus.araddr, bus.arlen, bus.arsize, bus.arburst, bus.rready,
                   bus.awvalid, bus.awid, bus.awaddr, bus.awlen, bus.awsize, bus.awburst,
                   bus.wvalid, bus.wdata, bus.wstrb, bus.wlast, bus.bready]
        r_cur = None
        while True:
            arready, awready, wready = rng.random() < 0.7, rng.random() < 0.7, rng.random() < 0.7
            ctx.set(bus.arready, arready)
            ctx.set(bus.awready, awready)
            ctx.set(bus.wready, wready)
            # R: a random outstanding burst (bursts of one ID stay in order), random gaps.
            if r_cur is None and self.reads and rng.random() < 0.8:
                heads = {}
                for b in self.reads:
                    heads.setdefault(b[0], b)
                r_cur = rng.choice(list(heads.values()))
            ctx.set(bus.rvalid, r_cur is not None)
            if r_cur is not None:
                ctx.set(bus.rid, r_cur[0])
                ctx.set(bus.rdata, _word(r_cur[1], self.B))
                ctx.set(bus.rlast, r_cur[2] == 1)
            bvalid = bool(self.bq) and self.bq[0] <= 0
            ctx.set(bus.bvalid, bvalid)
            # Handshakes happen at the edge: decide them from the values sampled there.
            _, _, *v = await ctx.tick().sample(*sampled)
            (arvalid, arid, araddr, arlen, arsize, arburst, rready,
             awvalid, awid, awaddr, awlen, awsize, awburst, wvalid, wdata, wstrb, wlast, bready) = v
            if arvalid and arready:
                self.check_burst("ar", arid, araddr, arlen + 1, arsize, arburst)
                self.reads.append([arid, araddr, arlen + 1])
            if r_cur is not None and rready:
                r_cur[1] += self.B
                r_cur[2] -= 1
                if r_cur[2] == 0:
                    self.reads.remove(r_cur)
            if r_cur is not None and (r_cur[2] == 0 or rng.random() < 0.3):
                r_cur = None
            if awvalid and awready:
                self.check_burst("aw", awid, awaddr, awlen + 1, awsize, awburst)
                self.writes.append([awaddr, awlen + 1])
            if wvalid and wready:
                if not self.writes:
                    self.errors.append("W beat before its AW (this master never does that)")
                else:
                    w = self.writes[0]
                    for k in range(self.B):
                        if wstrb >> k & 1:
                            self.mem[w[0] + k] = wdata >> (8 * k) & 0xFF
                    if bool(wlast) != (w[1] == 1):
                        self.errors.append(f"wlast={wlast} with {w[1]} beats left")
                    w[0] += self.B
                    w[1] -= 1
                    if w[1] == 0:
                        self.writes.pop(0)
                        self.bq.append(rng.randint(0, 6))
            if bvalid and bready:
                self.bq.pop(0)
            if self.bq:
                self.bq[0] = max(0, self.bq[0] - 1)


def _run(dut: AxiMaster, benches, cycles: int) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for b in benches:
        sim.add_testbench(b)
    sim.run_until(cycles * 1e-8)


@pytest.mark.parametrize("name,max_burst", [("small", 256), ("default", 16)])
def test_reads_split_route_and_never_block_each_other(name, max_burst):
    c = PRESETS[name]
    dut = AxiMaster(c, max_burst=max_burst, read_fifo_depth=max(64, max_burst))
    slave = _Slave(dut, random.Random(1))
    B = c.bus_bytes
    # (addr, beats) per port: crossing 4 KiB, longer than a burst, single beats.
    cmds = {
        "fetch": [(0x0FF0, 300), (0x7000, 1)],
        "load": [(0x2000, 1100), (0x3FF8 - 8 * B, 40)],
        "compute": [(0x5FFC // B * B, 3), (0x9000, 2 * max_burst + 5)],
    }
    got = {p: [] for p in READ_PORTS}
    want = {p: [_word(a + k * B, B) for a, n in cmds[p] for k in range(n)] for p in READ_PORTS}
    done = {}

    def issuer(port):
        async def bench(ctx):
            cmd = getattr(dut, port).cmd
            for addr, beats in cmds[port]:
                await _send(ctx, cmd, addr=addr, beats=beats)
            ctx.set(cmd.valid, 0)
        return bench

    def reader(port, stall_until):
        async def bench(ctx):
            data = getattr(dut, port).data
            cycle = 0
            while len(got[port]) < len(want[port]):
                ready = cycle >= stall_until
                ctx.set(data.ready, ready)
                if ready and ctx.get(data.valid):
                    got[port].append(ctx.get(data.payload))
                await ctx.tick()
                cycle += 1
            ctx.set(data.ready, 0)
            done[port] = cycle
        return bench

    stall = {"fetch": 0, "load": 3000, "compute": 0}  # load's reader stalls for 3000 cycles
    _run(dut, [slave.serve, *(issuer(p) for p in READ_PORTS), *(reader(p, stall[p]) for p in READ_PORTS)], 12000)
    assert not slave.errors, slave.errors[:5]
    for p in READ_PORTS:
        assert got[p] == want[p], f"{p}: {len(got[p])} of {len(want[p])} words, or wrong order"
    assert done["fetch"] < 3000 and done["compute"] < 3000, f"a stalled reader blocked the others: {done}"
    assert max(b[3] for b in slave.bursts) == max_burst
    assert {b[1] for b in slave.bursts if b[0] == "ar"} == {0, 1, 2}


def test_writes_with_strobes_one_response_per_command():
    c = PRESETS["small"]
    dut = AxiMaster(c, max_burst=256)
    slave = _Slave(dut, random.Random(2))
    B = c.bus_bytes
    cmds = [(0x0F00, 100), (0x2000 - B, 1), (0x2000, 300), (0x4000, 1)]  # 100 beats cross 4 KiB
    beats = [(a + k * B, (k * 7919 + a) & ((1 << 8 * B) - 1), (1 << B) - 1 if n > 1 else 0b0110)
             for a, n in cmds for k in range(n)]
    resps = []

    async def commands(ctx):
        st = dut.store
        for addr, n in cmds:
            await _send(ctx, st.cmd, addr=addr, beats=n)
        ctx.set(st.cmd.valid, 0)

    async def data(ctx):
        st = dut.store
        for _, value, strb in beats:  # data may come before its command
            await _send(ctx, st.data, data=value, strb=strb)
        ctx.set(st.data.valid, 0)

    async def responses(ctx):
        st = dut.store
        ctx.set(st.resp.ready, 1)
        cycle = 0
        while len(resps) < len(cmds):
            if ctx.get(st.resp.valid):
                resps.append(cycle)
            await ctx.tick()
            cycle += 1

    _run(dut, [slave.serve, commands, data, responses], 4000)
    assert not slave.errors, slave.errors[:5]
    assert len(resps) == len(cmds)
    assert not slave.writes and not slave.bq, "every burst written and answered"
    for addr, value, strb in beats:
        for k in range(B):
            want = value >> (8 * k) & 0xFF if strb >> k & 1 else None
            assert slave.mem.get(addr + k) == want, f"byte {addr + k:#x}"
    aw = [b for b in slave.bursts if b[0] == "aw"]
    assert [b[3] for b in aw][:2] == [64, 36], "100 beats from 0xF00 split at 4 KiB"
    assert max(b[3] for b in aw) == 256
