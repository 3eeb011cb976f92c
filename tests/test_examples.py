"""The examples as modules and as the demo command (examples/blocked_matmul.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

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
