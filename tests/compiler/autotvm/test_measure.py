"""Measurement as Dask tasks on a real 2-process LocalCluster: vdla cycles equal a direct run of
the golden simulator; invalid points, wrong answers, crashes and a worker killed mid-batch are
records, never tuner crashes."""

from __future__ import annotations

import os
import threading
import time

import cloudpickle
import numpy as np
import pytest
from support.autotvm import VDLA_CONV

from vdla import Device
from vdla.compiler import autotvm, build, te
from vdla.compiler.autotvm import MeasureErrorNo, MeasureInput
from vdla.compiler.autotvm.measure import measure_batch

OPT = autotvm.measure_option(autotvm.LocalBuilder(timeout=30), autotvm.LocalRunner(number=1, repeat=1, timeout=30))


def _measure(client, task, indices):  # type: ignore[no-untyped-def]
    opt = autotvm.measure_option(OPT.builder, OPT.runner, client=client)
    return measure_batch([MeasureInput(task, task.config_space.get(i)) for i in indices], opt)


def test_vdla_cycles_match_the_simulator_and_invalid_points_are_records(dask_client) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(*VDLA_CONV, "vdla")
    fb = task.fallback()
    bad = next(i for i in range(len(task.config_space)) if task.config_space.get(i)["tile_co"].size[0] == 1
               and task.config_space.get(i)["oc_nthread"].val == 2)
    res = _measure(dask_client, task, [fb.index, bad])
    assert res[0].ok, res[0].error_msg
    # the same point built and run here, on fsim
    s, args = task.instantiate(task.config_space.get(fb.index))
    f = build(s, args, target="vdla", config=s.vdla_config)
    rng = np.random.default_rng(1)
    arrays = [rng.integers(-128, 127, tuple(int(d.value) for d in a.shape)).astype(a.dtype) for a in args]
    assert res[0].costs == [float(f(Device("fsim", config=f.config), *arrays).cycles)]
    assert res[0].unit == "cycles"
    assert not res[1].ok and res[1].error_no == MeasureErrorNo.INSTANTIATION_ERROR
    assert "virtual threads do not divide" in res[1].error_msg


def _crashy_reference(args, inputs):  # type: ignore[no-untyped-def]
    return [inputs[0] * 2.0 + (1.0 if args[1] == "wrong" else 0.0)]


@autotvm.template("test_crashy.llvm", reference=_crashy_reference)
def crashy(n: int, mode: str):  # type: ignore[no-untyped-def]
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
    s = te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_knob("action", ["ok", "crash", "sleep"])
    act = cfg["action"].val if not cfg.is_fallback else "ok"
    if act == "crash" and not isinstance(cfg, autotvm.ConfigSpace):
        os._exit(3)  # a worker process dying mid-build (as a segfaulting kernel would)
    if act == "sleep" and not isinstance(cfg, autotvm.ConfigSpace):
        time.sleep(1.5)
    return s, [a, b]


cloudpickle.register_pickle_by_value(__import__(__name__))


def test_wrong_answer_and_crash_are_records(dask_client) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create("test_crashy.llvm", [64, "wrong"], "llvm")
    res = _measure(dask_client, task, [0, 1])
    assert res[0].error_no == MeasureErrorNo.WRONG_ANSWER and "differs from the numpy reference" in res[0].error_msg
    assert res[1].error_no == MeasureErrorNo.WORKER_LOST and "died" in res[1].error_msg
    ok = autotvm.task.create("test_crashy.llvm", [64, "right"], "llvm")
    assert _measure(dask_client, ok, [0])[0].ok


def test_worker_killed_mid_measurement_loses_no_record(dask_client) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create("test_crashy.llvm", [64, "right"], "llvm")
    dask_client.wait_for_workers(2, timeout=60)
    pids = list(dask_client.run(os.getpid).values())
    killer = threading.Timer(0.8, lambda: os.kill(pids[0], 9))
    killer.start()
    try:
        res = _measure(dask_client, task, [2, 2, 2, 2, 0, 0])
    finally:
        killer.cancel()
    assert len(res) == 6
    for r in res:  # retried on the other worker, or recorded as lost: never missing
        assert r.ok or r.error_no == MeasureErrorNo.WORKER_LOST, r.error_msg
    assert sum(r.ok for r in res) >= 4
    dask_client.wait_for_workers(2, timeout=60)


def test_runner_options_are_checked() -> None:
    with pytest.raises(ValueError, match="number .* and repeat"):
        autotvm.LocalRunner(number=0)


def test_llvm_points_are_timed_and_checked(dask_client) -> None:  # type: ignore[no-untyped-def]
    """Every point of the graph's CPU conv2d template computes the numpy reference's answer."""
    task = autotvm.task.create("conv2d_nchw.x86", [[1, 8, 10, 10], [16, 8, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]],
                               "llvm")
    res = _measure(dask_client, task, range(len(task.config_space)))
    for r in res:
        assert r.ok and r.unit == "s" and len(r.costs) == 1 and 0 < r.costs[0] < 1, r.error_msg


def test_measure_option_takes_autotvm_local_spelling() -> None:
    opt = autotvm.measure_option(builder="local", runner="local")
    assert opt.builder == autotvm.LocalBuilder() and opt.runner == autotvm.LocalRunner()
    with pytest.raises(ValueError, match="runner 'rpc' is not 'local' or a LocalRunner.*Dask"):
        autotvm.measure_option(runner="rpc")
