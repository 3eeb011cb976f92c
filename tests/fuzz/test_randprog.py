"""Differential tests over random valid programs (vdla.fuzz.randprog).

A correct program's results must not depend on timing: the golden simulator run with
very different cycle-model parameters and queue depths has to leave identical DRAM.
Programs must also survive a trip through the program file format, and a program with
corrupted dependency flags must end in a clear SimulatorError, never hang.
Every failure message carries the seed so the case can be rebuilt with
`random_program(PRESETS[name], seed)`.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla import isa
from vdla.config import PRESETS, Timing
from vdla.fuzz.randprog import random_program
from vdla.runtime import Device, Program
from vdla.simulator import SimulatorError

SEEDS = range(40)
FAST = Timing(dram_latency=0, dram_write_latency=0, max_burst_beats=256, burst_gap=0, insn_overhead=1,
              dma_tail=0, launch_latency=0, gemm_latency=0, alu_ii_tensor=1, alu_ii_imm=1, alu_latency=0)
SLOW = Timing(dram_latency=300, dram_write_latency=40, max_burst_beats=2, burst_gap=9, insn_overhead=7,
              dma_tail=5, launch_latency=50, gemm_latency=20, alu_ii_tensor=5, alu_ii_imm=3, alu_latency=11)


def _run(case, config):
    return case.run(Device("fsim", config=config, dram_size=1 << 18))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_results_do_not_depend_on_timing_or_queue_depths(name):
    base = PRESETS[name]
    variants = [
        base.replace(timing=FAST),
        base.replace(timing=SLOW, cmd_queue_depth=1, dep_queue_depth=1),
        base.replace(bus_width=512, cmd_queue_depth=3, dep_queue_depth=2),
    ]
    for seed in SEEDS:
        case = random_program(base, seed)
        ref, rep = _run(case, base)
        for v in variants:
            got, rep_v = _run(case, v)
            assert np.array_equal(got, ref), f"seed {seed} ({name}): results change with timing {v.timing}"
            assert rep_v.counters == rep.counters, f"seed {seed} ({name}): counters change with timing"
        assert rep.cycles > 0


def test_timing_changes_cycles_in_the_expected_direction():
    base = PRESETS["default"]
    for seed in range(10):
        case = random_program(base, seed)
        fast = _run(case, base.replace(timing=FAST))[1].cycles
        slow = _run(case, base.replace(timing=SLOW))[1].cycles
        default = _run(case, base)[1].cycles
        assert fast < default < slow, f"seed {seed}: cycles fast={fast} default={default} slow={slow}"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_program_file_round_trip_runs_identically(name, tmp_path):
    c = PRESETS[name]
    for seed in range(10):
        case = random_program(c, seed)
        path = tmp_path / f"{seed}.vdla"
        case.program.save(path)
        loaded = Program.load(path)
        assert np.array_equal(loaded.insns, case.program.insns) and np.array_equal(loaded.uops, case.program.uops)
        a, ra = case.run(Device("fsim", config=c, dram_size=1 << 18))
        case.program = loaded
        b, rb = case.run(Device("fsim", config=c, dram_size=1 << 18))
        assert np.array_equal(a, b) and ra.cycles == rb.cycles, f"seed {seed}"


def test_corrupted_flags_end_in_a_clear_error_never_a_hang():
    """Flip dependency flags at random: every run either completes or raises a SimulatorError
    that names an instruction; none may loop forever (each is bounded by its instruction count)."""
    c = PRESETS["small"]
    rng = np.random.default_rng(1234)
    outcomes = {"ok": 0, "error": 0}
    for seed in range(60):
        case = random_program(c, seed)
        insns = case.program.instructions()
        for _ in range(1 + seed % 3):
            k = int(rng.integers(len(insns) - 1))
            flag = ("pop_prev", "pop_next", "push_prev", "push_next")[int(rng.integers(4))]
            insns[k] = insns[k].replace(**{flag: 1 - getattr(insns[k], flag)})
        prog = Program(c, isa.encode(insns, c), case.program.uops, case.program.uop_relocs, (), f"corrupt-{seed}")
        case.program = prog
        try:
            case.run(Device("fsim", config=c, dram_size=1 << 18))
            outcomes["ok"] += 1
        except SimulatorError as e:
            msg = str(e)
            assert "instruction" in msg or "token" in msg, f"seed {seed}: unclear error {msg!r}"
            outcomes["error"] += 1
    assert outcomes["error"] > 10, outcomes  # the corruption really does break programs
