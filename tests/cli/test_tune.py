"""``vdla tune``: one operator and a model's workloads end to end, resuming a log, the summary
table, bad input; ``vdla run MODEL --tuning-log`` builds with the tuned schedules (different
code, still the right answer)."""

from __future__ import annotations

import json

import pytest
from support.autotvm import VDLA_DENSE

from vdla.cli import main
from vdla.compiler import fingerprint as fp
from vdla.compiler.autotvm.tuning import model_tasks


def _lines(path) -> list[dict]:  # type: ignore[no-untyped-def]
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_tune_one_operator_and_resume(dask_client, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "op.log"
    argv = ["tune", VDLA_DENSE[0], "--args", json.dumps(VDLA_DENSE[1]), "--target", "vdla", "--tuner", "random",
            "--log", str(log), "-q"]
    assert main([*argv, "--trials", "4"]) == 0
    out = capsys.readouterr().out
    assert "dense_packed.vdla" in out and "FLOP/cycle" in out and "speedup" in out
    first = _lines(log)
    assert len(first) == 4 and {d["target"] for d in first} == {"vdla"}
    assert main([*argv, "--trials", "7"]) == 0  # resumes: 3 more, none repeated
    again = _lines(log)
    assert len(again) == 7 and len({d["config"]["index"] for d in again}) == 7


@pytest.mark.parametrize("argv, message", [
    (["tune", "C5", "--trials", "0", "--log", "x.log"], "--trials must be a positive number of trials, got 0"),
    (["tune", "no_such.vdla", "--args", "[]", "--trials", "2", "--log", "x.log"], "unknown template 'no_such.vdla'"),
    (["tune", "dense_packed.vdla", "--args", "[1,", "--trials", "2", "--log", "x.log"], "--args is not JSON"),
    (["tune", "C1", "--trials", "2", "--log", "x.log"], "not whole blocks of 16"),
    (["build", "mlp", "--reduced", "--tuning-log", "nope.log", "-q"], "tuning log 'nope.log' does not exist"),
    (["tune", "C5", "--trials", "-3", "--log", "x.log"], "--trials must be a positive number of trials, got -3"),
    (["tune", *VDLA_DENSE[:1], "--args", json.dumps(VDLA_DENSE[1]), "--device", "nosuch", "--trials", "2", "--log",
      "x.log"], "--device nosuch: DeviceError: unknown device 'nosuch'"),
])
def test_bad_input(argv, message, capsys, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.log").exists()  # nothing measured, nothing logged


def test_scheduler_with_nobody_listening(capsys, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--scheduler`` at an address nobody listens on: a clear error within the client's timeout."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.chdir(tmp_path)
    from vdla import cluster

    monkeypatch.setattr(cluster.get_client, "__defaults__", (None, None, 2.0))  # a 2 s wait, not 10
    t0 = time.monotonic()
    assert main(["tune", VDLA_DENSE[0], "--args", json.dumps(VDLA_DENSE[1]), "--trials", "2", "--log", "x.log",
                 "--scheduler", addr, "-q"]) == 2
    assert f"no Dask scheduler answers at '{addr}' within" in capsys.readouterr().err
    assert time.monotonic() - t0 < 60 and not (tmp_path / "x.log").exists()


def test_model_workloads_tuned_and_used(dask_client, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    tasks = model_tasks("mlp", "vdla", reduced=True)
    assert [t.name for t in tasks] == ["dense_packed.vdla"] * len(tasks) and len(tasks) >= 2
    log = tmp_path / "mlp.log"
    assert main(["tune", "mlp", "--reduced", "--target", "vdla", "--trials", "3", "--tuner", "grid", "--log", str(log),
                 "-q"]) == 0
    recs = _lines(log)
    assert len(recs) == 3 * len(tasks)
    assert len({json.dumps(d["workload"]) for d in recs}) == len(tasks)
    falls = {t.fallback().index for t in tasks}
    assert all(d["result"]["error_no"] == 0 for d in recs if d["config"]["index"] in falls)
    # without the hand picks' records, the best record of each workload is a grid point: other code
    others = tmp_path / "grid.log"
    others.write_text("".join(json.dumps(d) + "\n" for d in recs if d["config"]["index"] not in falls))
    capsys.readouterr()
    digests = {}
    for way, extra in (("hand", []), ("tuned", ["--tuning-log", str(others)])):
        monkeypatch.setenv(fp.ENV, str(tmp_path / way))
        assert main(["run", "mlp", "--reduced", "-q", *extra]) == 0  # checked against the reference: still right
        digests[way] = fp.load(tmp_path / way)
    assert digests["hand"] != digests["tuned"]


def test_xgb_learns_across_a_models_workloads(dask_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``vdla tune MODEL`` with XGB: from the second workload on, the records of the template's
    workloads tuned before (this run's and the log's) train the tuner's base model."""
    from vdla.compiler import autotvm
    from vdla.compiler.autotvm.tuning import tune_tasks

    tasks = model_tasks("mlp", "vdla", reduced=True)
    opt = autotvm.measure_option(autotvm.LocalBuilder(timeout=30), autotvm.LocalRunner(timeout=30), client=dask_client)
    rows = tune_tasks(tasks, opt, tmp_path / "mlp.log", 5, "xgb")
    assert rows[0][1].base is None  # nothing before the first
    assert all(tuner.base is not None for _, tuner, _ in rows[1:])
    assert all(tuner.trials == 5 or not tuner.has_next() for _, tuner, _ in rows)  # (a space of 4 points)
