"""Invalid programs (vdla.fuzz.invalid): fsim and the RTL (pysim) give the same verdict.

Every mutation applies and is rejected at the instruction it changed (static rules and
uop indices), or ends in a token underflow / deadlock naming an instruction; and over
many seeds both devices agree on the error class and index (`check_invalid_case`).
Seeds are printed in every failure message: rebuild one with ``invalid_program(PRESETS[name], seed)``.
"""

from __future__ import annotations

import pytest

from vdla.config import PRESETS
from vdla.fuzz.campaign import check_invalid_case, verdict
from vdla.fuzz.invalid import MUTATIONS, invalid_program
from vdla.runtime import Device

DRAM = 1 << 18
#: mutation -> the error every seed must give (None: depends on the program's token flow)
AT_MUTATION = {
    "sram_past_buffer": "ProgramError", "uop_end_past_buffer": "ProgramError", "uop_bgn_after_end": "ProgramError",
    "uop_index_past_buffer": "ExecutionError", "queue_module_lacks": "ProgramError",
    "padding_not_allowed": "ProgramError", "bad_enum": "ProgramError", "dram_past_end": "ProgramError",
    "finish_not_last": "ProgramError",
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_mutation_is_rejected_where_it_applies(mutation):
    c = PRESETS["small"]
    dev = Device("fsim", config=c, dram_size=DRAM)
    for seed in range(12):
        bad = invalid_program(c, seed, mutation)
        cls, index, _ = verdict(bad.case, dev)
        want = AT_MUTATION.get(mutation)
        if want is not None:
            assert (cls, index) == (want, bad.index), f"seed {seed} {mutation}: got {cls} at {index}"
        else:
            assert cls in ("TokenUnderflowError", "DeadlockError", "ok"), f"seed {seed} {mutation}: got {cls}"
            assert (index is None) == (cls == "ok"), f"seed {seed} {mutation}: no instruction index"


# the small config's first 24 seeds in the default run; its 100 and the default config's campaign
# (2 minutes on 2 cores) in nox -s slow
@pytest.mark.parametrize(("name", "seeds"), [
    ("small", 24), pytest.param("small", 100, marks=pytest.mark.slow, id="small-100"),
    pytest.param("default", 100, marks=pytest.mark.slow)])
def test_fsim_and_pysim_agree_on_invalid_programs(name, seeds):
    c = PRESETS[name]
    golden, dut = Device("fsim", config=c, dram_size=DRAM), Device("pysim", config=c, dram_size=DRAM)
    for seed in range(seeds):
        res = check_invalid_case(name, seed, golden, dut)
        assert res.ok, f"{name} seed {seed}: {res.message}"
