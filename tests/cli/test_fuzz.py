"""``vdla fuzz``: the differential fuzz campaign as a subcommand, with ``python -m vdla.fuzz``'s options and output."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vdla.cli import main

ARGS = ["--device", "pysim", "--configs", "small", "--count", "2", "--invalid", "2", "--jobs", "1", "-q"]


def test_vdla_fuzz_runs_programs_on_pysim_against_fsim(capsys):
    assert main(["fuzz", *ARGS]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "pysim vs fsim: 4/4 random programs agree (2 valid, 2 invalid; configs small, first seed 0)" in out
    assert out[0].startswith("4/4 programs, 0 failed, ") and " RTL cycles, " in out[0]
    assert any(line.startswith("invalid programs' verdicts: ") for line in out), out


def test_same_result_as_python_dash_m_vdla_fuzz(capsys):
    """``python -m vdla.fuzz`` is the same command: the same options, the same verdict, the same errors."""
    proc = subprocess.run([sys.executable, "-m", "vdla.fuzz", *ARGS], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    direct = proc.stdout.splitlines()
    assert main(["fuzz", *ARGS]) == 0
    sub = capsys.readouterr().out.splitlines()
    assert direct[1:] == sub[1:] and len(sub) >= 2  # all but the first line (its seconds and programs/s)
    bad = subprocess.run([sys.executable, "-m", "vdla.fuzz", "--invalid", "-3"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and bad.stderr == "vdla fuzz: error: --invalid must be >= 0, got -3\n"


def test_bad_count_is_one_line_and_exit_status_2(capsys):
    assert main(["fuzz", "--count", "-1"]) == 2
    assert capsys.readouterr().err == "vdla fuzz: error: --count must be >= 0, got -1\n"


def test_help_lists_the_campaigns_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["fuzz", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vdla fuzz ")
    for option in ("--device", "--configs", "--count", "--seed", "--invalid", "--validate-all", "--jobs", "--quiet"):
        assert option in out, option
