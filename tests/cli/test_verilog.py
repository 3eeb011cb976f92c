"""``vdla verilog``: the command writes the three files, lints them, and names a bad top or config."""

from __future__ import annotations

import pytest

from vdla.cli import main

pytest.importorskip("amaranth.back.verilog")


def test_vdla_verilog_writes_and_lints(tmp_path, capsys):
    from vdla.simulator.rtl import verilator as vl

    out = tmp_path / "rtl" / "vdla.v"
    args = ["verilog", "--config", "small", "--top", "core", "-o", str(out)]
    if vl.verilator_bin_dir() is not None:
        args.append("--lint")
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"{out}: module vdla_core, config small" in text
    assert out.read_text().count("module vdla_core(") == 1
    assert "| `start` | input | 1 |" in out.with_suffix(".md").read_text()
    assert "lint_off -rule UNUSEDSIGNAL" in out.with_suffix(".vlt").read_text()
    if "--lint" in args:
        assert "verilator --lint-only -Wall" in text and ": clean" in text


def test_vdla_verilog_bad_arguments(tmp_path, capsys):
    assert main(["verilog", "--top", "soc"]) == 2
    assert "unknown top 'soc'; choose one of axi, core" in capsys.readouterr().err
    assert main(["verilog", "--config", "nosuch", "-o", str(tmp_path / "x.v")]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_version(capsys):
    import vdla

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"vdla {vdla.__version__}"
