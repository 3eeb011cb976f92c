"""The PLL dividers (`vdla.hardware.boards.clocks`) against the parts' formulas and limits,
and differentially against Project IceStorm's ``icepll`` and Project Trellis's ``ecppll``
(the yowasp wheels of the `fpga` extra; skipped without them). Every board's clock must
have an exact setting.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.hardware.boards import BOARDS, board
from vdla.hardware.boards.clocks import clock_for, ecp5_pll_params, ice40_pll_params


@pytest.mark.parametrize("fout, want", [
    (48.0, {"DIVR": 0, "DIVF": 63, "DIVQ": 4, "FILTER_RANGE": 1}),
    (18.0, {"DIVR": 0, "DIVF": 47, "DIVQ": 5, "FILTER_RANGE": 1}),
    (16.875, {"DIVR": 0, "DIVF": 44, "DIVQ": 5, "FILTER_RANGE": 1}),
])
def test_ice40_known_settings(fout, want):
    assert ice40_pll_params(12.0, fout) == want


def _ice40_out(fin: float, p: dict) -> tuple[float, float, float]:
    pfd = fin / (p["DIVR"] + 1)
    vco = pfd * (p["DIVF"] + 1)
    return pfd, vco, vco / 2 ** p["DIVQ"]


@settings(max_examples=200, deadline=None)
@given(divf=st.integers(44, 87), divq=st.integers(1, 6))
def test_ice40_every_reachable_clock_is_found_within_limits(divf, divq):
    """Any output 12 MHz reaches (VCO 12 * (DIVF+1) in 533..1066) comes back with a setting
    inside the part's limits that makes exactly it."""
    fout = 12.0 * (divf + 1) / 2 ** divq
    p = ice40_pll_params(12.0, fout)
    pfd, vco, out = _ice40_out(12.0, p)
    assert 10 <= pfd <= 133 and 533 <= vco <= 1066 and out == pytest.approx(fout)


@pytest.mark.parametrize("fout", [17.0, 20.0, 7.0])
def test_ice40_unreachable_clock_is_refused(fout):
    with pytest.raises(ValueError, match=f"no exact iCE40 PLL setting makes {fout} MHz"):
        ice40_pll_params(12.0, fout)


@pytest.mark.parametrize("fout", [50.0, 60.0, 62.5, 65.0, 75.0, 100.0])
def test_ecp5_settings_within_limits(fout):
    p = ecp5_pll_params(25.0, fout)
    out = 25.0 * p["CLKFB_DIV"] / p["CLKI_DIV"]
    assert out == pytest.approx(fout) and 400 <= out * p["CLKOP_DIV"] <= 800


@pytest.mark.parametrize("name", BOARDS)
def test_every_board_clock_has_a_setting(name):
    """Each preset's clock is the oscillator's or one its PLL makes exactly (else clock_for raises)."""
    b = board(name)
    maker = clock_for(b)
    assert (maker is None) == (b.clk_mhz == {"ecp5": 25.0, "ice40": 12.0}[b.family])


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if not found:
        pytest.skip(f"{name} not installed (the fpga extra)")
    return found


def _fields(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"^\s*([A-Za-z0-9_ ]+?):\s+(\d+)", text, re.M)}


@pytest.mark.parametrize("fout", [16.875, 18.0, 24.0, 30.0, 48.0])
def test_ice40_agrees_with_icepll(fout):
    out = subprocess.run([_tool("yowasp-icepll"), "-i", "12", "-o", str(fout)], capture_output=True, text=True,
                         check=True).stdout
    assert f"{fout:.3f} MHz (achieved)" in out
    f = _fields(out)
    want = {"DIVR": f["DIVR"], "DIVF": f["DIVF"], "DIVQ": f["DIVQ"], "FILTER_RANGE": f["FILTER_RANGE"]}
    assert ice40_pll_params(12.0, fout) == want


@pytest.mark.parametrize("fout", [50.0, 60.0, 62.5, 65.0, 75.0, 100.0])
def test_ecp5_agrees_with_ecppll(fout):
    r = subprocess.run([_tool("yowasp-ecppll"), "-i", "25", "-o", f"{fout:g}"], capture_output=True, text=True,
                       check=True)
    f = _fields(r.stdout + r.stderr)
    want = {"CLKI_DIV": f["Refclk divisor"], "CLKFB_DIV": f["Feedback divisor"], "CLKOP_DIV": f["clkout0 divisor"]}
    assert ecp5_pll_params(25.0, fout) == want
