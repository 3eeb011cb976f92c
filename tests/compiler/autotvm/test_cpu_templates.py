"""The CPU templates of depthwise conv2d, pooling and matmul: a few trials each measured on the
shared 2-process LocalCluster (every point checked against numpy on the worker), the records
round-trip, the fallback is today's hand schedule, and ``apply_history_best`` changes what the
plain schedules build -- for ``vdla.build`` users and for the graph compiler's CPU nodes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vdla.compiler import autotvm, build, topi
from vdla.compiler import te as te_
from vdla.compiler.autotvm import tuner as T
from vdla.compiler.autotvm.features import lower_loops
from vdla.compiler.autotvm.record import load_from_file
from vdla.compiler.targets.llvm import schedules
from vdla.compiler.topi import testing as ref

DEPTHWISE = ["depthwise_conv2d_nchw.x86", [[1, 16, 14, 14], [16, 1, 3, 3], [2, 2], [1, 1, 1, 1], [1, 1]]]
MAXPOOL = ["pool2d.x86", [[1, 8, 16, 16], [3, 3], [2, 2], [1, 1, 1, 1], "max", False]]
AVGPOOL = ["pool2d.x86", [[1, 8, 15, 15], [3, 3], [2, 2], [1, 1, 1, 1], "avg", False]]
MATMUL = ["matmul.x86", [16, 128, 48]]
CASES = [DEPTHWISE, MAXPOOL, AVGPOOL, MATMUL]
IDS = ["depthwise", "maxpool", "avgpool", "matmul"]


def _hand(name, args):  # type: ignore[no-untyped-def]
    """The operator declared and scheduled as a ``vdla.build`` user does (no template)."""
    if name == "matmul.x86":
        a, b, c = topi.matmul(*args)
        return schedules.schedule_matmul_cpu(c), [a, b, c]
    x = te_.placeholder(tuple(args[0]), name="data")
    if name == "pool2d.x86":
        _, kernel, stride, padding, kind, cip = args
        y = topi.pool2d(x, tuple(kernel), tuple(stride), tuple(padding), kind, cip)
        return schedules.schedule_pool(y), [x, y]
    w = te_.placeholder(tuple(args[1]), name="kernel")
    y = topi.depthwise_conv2d_nchw(x, w, tuple(args[2]), tuple(args[3]), tuple(args[4]))
    return schedules.schedule_depthwise_conv2d_nchw(y), [x, w, y]


def _numpy(name, args, arrays):  # type: ignore[no-untyped-def]
    if name == "matmul.x86":
        return arrays[0].astype(np.float64) @ arrays[1]
    if name == "pool2d.x86":
        return ref.pool2d(arrays[0], args[1][0], args[2][0], args[3][0], args[4], args[5])
    return ref.depthwise_conv2d_nchw(arrays[0], arrays[1], args[2][0], args[3][0])


def _run(s, tensors, name, args):  # type: ignore[no-untyped-def]
    """Build and run; assert the answer is numpy's."""
    f = build(s, tensors, target="llvm")
    rng = np.random.default_rng(3)
    ins = [rng.standard_normal(tuple(int(d.value) for d in t.shape)).astype("float32") for t in tensors[:-1]]
    out = np.zeros(tuple(int(d.value) for d in tensors[-1].shape), "float32")
    f(*ins, out)
    np.testing.assert_allclose(out, _numpy(name, args, ins), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name, args", CASES, ids=IDS)
def test_fallback_is_the_hand_schedule(name, args) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(name, args, "llvm")
    assert len(task.config_space) > 8 and task.flop > 0
    fb = task.fallback()
    assert fb.index is not None, f"{name}: the hand pick {fb} is outside the space"
    s, tensors = task.instantiate(task.config_space.get(fb.index))
    assert str(lower_loops(s, tensors)) == str(lower_loops(*_hand(name, args)))
    knobs = set(task.config_space.knob_names())
    assert knobs & {"tile_x", "tile_y"} and knobs & {"par", "parallel"}


@pytest.mark.parametrize("name, args", CASES, ids=IDS)
def test_tune_log_round_trip_and_apply(name, args, dask_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    task = autotvm.task.create(name, args, "llvm")
    log = tmp_path / "cpu.log"
    opt = autotvm.measure_option(autotvm.LocalBuilder(timeout=30), autotvm.LocalRunner(number=1, repeat=1, timeout=30),
                                 client=dask_client)
    fb = task.fallback().index
    tuner = T.RandomTuner(task, seed=5)
    tuner.tune(6, opt, callbacks=[autotvm.callback.log_to_file(log)])
    recs = list(load_from_file(log, "llvm"))
    # every point ran and agreed with the numpy reference on the worker (else WRONG_ANSWER)
    assert len(recs) == 6 and all(r.ok and r.unit == "s" for _, r in recs), [r.error_msg for _, r in recs]
    # the records round-trip: the same points (index and knobs) and costs as measured
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [i.config.knobs() for i, _ in recs] == [d["config"]["knobs"] for d in lines]
    assert [i.config.index for i, _ in recs] == [task.config_space.index_of(d["config"]["knobs"]) for d in lines]
    assert [r.costs for _, r in recs] == [d["result"]["costs"] for d in lines]
    # without the hand pick's record, the best record is another point: the plain schedule changes
    others = [(i, r) for i, r in recs if i.config.index != fb]
    best = min(others, key=lambda ir: ir[1].cost)[0].config
    hand = str(lower_loops(*_hand(name, args)))
    with autotvm.apply_history_best(others):
        s, tensors = _hand(name, args)
        assert str(lower_loops(s, tensors)) == str(lower_loops(*task.instantiate(best))) != hand
        _run(s, tensors, name, args)
    assert str(lower_loops(*_hand(name, args))) == hand  # the context is gone


def _graph_node(model: str, op: str):  # type: ignore[no-untyped-def]
    from vdla.compiler.graph import models
    from vdla.compiler.graph.fuse import fuse
    from vdla.compiler.graph.passes import simplify
    from vdla.compiler.graph.strategy import topi_ops as strategy

    g = fuse(simplify(models.get(model, **dict(_reduced(model)))))
    node = next(n for n in g.topo_order() if strategy.check(n, g) is None and strategy.schedule_key(n, g) == op)
    return g, node


def _reduced(model):  # type: ignore[no-untyped-def]
    from vdla.compiler.graph.zoo import SETTINGS

    return SETTINGS[model].reduced


@pytest.mark.parametrize("model, op", [("mobilenet_v1", "depthwise_conv2d"), ("resnet18", "max_pool2d")])
def test_graph_compiler_takes_the_tuned_schedule(model, op) -> None:  # type: ignore[no-untyped-def]
    """A float CPU node (a depthwise conv with its bias and clip fused; a max pool) built by the
    llvm strategy under ApplyConfig: other loops than the hand pick's, the numpy kernels' answer."""
    from vdla.compiler.graph.ops.registry import get_op
    from vdla.compiler.graph.strategy import lower
    from vdla.compiler.graph.strategy import topi_ops as strategy

    g, node = _graph_node(model, op)
    placeholders, _, out = strategy.declare(node, g)
    wl = next(p.op.attrs["workload"] for p in _producers(out) if "workload" in getattr(p.op, "attrs", {}))
    task = autotvm.task.create(wl[0], wl[1], "llvm")
    hand = str(lower_loops(strategy.schedule(node, g, out, "llvm"), [*placeholders, out]))
    fb = task.fallback().index
    point = task.config_space.get(next(i for i in range(len(task.config_space) - 1, -1, -1) if i != fb))
    rng = np.random.default_rng(0)
    env = {k: v for k, v in g.consts.items()}
    for k in node.inputs:
        if k not in env:
            env[k] = rng.standard_normal(g.type_of(k).shape).astype("float32")
    want = get_op(node.op, node.name).compute(node.attrs, [env[i] for i in node.inputs])
    with autotvm.ApplyConfig(point):
        placeholders, _, out = strategy.declare(node, g)
        tuned = str(lower_loops(strategy.schedule(node, g, out, "llvm"), [*placeholders, out]))
        kernel = lower(node, g, "llvm", "cpu")
    assert tuned != hand
    assert not isinstance(kernel, str), kernel
    np.testing.assert_allclose(kernel(env), want, rtol=1e-4, atol=1e-4)


def _producers(t):  # type: ignore[no-untyped-def]
    seen, todo = [], [t]
    while todo:
        x = todo.pop()
        if x not in seen:
            seen.append(x)
            todo.extend(x.op.input_tensors() if hasattr(x.op, "input_tensors") else [])
    return seen


def test_model_tasks_cover_depthwise_and_pool() -> None:
    """``vdla tune MODEL --target llvm`` tunes every distinct CPU workload of the float model."""
    from vdla.compiler.autotvm.tuning import model_tasks

    names = [t.name for t in model_tasks("mobilenet_v1", "llvm", reduced=True)]  # on NCHW[x]c, as the graph runs
    assert names.count("depthwise_conv2d_NCHWc.x86") >= 5 and "conv2d_NCHWc.x86" in names
    assert "pool2d.x86" in [t.name for t in model_tasks("resnet18", "llvm", reduced=True)]
