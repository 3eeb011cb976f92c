"""A template called outside tuning is a schedule, as AutoTVM's are: the best record of its
workload under ``apply_history_best`` (or ApplyConfig), the first choice of each knob without
one; the operator library's templates fall back to their hand-picked schedule."""

from __future__ import annotations

import numpy as np
import pytest
from support.autotvm import VDLA_DENSE

from vdla.compiler import autotvm, build, te
from vdla.compiler.autotvm import ApplyConfig
from vdla.compiler.autotvm.features import lower_loops
from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.targets.target import Target


@autotvm.template("test_registry_scale")  # no target suffix: serves llvm and vdla
def scale(n: int):  # type: ignore[no-untyped-def]
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 3.0, name="b")
    s = te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", n, num_outputs=2)
    cfg.define_knob("unroll", [False, True])
    _, inner = cfg["tile"].apply(s, b, b.op.axis[0])
    if cfg["unroll"].val:
        s[b].unroll(inner)
    return s, [a, b]


def _loops(sched):  # type: ignore[no-untyped-def]
    return str(lower_loops(*sched))


def _record(task, index, cost):  # type: ignore[no-untyped-def]
    return MeasureInput(task, task.config_space.get(index)), MeasureResult([cost], 0, 0.1, 0.0)


def test_outside_tuning_is_first_choice_and_builds() -> None:
    task = autotvm.task.create("test_registry_scale", [16], "llvm")
    s, args = scale(16)
    assert _loops((s, args)) == _loops(task.instantiate(task.config_space.get(0)))
    f = build(s, args, target="llvm")
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    f(a, b)
    np.testing.assert_allclose(b, 3 * a)


@pytest.mark.parametrize("target", ["llvm", "vdla", None])
def test_apply_history_best_picks_lowest_cost_record(target) -> None:  # type: ignore[no-untyped-def]
    kind = target or "llvm"
    task = autotvm.task.create("test_registry_scale", [16], kind)
    best = len(task.config_space) - 1
    records = [_record(task, 0, 5.0), _record(task, best, 1.0), _record(task, 2, 3.0)]
    with autotvm.apply_history_best(records):
        if target is None:  # no Target set: the records of either kind are consulted
            got = scale(16)
        else:
            with Target(target):
                got = scale(16)
    assert _loops(got) == _loops(task.instantiate(task.config_space.get(best)))
    assert _loops(got) != _loops(scale(16))  # outside the context: the fallback again


def test_records_of_another_workload_or_target_are_not_used() -> None:
    task = autotvm.task.create("test_registry_scale", [16], "vdla")
    last = len(task.config_space) - 1
    with autotvm.apply_history_best([_record(task, last, 1.0)]), Target("llvm"):
        assert _loops(scale(16)) == _loops(task.instantiate(task.config_space.get(0)))
    other = autotvm.task.create("test_registry_scale", [32], "llvm")
    with ApplyConfig(other.config_space.get(len(other.config_space) - 1)):
        assert _loops(scale(16)) == _loops(task.instantiate(task.config_space.get(0)))


def test_library_template_outside_tuning_is_the_hand_pick() -> None:
    name, args = VDLA_DENSE
    task = autotvm.task.create(name, args, "vdla")
    func = autotvm.task.get_template(name).func
    assert _loops(func(*args)) == _loops(task.instantiate(task.fallback()))
