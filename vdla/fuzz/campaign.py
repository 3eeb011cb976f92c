"""Differential fuzzing: random valid programs on an RTL device against the golden simulator.

    python -m vdla.fuzz --device verilator --configs small,default --count 10000 --jobs 4

Each program comes from `vdla.fuzz.randprog.random_program(config, seed)`; it runs on
``Device("fsim")`` and on the device under test, each from the same DRAM image. The final
output bytes must agree bit-exactly, and so must the golden counters (bytes moved per
buffer, GEMM and ALU uop-iterations). A mismatch prints the config, the seed and the first
differing address (or counter); rerun one case with ``--configs NAME --seed SEED --count 1``.
Programs are spread over ``--jobs`` worker processes (one device per config per worker, so
buffers persist across programs as on hardware); the exit status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from .. import progress
from ..config import preset
from ..runtime.device import Device
from .randprog import random_program

__all__ = ["CaseResult", "check_case", "first_difference", "main"]

DRAM = 1 << 18


@dataclass
class CaseResult:
    config: str
    seed: int
    ok: bool
    message: str = ""
    cycles: int = 0


def first_difference(want: np.ndarray, got: np.ndarray, base: int) -> str:
    k = int(np.argmax(want != got))
    return f"first differing byte at {base + k:#x}: golden {want[k]:#04x}, RTL {got[k]:#04x}"


def check_case(config: str, seed: int, golden: Device, dut: Device) -> CaseResult:
    """Run random program `seed` on both devices; compare output bytes and golden counters."""
    case = random_program(golden.config, seed)
    want, gold = case.run(golden)
    try:
        got, rtl = case.run(dut)
    except Exception as e:  # noqa: BLE001 - any failure of the RTL is a finding
        return CaseResult(config, seed, False, f"{type(e).__name__}: {e}")
    if not np.array_equal(want, got):
        return CaseResult(config, seed, False, first_difference(want, got, case.out_range[0]), rtl.cycles)
    if rtl.counters != gold.counters:
        diff = {k: (gold.counters.get(k), rtl.counters.get(k)) for k in gold.counters
                if gold.counters.get(k) != rtl.counters.get(k)}
        return CaseResult(config, seed, False, f"counters differ (golden, RTL): {diff}", rtl.cycles)
    return CaseResult(config, seed, True, "", rtl.cycles)


_devices: dict[str, tuple[Device, Device]] = {}


def _work(args: tuple[str, str, int]) -> CaseResult:
    kind, config, seed = args
    if config not in _devices:
        c = preset(config)
        _devices[config] = (Device("fsim", config=c, dram_size=DRAM), Device(kind, config=c, dram_size=DRAM))
    golden, dut = _devices[config]
    res = check_case(config, seed, golden, dut)
    if not res.ok:  # start from a fresh device: the failed run may have left the core mid-program
        del _devices[config]
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdla.fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--device", default="verilator", help="device under test (verilator, pysim)")
    p.add_argument("--configs", default="small,default", help="comma-separated presets, alternated")
    p.add_argument("--count", type=int, default=10_000, help="programs in all")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    args = p.parse_args(argv)
    progress.set_quiet(args.quiet)
    configs = [c for c in args.configs.split(",") if c]
    if args.device == "verilator":
        from ..simulator.rtl import verilator

        for name in configs:  # build before forking, once per config
            verilator.build_library(preset(name), verbose=True)
    work = [(args.device, configs[i % len(configs)], args.seed + i // len(configs)) for i in range(args.count)]
    t0 = time.monotonic()
    failures: list[CaseResult] = []
    done = cycles = 0
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(max(1, args.jobs)) as pool:
        results = pool.imap_unordered(_work, work, chunksize=8)
        for res in progress.bar(results, total=len(work), desc=f"{args.device} vs fsim", unit="program"):
            done += 1
            cycles += res.cycles
            if not res.ok:
                failures.append(res)
                print(f"MISMATCH config={res.config} seed={res.seed}: {res.message}", flush=True)
            if done % 500 == 0 or done == len(work):
                dt = time.monotonic() - t0
                print(f"{done}/{len(work)} programs, {len(failures)} failed, {cycles} RTL cycles, "
                      f"{dt:.0f} s ({done / dt:.1f} programs/s)", flush=True)
    print(f"{args.device} vs fsim: {len(work) - len(failures)}/{len(work)} random programs agree bit-exactly "
          f"(configs {', '.join(configs)}, seeds {args.seed}..{args.seed + (len(work) - 1) // len(configs)})")
    for res in failures[:20]:
        print(f"  rerun: python -m vdla.fuzz --device {args.device} --configs {res.config} --seed {res.seed} "
              f"--count 1 --jobs 1")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
