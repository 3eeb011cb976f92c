"""The CPU's peak fp32 FLOP/s, computed as vector lanes x 2 (FMA) x FMA pipes x clock.

* lanes and pipes: from the CPU model LLVM reports (``FMA_PIPES``; e.g. Zen 5 has two
  FMA pipes that each execute a full 512-bit (16-lane) FMA per cycle, Zen 4 two 256-bit
  ones — its 512-bit instructions are split in halves, Sapphire/Emerald Rapids Xeons two
  512-bit ones), else from the feature flags (:func:`fma_layout`, pure);
* clock: *measured* with a JIT-compiled chain of 64 dependent **register-register**
  ``add %rdx, %rax`` per loop iteration (one cycle of latency each on every x86 core
  since the P6), cross-checked by a chain of dependent ``imul %rdx, %rax`` (three cycles
  each on every x86-64 core since the Core 2 and on every Zen).  An ``add $1, %rax`` chain
  is *not* a clock: Golden Cove and later Intel cores (Alder Lake, Sapphire / Emerald
  Rapids) fold add-immediate chains in the renamer, several per cycle, which is why the
  first version of this probe read 17-19 GHz on an Emerald Rapids guest.
  :func:`checked_clock` (pure) refuses a measured clock that the two chains disagree on
  or that is implausible next to the nominal clock from ``/proc/cpuinfo``
  (:func:`nominal_ghz`: the "@ 2.30GHz" of the model name, else "cpu MHz" — only the TSC
  rate inside a VM), and falls back to the nominal one with the reason in the basis text.

The cross-check of lanes x pipes is :func:`fma_peak` (12 independent FMA chains on
one thread), printed next to the computed peak.  Run ``python benchmarks/bench_cpu_peak.py``
to print the figures; the matmul, conv2d and
tuning benchmarks import :func:`computed_peak`.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
import time
from collections.abc import Callable

#: (fp32 lanes per FMA pipe, FMA pipes per core) by LLVM CPU name
FMA_PIPES = {
    "znver5": (16, 2),
    "znver4": (8, 2),
    "znver3": (8, 2),
    "znver2": (8, 2),
    "skylake-avx512": (16, 2),
    "cascadelake": (16, 2),
    "cooperlake": (16, 2),
    "icelake-server": (16, 2),
    "sapphirerapids": (16, 2),
    "emeraldrapids": (16, 2),
    "graniterapids": (16, 2),
    "alderlake": (8, 2),
    "raptorlake": (8, 2),
    "haswell": (8, 2),
    "broadwell": (8, 2),
    "skylake": (8, 2),
}

#: latency in cycles of one link of each clock chain (the same on every x86-64 core this runs on)
CHAINS = {"add": ("add %rdx, %rax", 1), "imul": ("imul %rdx, %rax", 3)}
#: links per loop iteration (the loop's own dec/jnz overlap with the chain)
LINKS = 64


def fma_layout(cpu: str, features: str) -> tuple[int, int, str]:
    """(fp32 lanes per FMA pipe, FMA pipes, basis text) of an LLVM CPU name and feature string."""
    if cpu in FMA_PIPES:
        lanes, pipes = FMA_PIPES[cpu]
        return lanes, pipes, f"{cpu}: {pipes} FMA pipes x {lanes} fp32 lanes"
    feats = set(features.split(","))
    lanes = 16 if "+avx512f" in feats else 8 if "+fma" in feats else 4
    return lanes, 2, f"{cpu} (not in the table): assumed 2 FMA pipes x {lanes} lanes from its features"


def nominal_ghz(cpuinfo: str) -> float | None:
    """The nominal clock in a ``/proc/cpuinfo`` text: the model name's "@ X.XXGHz", else the
    first "cpu MHz" line; None when neither is there."""
    m = re.search(r"^model name\s*:.*@\s*([0-9.]+)\s*GHz", cpuinfo, re.M)
    if m:
        return float(m.group(1))
    m = re.search(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo, re.M)
    return float(m.group(1)) / 1000 if m else None


def checked_clock(add_ghz: float, imul_ghz: float, nominal: float | None) -> tuple[float, str]:
    """(clock in GHz to compute the peak with, why).  The add chain's figure when the imul chain
    agrees with it within 10% and it lies within [0.5, 2] x nominal and under 6.5 GHz (no x86
    core has run faster); else the nominal clock (or the slower chain when there is none)."""
    agree = abs(add_ghz - imul_ghz) <= 0.10 * max(add_ghz, imul_ghz)
    lo, hi = (0.5 * nominal, min(6.5, 2.0 * nominal)) if nominal else (0.3, 6.5)
    if agree and lo <= add_ghz <= hi:
        return add_ghz, f"measured {add_ghz:.2f} GHz (add chain; imul chain {imul_ghz:.2f})"
    why = (f"add chain {add_ghz:.2f} GHz and imul chain {imul_ghz:.2f} GHz "
           + ("disagree" if not agree else f"outside [{lo:.2f}, {hi:.2f}] GHz"))
    if nominal:
        return nominal, f"nominal {nominal:.2f} GHz ({why})"
    return min(add_ghz, imul_ghz), f"slower chain {min(add_ghz, imul_ghz):.2f} GHz ({why}; no nominal clock)"


def _clock_probe(chain: str):  # type: ignore[no-untyped-def]
    """``fn(iters)`` runs ``iters`` x LINKS dependent links of ``chain``."""
    from llvmlite import ir

    from vdla.compiler.targets.llvm import jit

    i64 = ir.IntType(64)
    mod = ir.Module(f"clock_probe_{chain}")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [i64]), name=f"vdla_clock_{chain}")
    b = ir.IRBuilder(fn.append_basic_block())
    links = "\n".join(CHAINS[chain][0] for _ in range(LINKS))
    # rdx = 1 keeps the imul chain's value fixed (1 x 1 ...) and the add chain's growing; both
    # are data-dependent register ops the renamer cannot fold away
    asm = f"mov $$1, %rax\nmov $$1, %rdx\n1:\n{links}\ndec $0\njnz 1b"
    b.asm(ir.FunctionType(ir.VoidType(), [i64]), asm, "r,~{rax},~{rdx},~{cc}", [fn.args[0]], side_effect=True)
    b.ret_void()
    compiled = jit.compile_module(str(mod), 0)
    f = ctypes.CFUNCTYPE(None, ctypes.c_int64)(compiled.address(f"vdla_clock_{chain}"))
    f._keep = compiled  # type: ignore[attr-defined]  # the JIT'd code lives as long as the pointer
    return f


def _best_threaded(fn: Callable[[int], None], iters: int, nthreads: int, trials: int) -> float:
    """Seconds of the fastest of ``trials`` runs of ``fn(iters)`` on ``nthreads`` threads at once
    (preemption can only slow a run, so the minimum is the figure)."""
    best = float("inf")
    for _ in range(trials):
        ths = [threading.Thread(target=fn, args=(iters,)) for _ in range(nthreads)]
        t = time.perf_counter()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        best = min(best, time.perf_counter() - t)
    return best


def measure_clock_ghz(nthreads: int, chain: str = "add", iters: int = 200_000, trials: int = 15) -> float:
    """Clock (GHz) with ``nthreads`` threads busy running ``chain``: LINKS x iters x latency
    cycles per thread, best of ``trials`` short runs (preemption can only lower a figure)."""
    fn = _clock_probe(chain)
    fn(10_000)
    best = _best_threaded(fn, iters, nthreads, trials)
    return LINKS * iters * CHAINS[chain][1] / best / 1e9


def _fma_probe():  # type: ignore[no-untyped-def]
    """A JIT-compiled loop of 12 independent vector FMA chains (zmm with AVX-512, else ymm: enough
    chains to cover 2 pipes x 4 cycles of latency); returns (fn(iters), flop/iter)."""
    from llvmlite import ir

    from vdla.compiler.targets.llvm import jit

    reg, lanes = ("zmm", 16) if "+avx512f" in jit.host_info()["features"] else ("ymm", 8)
    # zeroed registers: 0 x 0 + 0 stays 0, no denormal slow path
    body = "\n".join(f"vxorps %{reg}{k}, %{reg}{k}, %{reg}{k}" for k in range(14))
    fmas = "\n".join(f"vfmadd231ps %{reg}12, %{reg}13, %{reg}{k}" for k in range(12))
    asm = f"{body}\n1:\n{fmas}\ndec $0\njnz 1b"
    clob = ",".join(f"~{{{reg}{k}}}" for k in range(14))
    i64 = ir.IntType(64)
    mod = ir.Module("fma_probe")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [i64]), name="vdla_fma_probe")
    b = ir.IRBuilder(fn.append_basic_block())
    b.asm(ir.FunctionType(ir.VoidType(), [i64]), asm, f"r,{clob},~{{cc}}", [fn.args[0]], side_effect=True)
    b.ret_void()
    compiled = jit.compile_module(str(mod), 0)
    cfn = ctypes.CFUNCTYPE(None, ctypes.c_int64)(compiled.address("vdla_fma_probe"))
    cfn._keep = compiled  # type: ignore[attr-defined]
    return cfn, 12 * lanes * 2


def fma_peak(nthreads: int, iters: int = 2_000_000, trials: int = 10) -> float:
    """Measured GFLOP/s with ``nthreads`` threads each running the FMA probe (best of ``trials``):
    the cross-check of lanes x pipes x clock."""
    fn, flop = _fma_probe()
    fn(iters)  # warm-up long enough for Intel's AVX-512 power-licence switch (its first microseconds run slower)
    best = _best_threaded(fn, iters, nthreads, trials)
    return nthreads * iters * flop / best / 1e9


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


_clock_1: list[tuple[float, str]] = []


def computed_peak(nthreads: int) -> tuple[float, float, str]:
    """(peak GFLOP/s of ``nthreads`` cores, clock in GHz, basis text).

    The clock is the one measured on one thread (cached): on a shared machine a clock
    measured with all threads busy also counts other processes' time slices, so it is
    reported separately (:func:`measure_clock_ghz`) as a load indicator, not used here."""
    from vdla.compiler.targets.llvm import jit

    info = jit.host_info()
    lanes, pipes, basis = fma_layout(info["cpu"], info["features"])
    if not _clock_1:
        _clock_1.append(checked_clock(measure_clock_ghz(1, "add"), measure_clock_ghz(1, "imul"),
                                      nominal_ghz(_cpuinfo())))
    ghz, why = _clock_1[0]
    return lanes * 2 * pipes * ghz * nthreads, ghz, f"{basis} x 2 flop/FMA x {why} x {nthreads} core(s)"


def main() -> None:
    from vdla.compiler.targets.llvm import jit

    print(f"nominal clock (/proc/cpuinfo): {nominal_ghz(_cpuinfo())} GHz")
    if "x86" in jit.host_info()["triple"]:
        print(f"measured: 12 independent FMA chains on 1 thread: {fma_peak(1):.1f} GFLOP/s")
    for n in sorted({1, os.cpu_count() or 1}):
        peak, _, basis = computed_peak(n)
        busy = measure_clock_ghz(n)
        print(f"{n} core(s): {peak:.1f} GFLOP/s fp32 peak ({basis}); clock seen with {n} thread(s) busy: {busy:.2f} GHz")


if __name__ == "__main__":
    main()
