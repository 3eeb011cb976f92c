"""The CPU's peak fp32 FLOP/s, computed as vector lanes x 2 (FMA) x FMA pipes x clock.

* lanes and pipes: from the CPU model LLVM reports (``_FMA_PIPES``; e.g. Zen 5 has two
  FMA pipes that each execute a full 512-bit (16-lane) FMA per cycle, Zen 4 two 256-bit
  ones — its 512-bit instructions are split in halves), else from the feature flags;
* clock: *measured*.  A JIT-compiled chain of 64 dependent ``add $1, %rax`` per loop
  iteration (one cycle of latency each on every x86 core since the P6) runs on every
  thread at once; cycles / seconds is the sustained clock under that load.
  ``/proc/cpuinfo``'s "cpu MHz" is only the nominal TSC rate inside a VM.

Run ``python benchmarks/bench_cpu_peak.py`` to print the figures; the matmul and conv2d
benchmarks import :func:`computed_peak`.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from llvmlite import ir

from vdla.compiler.targets.llvm import jit

#: (fp32 lanes per FMA pipe, FMA pipes per core) by LLVM CPU name
_FMA_PIPES = {
    "znver5": (16, 2),
    "znver4": (8, 2),
    "znver3": (8, 2),
    "znver2": (8, 2),
    "skylake-avx512": (16, 2),
    "cascadelake": (16, 2),
    "icelake-server": (16, 2),
    "sapphirerapids": (16, 2),
    "alderlake": (8, 2),
    "haswell": (8, 2),
    "skylake": (8, 2),
}


def fma_layout() -> tuple[int, int, str]:
    cpu = jit.host_info()["cpu"]
    if cpu in _FMA_PIPES:
        lanes, pipes = _FMA_PIPES[cpu]
        return lanes, pipes, f"{cpu}: {pipes} FMA pipes x {lanes} fp32 lanes"
    feats = jit.host_info()["features"]
    lanes = 16 if "+avx512f" in feats else 8 if "+fma" in feats else 4
    return lanes, 2, f"{cpu} (not in the table): assumed 2 FMA pipes x {lanes} lanes from its features"


def _clock_probe() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    """``fn(iters)`` runs ``iters`` x 64 dependent 1-cycle adds."""
    i64 = ir.IntType(64)
    mod = ir.Module("clock_probe")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [i64]), name="vdla_clock_probe")
    b = ir.IRBuilder(fn.append_basic_block())
    adds = "\n".join("add $$1, %rax" for _ in range(64))
    asm = f"xor %rax, %rax\n1:\n{adds}\ndec $0\njnz 1b"
    b.asm(ir.FunctionType(ir.VoidType(), [i64]), asm, "r,~{rax},~{cc}", [fn.args[0]], side_effect=True)
    b.ret_void()
    compiled = jit.compile_module(str(mod), 0)
    return ctypes.CFUNCTYPE(None, ctypes.c_int64)(compiled.address("vdla_clock_probe"))


def measure_clock_ghz(nthreads: int, iters: int = 500_000, trials: int = 25) -> float:
    """Clock (GHz) with ``nthreads`` threads busy: 64 x iters cycles per thread, best of
    ``trials`` short runs (preemption by other processes can only lower a run's figure)."""
    fn = _clock_probe()
    fn(10_000)
    best = float("inf")
    for _ in range(trials):
        ths = [threading.Thread(target=fn, args=(iters,)) for _ in range(nthreads)]
        t = time.perf_counter()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        best = min(best, time.perf_counter() - t)
    return 64 * iters / best / 1e9


_clock_1: list[float] = []


def computed_peak(nthreads: int) -> tuple[float, float, str]:
    """(peak GFLOP/s of ``nthreads`` cores, clock in GHz, basis text).

    The clock is the one measured on one thread (cached): on a shared machine a clock
    measured with all threads busy also counts other processes' time slices, so it is
    reported separately (:func:`measure_clock_ghz`) as a load indicator, not used here."""
    lanes, pipes, basis = fma_layout()
    if not _clock_1:
        _clock_1.append(measure_clock_ghz(1))
    ghz = _clock_1[0]
    return lanes * 2 * pipes * ghz * nthreads, ghz, f"{basis} x 2 flop/FMA x {ghz:.2f} GHz x {nthreads} core(s)"


def main() -> None:
    for n in sorted({1, os.cpu_count() or 1}):
        peak, _, basis = computed_peak(n)
        busy = measure_clock_ghz(n)
        print(f"{n} core(s): {peak:.1f} GFLOP/s fp32 peak ({basis}); clock seen with {n} thread(s) busy: {busy:.2f} GHz")


if __name__ == "__main__":
    main()
