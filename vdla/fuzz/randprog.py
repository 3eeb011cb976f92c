"""Random valid VDLA programs, for differential testing of executors.

`random_program(config, seed)` builds a program with the `CommandStream` from a
sequence of tasks. Each task loads random INP/WGT tiles (2D, strided, padded), runs
compute (LOAD ACC / ACC_8BIT, GEMM reset and accumulate over random 2-level uop
loops, ALU ops with random immediates or tensor operands, CFG with random epilogues and
init bases, GEMMs with init) and stores random OUT rows. CFG and GEMM init are drawn from
a second random stream of the seed, so the rest of a seed's program (every load, kernel,
ALU op and store) is what it was before CFG existed; CFG's window mode (a third of the CFGs,
with a random warm-up half the time) from a third, so the CFGs are otherwise as before.
Tokens follow VTA's protocol (RAW forward, WAR backward, every push before its pop in
program order), so a correct executor neither deadlocks nor leaves tokens, and the
final DRAM contents do not depend on timing or queue depths.

The returned `RandomCase` holds the program, the DRAM image to start from and the
output range to compare, so two executors can be run on the same case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import Config
from ..isa import AluOp, Mem, Stage, buffer_depth, elem_bytes
from ..runtime.device import Device
from ..runtime.kernel import Loop, UopKernel
from ..runtime.program import Program
from ..runtime.stream import CommandStream
from ..simulator import Report

__all__ = ["RandomCase", "random_program"]

L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


@dataclass
class RandomCase:
    seed: int
    program: Program
    dram: np.ndarray  # initial DRAM image (uint8)
    out_range: tuple[int, int]  # bytes [start, end) the program writes

    def run(self, device: Device, strict: bool = True, validate: bool = True) -> tuple[np.ndarray, Report]:
        """Run on a fresh `device` (DRAM larger than the case's): the case's image goes at
        address 0, the device places uops and instructions above it. Returns the output bytes.
        ``validate=False``: skip `Device.run`'s checks (an RTL device's own then decide)."""
        n = self.dram.size
        if device.dram.size <= n:
            raise ValueError(f"{device!r} has {device.dram.size} bytes of DRAM; the case needs more than {n}")
        device.allocator.reserve(4096, n - 4096)
        try:
            device.dram[:n] = self.dram
            report = device.run(self.program, strict=strict, validate=validate)
            return device.dram[self.out_range[0] : self.out_range[1]].copy(), report
        finally:
            device.allocator.free(4096)

    def describe(self) -> str:
        return f"random program seed={self.seed}: {len(self.program)} instructions, {self.program.uops.size} uops"


class _Gen:
    def __init__(self, config: Config, rng: np.random.Generator, dram_size: int,
                 cfg_rng: np.random.Generator | None = None, win_rng: np.random.Generator | None = None) -> None:
        self.c, self.rng = config, rng
        self.cfg_rng = cfg_rng  # CFG and GEMM init (None: neither)
        self.win_rng = win_rng  # CFG's window mode (None: never on)
        self.init_base = 0  # what the last CFG set (CFG's state starts at 0 every run)
        # DRAM: [inputs | outputs]; inputs random, outputs zero. Element sizes divide 4096.
        self.in_base, self.in_bytes = 4096, dram_size // 2 - 4096
        self.out_base, self.out_bytes = dram_size // 2, dram_size // 2
        # Rows that hold data (loaded, or written by kernels): kernels and stores favour them.
        self.loaded: dict[Mem, list[int]] = {Mem.INP: [], Mem.WGT: [], Mem.ACC: [], Mem.OUT: []}

    def r(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def load(self, s: CommandStream, mem: Mem) -> None:
        depth, eb = buffer_depth(self.c, mem), elem_bytes(self.c, mem)
        max_pad = 2 if mem != Mem.WGT else 0
        xp = (self.r(0, max_pad), self.r(0, max_pad))
        yp = (self.r(0, max_pad), self.r(0, max_pad))
        x = self.r(1, max(1, min(8, depth // 4)))
        y = self.r(1, max(1, min(4, depth // (4 * (x + sum(xp))))))
        span = (y + sum(yp)) * (x + sum(xp))
        if span > depth:
            xp = yp = (0, 0)
            x, y = 1, 1
            span = 1
        sram = self.r(0, depth - span)
        self.loaded[Mem.ACC if mem == Mem.ACC_8BIT else mem].append(sram)
        stride = x + self.r(0, 3)
        elems = self.in_bytes // eb
        offset = self.r(0, elems - ((y - 1) * stride + x) - 1)
        s.load_2d(mem, sram, self.in_base, x_size=x, y_size=y, x_stride=stride,
                  offset=offset, x_pad=xp, y_pad=yp)

    def loops(self, factors: tuple[str, ...], limits: dict[str, int]) -> tuple[Loop, ...]:
        """Up to two loops whose total index spread stays inside each buffer."""
        n = self.r(0, 2)
        loops = []
        for _ in range(n):
            ext = self.r(1, 4)
            # Mostly small strides, so iterations stay near the rows that hold data.
            wide = self.r(0, 3) == 0
            f = {
                k: (self.r(0, max(0, limits[k] // (4 * ext) if wide else min(4, limits[k] // (4 * ext)))) if k in factors else 0)
                for k in ("dst", "src", "wgt")
            }
            loops.append(Loop(ext, **f))
        return tuple(loops)

    def x(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi], from the CFG stream."""
        return int(self.cfg_rng.integers(lo, hi + 1))

    def cfg(self, s: CommandStream, init_base: int | None = None) -> None:
        """A CFG: a random epilogue (often on; shifts mostly small; clip bounds now and then
        crossed) and `init_base` (or the current one)."""
        c = self.c
        if init_base is not None:
            self.init_base = init_base
        half = 1 << (c.out_width - 1)
        lo, hi = sorted((self.x(-half, half - 1), self.x(-half, half - 1)))
        if self.x(0, 7) == 0:
            lo, hi = hi, lo
        shift = self.x(0, 12) if self.x(0, 3) else self.x(0, c.acc_width - 1)
        window = warmup = 0
        if self.win_rng is not None and self.win_rng.integers(0, 3) == 0:  # a third of the CFGs
            window = 1
            warmup = int(self.win_rng.integers(0, c.block_in)) if self.win_rng.integers(0, 2) else 0
        s.cfg(init_base=self.init_base, shift=shift, clip_lo=lo, clip_hi=hi, epilogue=self.x(0, 4) < 3,
              window=window, warmup=warmup)

    def gemm(self, s: CommandStream, k: UopKernel, reset: bool) -> None:
        """GEMM over `k`; with the CFG stream, a third of them with init, after a CFG that sets
        an init base keeping every init row inside ACC when the current one does not (or at random)."""
        init = False
        if self.cfg_rng is not None and self.x(0, 2) == 0:
            c = self.c
            top = max(w for _, _, w in k.uops) + sum((lp.extent - 1) * lp.wgt for lp in k.loops)
            if top < c.acc_depth:
                init = True
                if self.init_base + top >= c.acc_depth or self.x(0, 1):
                    seen = [r for r in self.loaded[Mem.ACC] if r + top < c.acc_depth]  # bias rows that hold data
                    self.cfg(s, seen[self.x(0, len(seen) - 1)] if seen and self.x(0, 3) else self.x(0, c.acc_depth - 1 - top))
        s.gemm(k, reset=reset, init=init)

    def pick(self, mem: Mem, high: int) -> int:
        """An index in [0, high], usually one that was loaded."""
        seen = self.loaded[mem]
        if seen and self.r(0, 3):
            return min(seen[self.r(0, len(seen) - 1)], high)
        return self.r(0, high)

    def kernel(self, name: str, src_depth: int, wgt_depth: int, mode_factors: tuple[str, ...]) -> UopKernel:
        c = self.c
        limits = {"dst": c.acc_depth, "src": src_depth, "wgt": wgt_depth}
        loops = self.loops(mode_factors, limits)
        spread = {k: sum((lp.extent - 1) * getattr(lp, k) for lp in loops) for k in limits}
        uops: list[tuple[int, int, int]] = []
        for _ in range(self.r(1, 6)):
            d = self.pick(Mem.ACC, c.acc_depth - 1 - spread["dst"])
            recent = {u[0] for u in uops[-2:]}  # VTA's rule: not the row of either of the last two uops
            while d in recent:
                d = (d + 1) % (c.acc_depth - spread["dst"])
            src_mem = Mem.INP if "wgt" in mode_factors else Mem.ACC
            uops.append((d, self.pick(src_mem, src_depth - 1 - spread["src"]), self.pick(Mem.WGT, wgt_depth - 1 - spread["wgt"])))
        self.loaded[Mem.ACC].extend(d for d, _, _ in uops)
        self.loaded[Mem.OUT].extend(d for d, _, _ in uops)  # GEMM/ALU write OUT; LOAD ACC does not
        return UopKernel(tuple(uops), loops, name)

    def compute(self, s: CommandStream) -> None:
        c = self.c
        for _ in range(self.r(1, 4)):
            if self.cfg_rng is not None and self.x(0, 5) == 0:
                self.cfg(s)
            kind = self.r(0, 9)
            if kind == 0:
                self.load(s, Mem.ACC)
            elif kind == 1:
                self.load(s, Mem.ACC_8BIT)
            elif kind <= 5:
                k = self.kernel("gemm", c.inp_depth, c.wgt_depth, ("dst", "src", "wgt"))
                self.gemm(s, k, reset=self.r(0, 4) == 0)
            else:
                use_imm = self.r(0, 1) == 1
                op = AluOp(self.r(0, len(AluOp) - 1))
                k = self.kernel("alu", c.acc_depth, 1, ("dst", "src"))
                k = UopKernel(tuple((d, sr, 0) for d, sr, _ in k.uops), k.loops, k.name)
                if use_imm:
                    half = 1 << (c.alu_imm_width - 1)  # immediates fit the config's field
                    imm = self.r(-12, 12) if op == AluOp.SHR and self.r(0, 3) else self.r(-40, 40) if op == AluOp.SHR else self.r(-half, half - 1)
                    imm = max(-half, min(half - 1, imm))
                    s.alu(k, op, imm)
                else:
                    s.alu(k, op)

    def store(self, s: CommandStream) -> None:
        c = self.c
        eb = c.out_elem_bytes
        x = self.r(1, min(8, c.out_depth))
        y = self.r(1, max(1, min(4, c.out_depth // x)))
        sram = self.pick(Mem.OUT, c.out_depth - x * y)
        stride = x + self.r(0, 3)
        elems = self.out_bytes // eb
        offset = self.r(0, elems - ((y - 1) * stride + x) - 1)
        s.store_2d(sram, self.out_base, x_size=x, y_size=y, x_stride=stride, offset=offset)


def random_program(config: Config, seed: int, tasks: int | None = None, dram_size: int = 1 << 16,
                   cfg: bool = True) -> RandomCase:
    """A random valid program over a DRAM of `dram_size` bytes (inputs below the middle,
    outputs above). ``cfg=False``: no CFG and no GEMM init (the seed's program as it was
    before them)."""
    rng = np.random.default_rng(seed)
    cfg = cfg and config.gemm_epilogue  # a Config without the epilogue refuses CFG and init
    g = _Gen(config, rng, dram_size, np.random.default_rng((seed, 5)) if cfg else None,
             np.random.default_rng((seed, 6)) if cfg and config.gemm_window else None)
    n = tasks if tasks is not None else g.r(1, 5)
    s = CommandStream(config, f"random-{seed}")
    for t in range(n):
        # load: wait until compute is done with the previous tiles (WAR), then load, then signal.
        if t > 0:
            s.dep_pop(G, L)
        kinds = [Mem.INP, Mem.WGT] + [Mem.INP if g.r(0, 1) else Mem.WGT for _ in range(g.r(0, 2))]
        for i in rng.permutation(len(kinds)):
            g.load(s, kinds[i])
        s.dep_push(L, G)
        # compute: wait for the loads (RAW) and for the previous store to drain OUT (WAR).
        s.dep_pop(L, G)
        if t > 0:
            s.dep_pop(S, G)
        g.compute(s)
        if t < n - 1:
            s.dep_push(G, L)
        s.dep_push(G, S)
        # store: wait for compute (RAW), store, then let compute reuse OUT.
        s.dep_pop(G, S)
        for _ in range(g.r(1, 2)):
            g.store(s)
        if t < n - 1:
            s.dep_push(S, G)
    dram = np.zeros(dram_size, dtype=np.uint8)
    dram[g.in_base : g.in_base + g.in_bytes] = rng.integers(0, 256, g.in_bytes, dtype=np.uint8)
    return RandomCase(seed, s.finish(), dram, (g.out_base, g.out_base + g.out_bytes))
