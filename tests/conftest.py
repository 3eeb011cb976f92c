"""Opt-in RTL replay of the golden-simulator tests.

With VDLA_RTL_REPLAY=verilator (or pysim), every program the tests run through
`vdla.simulator.run` and that the golden model accepts is run again, from the same
initial DRAM, on that RTL device, and its final DRAM must equal the golden model's
byte for byte. Programs the golden model rejects (bad input, deadlocks, underflow) are
not replayed: the RTL's own error handling has tests of its own.
tests/simulator/rtl/test_replay.py runs the simulator tests this way, and checks the
closing line "RTL replay: N programs" that this plugin prints. VDLA_RTL_REPLAY_EVERY=N replays
the programs of one test in N (the default test run's sample; `nox -s slow` replays them all).
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

REPLAY = os.environ.get("VDLA_RTL_REPLAY", "")
#: replay the programs of one test in EVERY (chosen by a hash of the test's id, so the same tests
#: every run; a test's programs are all replayed or none, as later ones may use on-chip state
#: earlier ones left); 1: every test
EVERY = max(1, int(os.environ.get("VDLA_RTL_REPLAY_EVERY", "1")))
SIMULATOR_TESTS = Path(__file__).resolve().parent / "simulator"
_replayed_total = [0]


@pytest.fixture(autouse=True)
def _rtl_replay(monkeypatch, request):
    if not REPLAY or zlib.crc32(request.node.nodeid.encode()) % EVERY:
        yield
        return
    from vdla.runtime import Device
    from vdla.simulator import golden

    devices: dict = {}
    replayed = [0]

    def run(config, dram, insn_addr, insn_count, *, machine=None, strict=True):
        before = dram.copy()
        report = golden.run(config, dram, insn_addr, insn_count, machine=machine, strict=strict)
        key = (config, dram.size)  # one device per config: on-chip state carries over, as in the golden runs
        if key not in devices:
            devices[key] = Device(REPLAY, config=config, dram_size=dram.size)
        dev = devices[key]
        dev.dram[:] = before
        dev.backend.execute(dev, insn_addr, insn_count, False)
        replayed[0] += 1
        if not np.array_equal(dev.dram, dram):
            addr = int(np.flatnonzero(dev.dram != dram)[0])
            pytest.fail(f"{request.node.nodeid}: {REPLAY} differs from the golden model at DRAM {addr:#x} "
                        f"(RTL {dev.dram[addr]:#04x}, golden {dram[addr]:#04x}), program {replayed[0]}")
        return report

    # the golden-simulator tests call `run` directly or through the helpers of support.sim
    # and support.simref (the reference model's program builder)
    here = Path(str(request.module.__file__)).resolve()
    targets = [sys.modules.get("support.sim"), sys.modules.get("support.simref")]
    if SIMULATOR_TESTS in here.parents:
        targets.append(request.module)
    for mod in targets:
        if mod is not None and hasattr(mod, "run"):
            monkeypatch.setattr(mod, "run", run)
    yield
    _replayed_total[0] += replayed[0]


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if REPLAY:
        terminalreporter.write_line(f"RTL replay: {_replayed_total[0]} programs on {REPLAY}")
