"""A whole model tuned on VDLA: ``vdla tune resnet18 --reduced`` tunes every distinct VDLA
workload (each measured with the tail inputs its kernel loads), and the model built with its
log (committed: ``data/``) runs fewer golden-simulator cycles in all and none more on any VDLA
layer, every layer still bit-exact against the int8 reference; the templates' fallback is the graph compiler's
hand pick (the same cycles as the model's layer); a tuned point that does not build in a
model's kernel falls back to the hand pick, not to the CPU."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from vdla import preset
from vdla.compiler import autotvm
from vdla.compiler.autotvm.measure import MeasureInput, measure_batch
from vdla.compiler.autotvm.tuning import model_tasks, tuning_context
from vdla.compiler.graph.job import run_job


def _run(log=None):  # type: ignore[no-untyped-def]
    with tuning_context(str(log) if log else None):
        return run_job("resnet18", "fsim", preset("default"), reduced=True, check_fp32=False)


@pytest.fixture(scope="module")
def hand_run():  # type: ignore[no-untyped-def]
    return _run()


#: the best record of each distinct VDLA workload of the reduced ResNet-18, written by
#: ``vdla tune resnet18 --reduced --target vdla --trials 8 --tuner xgb --log r18.log`` then
#: ``autotvm.record.pick_best("r18.log", LOG)`` (cycles of the golden simulator: deterministic)
LOG = Path(__file__).parent / "data" / "resnet18_reduced_vdla.log"


def test_resnet18_tuned_total_cycles_drop(hand_run) -> None:  # type: ignore[no-untyped-def]
    tasks = model_tasks("resnet18", "vdla", reduced=True)
    # the relu2 convs add the residual: their own workloads (with the bias every conv here has)
    assert {(t.args[-3], t.args[-2]) for t in tasks} == {(True, False), (True, True)}
    with autotvm.apply_history_best(LOG) as ctx:  # the log still names every workload (else: regenerate it)
        assert all(ctx.query("vdla", t.workload) is not None for t in tasks) and len(ctx) == len(tasks)
    tuned = _run(LOG)
    assert hand_run.ok and tuned.ok  # every layer against the int8 reference
    hand = {r.node: r.cycles for r in hand_run.vdla_layers}
    got = {r.node: r.cycles for r in tuned.vdla_layers}
    assert got.keys() == hand.keys() and len(hand) >= 14
    slower = {n: (hand[n], got[n]) for n in hand if got[n] > hand[n]}
    assert not slower, f"layers slower tuned (hand, tuned): {slower}"
    assert tuned.total_cycles < hand_run.total_cycles
    print(f"resnet18 reduced: {hand_run.total_cycles} -> {tuned.total_cycles} cycles")


def test_fallback_cycles_are_the_model_layers(dask_client, hand_run) -> None:  # type: ignore[no-untyped-def]
    """The hand pick a template measures is what the model runs: the same cycles as its layer
    (layers whose ALU tail has the template's length: bias, shift, clip, and the residual)."""
    tasks = model_tasks("resnet18", "vdla", reduced=True)
    # one batch of every task's hand pick (a batch may mix tasks)
    res = measure_batch([MeasureInput(t, t.config_space.get(t.fallback().index)) for t in tasks],
                        autotvm.measure_option(client=dask_client))
    assert all(r.ok for r in res), [r.error_msg for r in res]
    measured = {json.dumps(t.args): r.costs[0] for t, r in zip(tasks, res)}
    layer_cycles = sorted({r.cycles for r in hand_run.vdla_layers})
    matched = [c for c in measured.values() if c in layer_cycles]
    assert len(matched) >= len(tasks) - 2, (sorted(measured.values()), layer_cycles)


def test_a_tuned_point_that_does_not_build_falls_back_to_the_hand_pick(hand_run) -> None:
    """A record the model's kernel cannot build (a point the template rejects: a log edited by
    hand, or from other tiling rules): the layers of that workload stay on VDLA with the hand
    pick, with the hand pick's cycles, and a warning names them."""
    from vdla.compiler.autotvm.features import instantiable

    task = model_tasks("resnet18", "vdla", reduced=True)[0]
    sp = task.config_space
    bad = next(sp.get(i) for i in range(len(sp)) if not instantiable(task, sp.get(i)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with autotvm.ApplyConfig(bad, task.workload):
            got = run_job("resnet18", "fsim", preset("default"), reduced=True, check_fp32=False)
    fell = [str(w.message) for w in caught if "the tuned schedule does not build" in str(w.message)]
    assert fell and all("built the hand-picked one" in m for m in fell)
    assert got.ok
    assert [(r.node, r.cycles) for r in got.vdla_layers] == [(r.node, r.cycles) for r in hand_run.vdla_layers]
