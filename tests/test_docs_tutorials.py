"""Every tutorial in docs/tutorials runs and reaches its last check (each prints "<name>: OK").

Each runs at its small default size. The cocotb tutorial stops before the Verilator build in
the default run (``VDLA_TUTORIAL_QUICK``: the build alone takes 30-70 s); its full run, the
RTL with a trace, is the slow test below. The bitstream tutorial elaborates the board and
reads the committed report; it never runs the place-and-route tools here."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
TUTORIALS = sorted(DOCS.glob("*.py"))
#: tutorials that honour VDLA_TUTORIAL_QUICK (stop before a long build) in the default run
QUICK = {"cocotb_testbench"}


def test_tutorials_exist():
    names = {p.stem for p in TUTORIALS}
    assert {"tensor_expr_get_started", "schedule_primitives", "tensorize", "vdla_matrix_multiply",
            "vdla_conv_vthread", "tune_vdla_matmul", "cocotb_testbench", "build_bitstream"} <= names


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, capsys, monkeypatch):
    for var in ("VDLA_TUTORIAL_FULL", "VDLA_TUTORIAL_WAVES", "VDLA_BOARD", "VDLA_BOARD_PORT"):
        monkeypatch.delenv(var, raising=False)  # the small default run, whatever the caller's shell has
    if path.stem in QUICK:
        monkeypatch.setenv("VDLA_TUTORIAL_QUICK", "1")
    runpy.run_path(str(path), run_name="__main__")
    assert f"{path.stem}: OK" in capsys.readouterr().out


@pytest.mark.slow
def test_cocotb_tutorial_on_the_rtl_with_waves(capsys, monkeypatch, tmp_path):
    """The cocotb tutorial in full: its test on the Verilated core, with a trace of the run."""
    pytest.importorskip("cocotb")
    pytest.importorskip("cocotbext.axi")
    monkeypatch.delenv("VDLA_TUTORIAL_QUICK", raising=False)
    vcd = tmp_path / "dense.vcd"
    monkeypatch.setenv("VDLA_TUTORIAL_WAVES", str(vcd))
    runpy.run_path(str(DOCS / "cocotb_testbench.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "cocotb_testbench: 1 of 1 cocotb tests passed" in out and "cocotb_testbench: OK" in out
    assert "$enddefinitions" in vcd.read_text()[:1_000_000]  # a real VCD header, with the core's signals
