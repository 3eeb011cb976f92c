"""vdla.progress: bars on a terminal, nothing when stderr is not one, with -q, or VDLA_PROGRESS=0."""

from __future__ import annotations

import time

import pytest

from vdla import progress


@pytest.fixture
def shown(monkeypatch):
    monkeypatch.setenv("VDLA_PROGRESS", "1")  # as on a terminal


def test_silent_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("VDLA_PROGRESS", raising=False)
    assert not progress.enabled()  # capsys' stderr is no terminal
    for _ in progress.bar(range(3), desc="work"):
        pass
    with progress.phase("tool"):
        pass
    assert progress.status() is None
    assert capsys.readouterr().err == ""


def test_terminal_gets_bars_phases_and_status(shown, capsys, monkeypatch):
    assert progress.enabled()
    assert list(progress.bar(range(3), desc="compiling", unit="kernel")) == [0, 1, 2]
    monkeypatch.setattr(progress, "TICK", 0.05)
    with progress.phase("nextpnr: place and route"):
        time.sleep(0.2)
    status = progress.status()
    status("running layer 2/3")
    progress.close(status)
    err = capsys.readouterr().err
    assert "compiling:   0%" in err and "0/3" in err and "kernel/s" in err
    assert err.count("nextpnr: place and route: 00:00") >= 2  # redrawn while the step runs
    assert "running layer 2/3" in err


@pytest.mark.parametrize("how", ["quiet", "env"])
def test_quiet_and_env_silence_a_terminal(how, shown, capsys, monkeypatch):
    if how == "env":
        monkeypatch.setenv("VDLA_PROGRESS", "0")
        ctx = progress.quiet(False)
    else:
        ctx = progress.quiet()
    with ctx:
        assert not progress.enabled()
        for _ in progress.bar(range(3), desc="work"):
            pass
    assert capsys.readouterr().err == ""
    assert progress.enabled() == (how == "quiet")  # quiet() restores the previous setting


def test_vdla_run_shows_compilation_and_q_silences_it(shown, capsys):
    """The CLI on a small model: one status line per distinct kernel; with -q no progress, only
    the one warning line a plan with host steps always gets (the int8 model's quantise/pack and
    unpack/dequantise run on the host's numpy kernels)."""
    from vdla.cli import main

    assert main(["run", "mlp", "--reduced", "--no-fp32-check"]) == 0
    err = capsys.readouterr().err
    assert "compiling kernel 1/" in err and "running mlp" in err
    assert main(["run", "mlp", "--reduced", "--no-fp32-check", "-q"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vdla run: warning: ") and "host's numpy kernels" in lines[0]
    progress.set_quiet(False)


def test_cli_q_holds_for_one_call_only(shown, tmp_path, capsys):
    """`main([... "-q"])` in-process must not leave later calls (or tests) silenced."""
    from vdla.cli import main

    assert main(["run", str(tmp_path / "missing.onnx"), "-q"]) == 2
    assert "missing.onnx" in capsys.readouterr().err
    assert progress.enabled()
