"""The cuda strategy's choice of a convolution's implementation by tuned cost
(:mod:`vdla.compiler.graph.strategy.cuda`): with a hand-written tuning log whose records make
Winograd and the 1x1 GEMM the faster ones, a small float model picks them (and says so per node),
its PTX assembles for sm_90, and its kernels' loop IR run on the CPU matches numpy; slower
records, or records of another workload, leave the convolutions direct, and without a log the
graph is not touched. ``model_tasks`` lists the tasks of every implementation. ``-m slow``: the
same through ``vdla build --json``, and the chosen kernels on the SIMT interpreter."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from support.cuda import needs_ptxas

from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.autotvm.record import apply_history_best, save_to_file
from vdla.compiler.autotvm.task import create
from vdla.compiler.autotvm.tuning import model_tasks, tuning_context
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.graph.strategy.cuda import (
    DIRECT,
    GEMM_1X1,
    WINOGRAD,
    conv2d_implementations,
    select_implementations,
)
from vdla.compiler.targets.cuda.ptxas import assemble

TARGET = "cuda -arch=sm_90"


def _graph() -> Graph:
    """x -> 3x3 stride-1 conv (+bias) -> + x -> relu -> 1x1 stride-1 conv (+bias) -> relu."""
    rng = np.random.default_rng(0)
    g = Graph("small")
    x = g.add_input("x", (1, 16, 8, 8))
    w1 = g.add_const("w1", (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32))
    b1 = g.add_const("b1", rng.standard_normal(16).astype(np.float32))
    c1 = g.add_node("conv2d", [x, w1, b1], name="c1", strides=1, padding=1)
    r1 = g.add_node("relu", [g.add_node("add", [c1, x], name="res")], name="r1")
    w2 = g.add_const("w2", (rng.standard_normal((32, 16, 1, 1)) * 0.1).astype(np.float32))
    b2 = g.add_const("b2", rng.standard_normal(32).astype(np.float32))
    c2 = g.add_node("conv2d", [r1, w2, b2], name="c2", strides=1, padding=0)
    g.set_outputs(g.add_node("relu", [c2], name="r2"))
    return g.infer_types()


def _write_log(path: Path, records: list[tuple[str, list, float]]) -> Path:
    """Records of each template's fallback point (the hand tiles) with the given cost in seconds,
    written with vdla's record API."""
    rows = []
    for name, args, cost in records:
        task = create(name, args, TARGET)
        fb = task.fallback()
        cfg = task.config_space.get(fb.index if fb.index is not None else 0)
        rows.append((MeasureInput(task, cfg), MeasureResult([cost], 0, 0.1, time.time())))
    save_to_file(rows, path)
    return path


def _costs(g: Graph, direct: float, other: float) -> list[tuple[str, list, float]]:
    """Every implementation of every conv of ``g``: the direct one at ``direct`` s, the others at ``other``."""
    return [(i.name, i.workload[1], direct if i.name == DIRECT else other)
            for n in g.nodes for i in conv2d_implementations(n, g)]


def test_the_implementations_of_each_conv() -> None:
    g = _graph()
    assert [i.name for i in conv2d_implementations(g.node("c1"), g)] == [DIRECT, WINOGRAD]
    assert [i.name for i in conv2d_implementations(g.node("c2"), g)] == [DIRECT, GEMM_1X1]
    assert conv2d_implementations(g.node("r1"), g) == []
    # F(4x4) for a height that is a multiple of 8 (TVM's rule); the 1x1 GEMM's [C, H, W, OC]
    assert conv2d_implementations(g.node("c1"), g)[1].workload[1][-1] == 4
    assert conv2d_implementations(g.node("c2"), g)[1].workload == [GEMM_1X1, [16, 8, 8, 32]]


def test_without_a_log_every_conv_stays_direct() -> None:
    g = _graph()
    assert select_implementations(g) is g
    m = compile_model(g, target=TARGET)
    assert [p for _, p, t, _ in m.summary() if t == "cuda"] == ["conv2d+add+relu", "conv2d+relu"]
    assert all(why == "" for *_, why in m.summary())


@needs_ptxas
def test_faster_records_pick_winograd_and_the_1x1_gemm(tmp_path: Path) -> None:
    g = _graph()
    log = _write_log(tmp_path / "t.log", _costs(g, 100e-6, 40e-6))
    with tuning_context(str(log), TARGET):
        m = compile_model(g, target=TARGET)
    rows = {name: (pattern, target, why) for name, pattern, target, why in m.summary()}
    # the residual add and ReLU fused into the Winograd output transform; the 1x1 GEMM's ReLU before the view back
    assert rows["r1"][:2] == ("conv2d_winograd+add+relu", "cuda")
    assert rows["r2.2d"][:2] == ("conv2d_1x1+relu", "cuda")
    assert rows["r2"][:2] == ("reshape", "view") and rows["c2.data2d"][:2] == ("reshape", "view")
    assert rows["r1"][2] == (f"{WINOGRAD}: its tuned record (40.00 us) is faster than {DIRECT}'s (100.00 us)")
    assert rows["r2.2d"][2].startswith(f"{GEMM_1X1}: its tuned record (40.00 us)")
    for k in m.kernels.values():
        if k.target == "cuda":
            assemble(k.kernel.func.ptx, "sm_90")
    x = {"x": np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)}
    (got,), (want,) = m.run_on_cpu(x), reference_run(g, x, check=False)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    # the graph op's numpy semantics (the host's and the reference executor's) agree too
    (host,) = reference_run(m.graph, x, check=False)
    np.testing.assert_allclose(host, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_slower_records_keep_the_direct_convs(tmp_path: Path) -> None:
    g = _graph()
    log = _write_log(tmp_path / "t.log", _costs(g, 40e-6, 100e-6))
    with apply_history_best(log, "cuda"):
        assert select_implementations(g) is g


def test_a_record_of_another_workload_is_not_used(tmp_path: Path) -> None:
    g = _graph()
    other = [[1, 16, 16, 16], [16, 16, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]
    log = _write_log(tmp_path / "t.log", [(DIRECT, other, 100e-6), (WINOGRAD, [*other, 4], 1e-6),
                                          (GEMM_1X1, [16, 8, 8, 64], 1e-6), (DIRECT, conv2d_implementations(
                                              g.node("c2"), g)[0].workload[1], 100e-6)])
    with apply_history_best(log, "cuda"):
        assert select_implementations(g) is g


def test_a_tuned_implementation_beats_an_untuned_direct_one(tmp_path: Path) -> None:
    """As TVM's select_implementation: only the implementations with a record compete."""
    g = _graph()
    wino = conv2d_implementations(g.node("c1"), g)[1]
    log = _write_log(tmp_path / "t.log", [(wino.name, wino.workload[1], 1.0)])
    with apply_history_best(log, "cuda"):
        s = select_implementations(g)
    assert [n.op for n in s.nodes] == ["conv2d_winograd", "add", "relu", "conv2d", "relu"]
    assert s.node("c1").notes["reason"] == f"{WINOGRAD}: its tuned record (1000000.00 us) is faster than {DIRECT}'s (no record)"


@pytest.mark.parametrize(("model", "impl"), [("resnet_block", WINOGRAD), ("mobilenet_v1", GEMM_1X1)])
def test_model_tasks_list_every_implementation(model: str, impl: str) -> None:
    tasks = model_tasks(model, TARGET, reduced=True)
    names = [t.name for t in tasks]
    assert DIRECT in names and impl in names
    # each alternative is a workload of a direct task's convolution
    direct = [t.args for t in tasks if t.name == DIRECT]
    for t in tasks:
        if t.name == WINOGRAD:
            assert t.args[:5] in direct
        elif t.name == GEMM_1X1:
            c, h, w, oc = t.args
            assert [[1, c, h, w], [oc, c, 1, 1], [1, 1], [0, 0, 0, 0], [1, 1]] in direct


@pytest.mark.slow  # ~8 s: resnet_block's F(4x4) kernel built (the default run builds one in the test above)
def test_vdla_build_with_a_tuning_log_shows_the_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vdla import cli

    tasks = model_tasks("resnet_block", TARGET, reduced=True)
    log = _write_log(tmp_path / "t.log", [(t.name, t.args, 100e-6 if t.name == DIRECT else 40e-6) for t in tasks])
    assert cli.main(["build", "resnet_block", "--reduced", "--target", TARGET, "--tuning-log", str(log), "--json",
                     "-q"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    convs = [d for d in nodes if d["op"].startswith("conv2d")]
    assert len(convs) == 2
    for d in convs:
        assert d["op"].startswith("conv2d_winograd+") and d["target"] == "cuda"
        assert d["reason"] == f"{WINOGRAD}: its tuned record (40.00 us) is faster than {DIRECT}'s (100.00 us)"


@pytest.mark.slow  # ~15 s: the two kernels on the pure-Python SIMT interpreter
def test_the_chosen_kernels_on_the_simt_interpreter(tmp_path: Path) -> None:
    """The Winograd kernel with its fused residual add and ReLU, and the 1x1 GEMM with its fused
    bias and ReLU, with their threads in lockstep between barriers (the shared-memory fetches,
    which threads-as-loops cannot check), against numpy."""
    from support.simt import run_kernels

    g = _graph()
    log = _write_log(tmp_path / "t.log", _costs(g, 100e-6, 40e-6))
    with tuning_context(str(log), TARGET):
        m = compile_model(g, target=TARGET)
    x = np.random.default_rng(1).standard_normal((1, 16, 8, 8)).astype(np.float32)
    env: dict[str, np.ndarray] = {**m.graph.consts, "x": x}
    for n in m.graph.topo_order():
        k = m.kernels[n.name]
        assert k.target in ("cuda", "view"), n.name
        if k.target == "view":
            env[n.name] = env[n.inputs[0]].reshape(n.type.shape)
            continue
        env[n.name] = np.zeros(k.kernel.out_shape, np.float32)
        run_kernels(k.kernel.func, *[np.array(env[a]) for a in k.kernel.args], env[n.name])
    (want,) = reference_run(g, {"x": x}, check=False)
    np.testing.assert_allclose(env["r2"], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
