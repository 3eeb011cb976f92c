"""The four tuners on a tiny VDLA space, measured on the shared 2-process LocalCluster; logs,
resuming, apply_history_best, and the bad inputs a log can hold."""

from __future__ import annotations

import json
import warnings

import pytest
from support.autotvm import VDLA_DENSE

from vdla.compiler import autotvm
from vdla.compiler.autotvm import tuner as T
from vdla.compiler.autotvm.record import load_from_file

SEED = 7


def _opt(client):  # type: ignore[no-untyped-def]
    return autotvm.measure_option(autotvm.LocalBuilder(timeout=30), autotvm.LocalRunner(timeout=30), client=client,
                                  n_parallel=4)


@pytest.mark.parametrize("cls", [T.RandomTuner, T.GridSearchTuner, T.GATuner, T.XGBTuner])
def test_tuner_measures_distinct_points_and_logs_them(cls, dask_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    print("seed", SEED)
    task = autotvm.task.create(*VDLA_DENSE, "vdla")
    kw = {"plan_size": 4} if cls is T.XGBTuner else {"pop_size": 4} if cls is T.GATuner else {}
    tuner = cls(task, seed=SEED, **kw)
    log = tmp_path / "t.log"
    seen = []
    tuner.tune(12, _opt(dask_client), callbacks=[autotvm.callback.log_to_file(log),
                                                 lambda t, i, r: seen.extend(x.config.index for x in i)])
    assert len(seen) == 12 and len(set(seen)) == 12
    if cls is T.GridSearchTuner:
        assert seen == list(range(12))
    recs = list(load_from_file(log))
    assert [i.config.index for i, _ in recs] == seen
    best = max(recs, key=lambda ir: autotvm.tuner.tuner.score(task, ir[1]))
    assert tuner.best_config.index == best[0].config.index and tuner.best_flops > 0
    if cls is T.XGBTuner:
        assert tuner.model is not None and tuner.fits >= 2  # refit after each plan of 4
        # the model ranks what it was trained on: the best measured point beats the worst valid one
        valid = [(i, s) for i, s in zip(tuner.xs, tuner.ys) if s > 0]
        lo, hi = min(valid, key=lambda v: v[1])[0], max(valid, key=lambda v: v[1])[0]
        p = tuner.predict([lo, hi])
        assert p[1] > p[0]


def test_resume_and_transfer(dask_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(*VDLA_DENSE, "vdla")
    log = tmp_path / "t.log"
    first = T.RandomTuner(task, seed=SEED)
    first.tune(6, _opt(dask_client), callbacks=[autotvm.callback.log_to_file(log)])
    again = T.XGBTuner(task, plan_size=4, seed=SEED)
    again.load_history(list(load_from_file(log)))
    assert again.visited >= first.visited and again.trials == 6
    again.tune(4, _opt(dask_client), callbacks=[autotvm.callback.log_to_file(log)])
    idx = [i.config.index for i, _ in load_from_file(log)]
    assert len(idx) == 10 and len(set(idx)) == 10  # nothing measured twice
    # another workload of the same template: the first task's records train the base model
    other = autotvm.task.create("dense_packed.vdla", [[1, 4, 1, 16], [2, 4, 16, 16], True, False, "default"], "vdla")
    xfer = T.XGBTuner(other, plan_size=4, seed=SEED)
    xfer.load_history(list(load_from_file(log)))
    assert xfer.base is not None and len(xfer.plan) == 4
    with autotvm.apply_history_best(log) as ctx:
        assert ctx.query("vdla", task.workload) == first.best_config or \
            ctx.query("vdla", task.workload) == again.best_config


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_bad_trial_counts(n) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(*VDLA_DENSE, "vdla")
    with pytest.raises(ValueError, match="n_trial must be a positive number"):
        T.RandomTuner(task).tune(n)


def _write_log(path, task, lines):  # type: ignore[no-untyped-def]
    cfg = task.config_space.get(3)
    good = {"format": 1, "vdla": "0.1.0", "task": task.name, "args": task.args, "target": task.target,
            "workload": task.workload, "config": cfg.to_json_dict(),
            "result": {"costs": [100.0], "unit": "cycles", "error_no": 0, "error": "", "all_cost": 1.0,
                       "timestamp": 0.0}}
    out = []
    for kind in lines:
        d = json.loads(json.dumps(good))
        if kind == "corrupt":
            out.append('{"task": "dense_packed.vdla", "args": [')
            continue
        if kind == "llvm":
            d["target"] = "llvm"
        if kind == "old":
            d["vdla"] = "0.0.9"
        if kind == "unknown":
            d["task"] = "no_such_template.vdla"
        if kind == "knob":
            d["config"]["knobs"]["nope"] = 1
        out.append(json.dumps(d))
    path.write_text("\n".join(out) + "\n")


def test_bad_logs_are_named_and_the_rest_used(tmp_path) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(*VDLA_DENSE, "vdla")
    log = tmp_path / "mixed.log"
    _write_log(log, task, ["good", "corrupt", "llvm", "old", "unknown", "knob", "good"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        recs = list(load_from_file(log, target="vdla"))
    text = "\n".join(str(x.message) for x in w)
    assert len(recs) == 2 and all(i.config.index == 3 for i, _ in recs)
    assert f"{log}:2: skipped a corrupted record" in text
    assert "target 'llvm' (not 'vdla')" in text
    assert "vdla '0.0.9' (this is 0.1.0)" in text
    assert "unknown template 'no_such_template.vdla'" in text
    assert "['nope'] are not in this space" in text
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(load_from_file(tmp_path / "missing.log"))


def test_xgb_never_proposes_a_point_the_template_rejects() -> None:
    """C11 on vdla: about 70% of its 480 points raise at instantiation (no tile fits the buffers);
    XGBTuner skips them without a measurement, RandomTuner (AutoTVM's) does not."""
    from vdla.compiler.autotvm.features import instantiable
    from vdla.compiler.autotvm.tuning import layer_task

    task = layer_task("C11", "vdla")
    print("seed", SEED)
    xgb_t = T.XGBTuner(task, seed=SEED)
    picked = xgb_t.next_batch(16)
    assert len(picked) == 16 and xgb_t.skipped > 0
    for cfg in picked:
        task.instantiate(cfg)  # raises if the template rejects it
    assert all(instantiable(task, c) for c in picked)
    rejected = [c for c in T.RandomTuner(task, seed=SEED).next_batch(16) if not instantiable(task, c)]
    assert rejected
    with pytest.raises(Exception):  # noqa: B017 - whatever the template raises
        task.instantiate(rejected[0])
