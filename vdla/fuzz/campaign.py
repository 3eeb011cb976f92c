"""Differential fuzzing: random valid programs on an RTL device against the golden simulator.

    python -m vdla.fuzz --device verilator --configs small,default --count 10000 --jobs 4
    vdla fuzz ...                     the same command (`vdla.cli.fuzz`: the options; :func:`run`)

Each program comes from `vdla.fuzz.randprog.random_program(config, seed)`; it runs on
``Device("fsim")`` and on the device under test, each from the same DRAM image. The final
output bytes must agree bit-exactly, and so must the golden counters (bytes moved per
buffer, GEMM and ALU uop-iterations). A mismatch prints the config, the seed and the first
differing address (or counter); rerun one case with ``--configs NAME --seed SEED --count 1``.

``--invalid N`` (default 10,000; 0 for none) adds N invalid programs
(`vdla.fuzz.invalid.invalid_program`: a valid one with one mutation). Each must get the
same verdict from both devices: the same error class and instruction index, or (for a
mutation that left the program valid) the same results. On an RTL device (pysim,
verilator) the mutations the core checks itself (`vdla.fuzz.invalid.RTL_CHECKED`: indices
past a buffer, bad memory types and ALU opcodes) run without `Device.run`'s validation, so
the verdict is the core's own (printed as "... (core)"); ``--validate-all`` validates them
too. Rerun one with ``--invalid 1 --count 0 --seed SEED``.
Programs are spread over ``--jobs`` worker processes (one device per config per worker, so
buffers persist across programs as on hardware); the exit status is 1 if any case failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from dataclasses import dataclass

import numpy as np

from .. import progress
from ..config import preset
from ..runtime.device import Device
from ..simulator import SimulatorError
from .invalid import RTL_CHECKED, invalid_program
from .randprog import random_program

__all__ = ["CaseResult", "FuzzError", "check_case", "check_invalid_case", "verdict", "first_difference",
           "run", "SELF_CHECKING"]

DRAM = 1 << 18
#: Devices whose core checks indices itself: `RTL_CHECKED` mutations run on them unvalidated.
SELF_CHECKING = ("pysim", "verilator")


@dataclass
class CaseResult:
    config: str
    seed: int
    ok: bool
    message: str = ""
    cycles: int = 0
    invalid: bool = False  # a mutated program (`check_invalid_case`); message: its verdict when ok
    #: The DUT ran part of a program the golden simulator rejected whole (an unvalidated run that
    #: the core stopped): their buffers differ now, so the next case needs fresh devices.
    diverged: bool = False


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


def verdict(case, device: Device, validate: bool = True) -> tuple[str, int | None, np.ndarray | None]:
    """(error class, instruction index, None) if `device` rejects the case, else ("ok", None, output bytes)."""
    try:
        out, _ = case.run(device, validate=validate)
    except SimulatorError as e:
        return type(e).__name__, e.index, None
    return "ok", None, out


def check_invalid_case(config: str, seed: int, golden: Device, dut: Device, raw: bool | None = None) -> CaseResult:
    """Run mutated program `seed` on both devices: the same error and index, or the same results.

    ``raw`` (default: when the DUT is in `SELF_CHECKING`): a mutation in `RTL_CHECKED` runs on
    the DUT without validation, so its core's own run-time check must give the golden verdict."""
    bad = invalid_program(golden.config, seed)
    if raw is None:
        raw = dut.backend.name in SELF_CHECKING
    raw = raw and bad.mutation in RTL_CHECKED
    want = verdict(bad.case, golden)
    try:
        got = verdict(bad.case, dut, validate=not raw)
    except Exception as e:  # noqa: BLE001 - anything but the golden simulator's error is a finding
        return CaseResult(config, seed, False, f"{bad.mutation}: {type(e).__name__}: {e}", invalid=True)
    how = " unvalidated" if raw else ""
    if want[:2] != got[:2]:
        return CaseResult(config, seed, False, f"{bad.mutation} at instruction {bad.index}: golden {want[:2]}, "
                                               f"device{how} {got[:2]}", invalid=True)
    if want[0] == "ok" and not np.array_equal(want[2], got[2]):
        return CaseResult(config, seed, False, f"{bad.mutation} (still valid): "
                          + first_difference(want[2], got[2], bad.case.out_range[0]), invalid=True)
    return CaseResult(config, seed, True, want[0] + (" (core)" if raw else ""), invalid=True,
                      diverged=raw and got[0] != "ok")


_devices: dict[str, tuple[Device, Device]] = {}


def _work(args: tuple[str, str, int, bool, bool]) -> CaseResult:
    kind, config, seed, invalid, validate_all = args
    if config not in _devices:
        c = preset(config)
        _devices[config] = (Device("fsim", config=c, dram_size=DRAM), Device(kind, config=c, dram_size=DRAM))
    golden, dut = _devices[config]
    if invalid:
        res = check_invalid_case(config, seed, golden, dut, raw=False if validate_all else None)
    else:
        res = check_case(config, seed, golden, dut)
    if not res.ok or res.diverged:  # fresh devices: the run may have left the core mid-program, or
        _close(_devices.pop(config))  # the two devices' buffers differ
    return res


def _close(devices: tuple[Device, ...]) -> None:
    for d in devices:
        d.close()


class FuzzError(ValueError):
    """Arguments the campaign cannot run with (a negative count)."""


def run(args: argparse.Namespace) -> int:
    """The campaign `add_arguments`' options ask for; exit status 1 if any case failed. ``-q``
    holds for this call only; a negative count raises `FuzzError`."""
    with progress.quiet(progress.is_quiet()):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    for name, n in (("--count", args.count), ("--invalid", args.invalid), ("--jobs", args.jobs)):
        if n < 0:
            raise FuzzError(f"{name} must be >= 0, got {n}")
    progress.set_quiet(args.quiet)  # run() restores the previous setting
    configs = [c for c in args.configs.split(",") if c]
    if args.device == "verilator":
        from ..simulator.rtl import verilator

        for name in configs:  # build before forking, once per config
            verilator.build_library(preset(name), verbose=True)
    work = [(args.device, configs[i % len(configs)], args.seed + i // len(configs), False, args.validate_all)
            for i in range(args.count)]
    work += [(args.device, configs[i % len(configs)], args.seed + i // len(configs), True, args.validate_all)
             for i in range(args.invalid)]
    t0 = time.monotonic()
    failures: list[CaseResult] = []
    done = cycles = 0
    verdicts: dict[str, int] = {}
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(max(1, args.jobs)) as pool:
        results = pool.imap_unordered(_work, work, chunksize=8)
        for res in progress.bar(results, total=len(work), desc=f"{args.device} vs fsim", unit="program"):
            done += 1
            cycles += res.cycles
            if not res.ok:
                failures.append(res)
                print(f"MISMATCH config={res.config} seed={res.seed}: {res.message}", flush=True)
            elif res.message:  # an invalid case: its verdict
                verdicts[res.message] = verdicts.get(res.message, 0) + 1
            if done % 500 == 0 or done == len(work):
                dt = time.monotonic() - t0
                print(f"{done}/{len(work)} programs, {len(failures)} failed, {cycles} RTL cycles, "
                      f"{dt:.0f} s ({done / dt:.1f} programs/s)", flush=True)
    print(f"{args.device} vs fsim: {len(work) - len(failures)}/{len(work)} random programs agree "
          f"({args.count} valid, {args.invalid} invalid; configs {', '.join(configs)}, first seed {args.seed})")
    if verdicts:
        print("invalid programs' verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    for res in failures[:20]:
        print(f"  rerun: python -m vdla.fuzz --device {args.device} --configs {res.config} --seed {res.seed} "
              f"--count {int(not res.invalid)} --invalid {int(res.invalid)} --jobs 1")
    return 1 if failures else 0

