"""``vdla run|build --threads N`` and ``VDLA_NUM_THREADS``: N <= 0 is an error; more threads than
this process's cores are used as asked, said once on stderr; ``--tuning-log`` from a CPU with
other ISA features is said once, as one line (and the log is still used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from vdla.cli import main
from vdla.compiler import autotvm
from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.autotvm.record import encode, host_record
from vdla.compiler.targets.llvm import threadpool

ROOT = Path(__file__).resolve().parents[2]
MLP = ["mlp", "--target", "llvm", "--reduced", "-q"]


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No thread count said before in this process (the pool says each once per process)."""
    monkeypatch.setattr(threadpool, "_warned", set())
    monkeypatch.setenv(threadpool._WARNED_ENV, "")
    old = threadpool.get_num_threads()
    yield
    assert threadpool.get_num_threads() == old  # the command's count was for the command only


def _warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ": warning: " in ln]


@pytest.mark.parametrize("command", ["run", "build"])
@pytest.mark.parametrize("n", ["0", "-3"])
def test_threads_not_positive_is_an_error(command: str, n: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, *MLP, "--threads", n]) == 2
    assert f"vdla {command}: error: --threads must be a number of threads from 1 to 4096, got {n}" in \
        capsys.readouterr().err


def test_tune_threads_not_positive_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "C5", "--target", "llvm", "--trials", "2", "--threads", "0", "--log",
                 str(tmp_path / "x.log")]) == 2
    assert "--threads must be a number of threads from 1 to 4096, got 0" in capsys.readouterr().err
    assert not (tmp_path / "x.log").exists()


@pytest.mark.parametrize("command", ["run", "build"])
def test_threads_beyond_the_cores_warn_once_and_run(command: str, fresh_warnings: None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cores = threadpool.available_cores()
    n = max(64, cores + 1)
    assert main([command, *MLP, "--threads", str(n)]) == 0  # run: checked against numpy, still right
    warned = _warnings(capsys.readouterr().err)
    assert warned == [f"vdla {command}: warning: --threads {n} asks for {n} threads but this process has {cores} "
                      f"core{'s' * (cores != 1)}: parallel loops use {n} threads anyway (oversubscribed; usually "
                      f"slower than {cores})"]
    assert main([command, *MLP, "--threads", str(n)]) == 0
    assert _warnings(capsys.readouterr().err) == []  # once per process
    assert main([command, *MLP, "--threads", "1"]) == 0
    assert _warnings(capsys.readouterr().err) == []  # within the cores: nothing to say


@pytest.mark.parametrize("extra", [[], ["--threads", "64"]], ids=["env", "env and --threads"])
def test_vdla_num_threads_beyond_the_cores_warns_once(extra: list[str]) -> None:
    """``VDLA_NUM_THREADS=64``: one line when the first kernel runs (with ``--threads 64`` as well: still one)."""
    cores = threadpool.available_cores()
    if cores >= 64:
        pytest.skip(f"{cores} cores here: 64 threads are not beyond them")
    env = {k: v for k, v in os.environ.items() if k != threadpool._WARNED_ENV}
    env.update(VDLA_NUM_THREADS="64", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "vdla", "run", *MLP, *extra], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    warned = _warnings(res.stderr)
    assert len(warned) == 1, res.stderr
    who = "--threads 64" if extra else "VDLA_NUM_THREADS=64"
    assert warned[0].startswith(f"vdla run: warning: {who} asks for 64 threads but this process has {cores} core")


def _record(**host: object) -> str:
    """A real llvm record of matmul.x86, its host edited by ``host``."""
    task = autotvm.task.create("matmul.x86", [16, 128, 48], "llvm")
    d = json.loads(encode(MeasureInput(task, task.config_space.get(1)), MeasureResult([1e-4], 0, 0.1, 1.0, "", "s")))
    d["host"].update(host)
    return json.dumps(d) + "\n"


@pytest.mark.parametrize("command", ["run", "build"])
def test_tuning_log_from_another_cpu_is_one_warning_line(command: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    feats = sorted(set(host_record()["features"]) ^ {"+avx512f"})
    log = tmp_path / "znver5.log"
    log.write_text(_record(cpu="znver5", features=feats) * 2)
    assert main([command, *MLP, "--tuning-log", str(log)]) == 0
    warned = _warnings(capsys.readouterr().err)
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"vdla {command}: warning: tuning log '{log}' was measured on znver5 (")
    assert f"but this CPU is {host_record()['cpu']} (" in warned[0] and "avx512f" in warned[0]
    same = tmp_path / "here.log"
    same.write_text(_record() + _record(cpu="another-name"))  # this CPU's features: nothing to say
    assert main([command, *MLP, "--tuning-log", str(same)]) == 0
    assert _warnings(capsys.readouterr().err) == []
