"""The golden simulator's cycle model stays calibrated against the RTL.

Cycle counts are deterministic on both sides, so this is an exact check, not a timing
test: the golden model must be within 5% of the Amaranth core (run by Device("pysim")
with the test memory the defaults were calibrated for) on the blocked-matmul example and
random programs. benchmarks/bench_cycle_model.py prints the full table.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from support import REPO

from vdla.config import PRESETS
from vdla.fuzz.randprog import random_program
from vdla.runtime import Device

SMALL = PRESETS["small"]
TOLERANCE = 0.05


def _matmul_cycles(backend: str, m: int = 16, n: int = 16, k: int = 32) -> int:
    path = REPO / "examples" / "blocked_matmul.py"
    spec = importlib.util.spec_from_file_location("blocked_matmul", path)
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    rng = np.random.default_rng(0)
    dev = Device(backend, config=SMALL)
    a = dev.array(mm.pack(rng.integers(-128, 128, (m, k), dtype=np.int8), SMALL.batch, SMALL.block_in))
    w = dev.array(mm.pack(rng.integers(-128, 128, (n, k), dtype=np.int8), SMALL.block_out, SMALL.block_in))
    prog, _ = mm.matmul_program(SMALL, a, w, dev.alloc(m * n), m, n, k, 6, -128, 127)
    return dev.run(prog).cycles


def test_blocked_matmul_cycles_match_the_rtl():
    golden, rtl = _matmul_cycles("fsim"), _matmul_cycles("pysim")
    assert abs(golden - rtl) <= TOLERANCE * rtl, f"golden {golden} vs RTL {rtl} cycles"


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_random_program_cycles_match_the_rtl(seed):
    case = random_program(SMALL, seed)
    golden = case.run(Device("fsim", config=SMALL, dram_size=1 << 18))[1].cycles
    rtl = case.run(Device("pysim", config=SMALL, dram_size=1 << 18))[1].cycles
    assert abs(golden - rtl) <= TOLERANCE * rtl, f"seed {seed}: golden {golden} vs RTL {rtl} cycles"
