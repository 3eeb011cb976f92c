"""Every program of the golden-simulator tests runs on the RTL with the same final memory.

Runs the golden-simulator tests (tests/simulator/, RTL folder aside) in a subprocess with VDLA_RTL_REPLAY=verilator (see
tests/conftest.py): each program the golden model accepts is replayed on
Device("verilator") from the same initial DRAM and must leave the same bytes. The
default and small configs run here (their Verilator builds are shared with
test_verilator.py), the programs of one test in EVERY; `nox -s slow` replays all of them, adds
batch2 and the same replay on Device("pysim").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from support import REPO

from vdla.runtime.device import BUILTIN_BACKENDS

ROOT = REPO
pytestmark = pytest.mark.skipif("verilator" not in BUILTIN_BACKENDS, reason="Device('verilator') is not registered")


#: the default run replays the programs of one simulator test in EVERY (all of them took 13 of
#: the default run's 27 minutes on 2 cores; one in 8 left it at 15.6, one in 12 at 16.2 as the suite
#: grew: this one test was a third of an xdist worker's time); `nox -s slow` replays every test's
EVERY = 24


def _replay(selection: str, backend: str = "verilator", every: int = 1) -> subprocess.CompletedProcess:
    env = {**os.environ, "VDLA_RTL_REPLAY": backend, "VDLA_RTL_REPLAY_EVERY": str(every)}
    cmd = [sys.executable, "-m", "pytest", "tests/simulator", "--ignore=tests/simulator/rtl", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
           "-m", "not slow", "-k", selection]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


def _check(r: subprocess.CompletedProcess, least: int) -> None:
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout
    replayed = re.search(r"RTL replay: (\d+) programs", r.stdout)
    assert replayed and int(replayed.group(1)) > least, r.stdout[-2000:]  # the replay really ran


def test_simulator_programs_replay_on_verilator_default_and_small():
    _check(_replay("not batch2", every=EVERY), 100 // EVERY)


@pytest.mark.slow
def test_simulator_programs_replay_on_verilator_default_and_small_all():
    _check(_replay("not batch2"), 100)


@pytest.mark.slow
def test_simulator_programs_replay_on_verilator_batch2():
    r = _replay("batch2")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


@pytest.mark.slow
def test_simulator_programs_replay_on_pysim():
    r = _replay("not batch2", backend="pysim")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
