"""The GEMM schedule (``schedule_matmul``) with a tuned record: every knob of the record is
honoured, ``double_buffer`` included, so a matmul built under ``apply_history_best`` is the kernel
the ``matmul.cuda`` template measured (the same PTX), and a model's 1x1 convolution run as the
``conv2d_1x1.cuda`` GEMM double-buffers its shared tiles when its record says so. Records written
before the knob existed build without it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from support.cuda import cpu_reference, needs_ptxas

import vdla
from vdla.compiler.autotvm.measure import MeasureInput, MeasureResult
from vdla.compiler.autotvm.record import apply_history_best, encode, save_to_file
from vdla.compiler.autotvm.space import ConfigEntity
from vdla.compiler.autotvm.task import Task, create
from vdla.compiler.autotvm.tuning import tuning_context
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.reference import run as reference_run
from vdla.compiler.targets.cuda import schedules as S
from vdla.compiler.targets.cuda.ptxas import assemble
from vdla.compiler.targets.cuda.schedules.matmul import hand_matmul_knobs, matmul_tiles

TARGET = "cuda -arch=sm_90"
M_, N_, K_ = 64, 64, 32


def _point(task: Task, double: int) -> ConfigEntity:
    """The fallback (the hand tiles) with ``double_buffer`` set."""
    knobs = {**task.fallback().knobs(), "double_buffer": double}
    return task.config_space.get(task.config_space.index_of(knobs))


def _record(task: Task, cfg: ConfigEntity) -> list[tuple[MeasureInput, MeasureResult]]:
    return [(MeasureInput(task, cfg), MeasureResult([1e-5], 0, 0.1, time.time()))]


def _model_matmul() -> tuple[Any, list[Any]]:
    """C = A x B scheduled as code outside a template calls the schedule: its knobs from the log."""
    a, b, c = S.matmul(M_, N_, K_)
    return S.schedule_matmul(c), [a, b, c]


def test_a_double_buffered_record_builds_what_the_template_measured() -> None:
    task = create("matmul.cuda", [M_, N_, K_], TARGET)
    for double in (1, 0):
        cfg = _point(task, double)
        measured = vdla.build(*task.instantiate(cfg), target=TARGET)
        with apply_history_best(_record(task, cfg)):
            s, args = _model_matmul()
            built = vdla.build(s, args, target=TARGET)
        assert built.ptx == measured.ptx
        assert built.kernels[0].shared_bytes == (2 if double else 1) * (64 * 16 + 16 * 64) * 4
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((M_, K_), dtype=np.float32), rng.standard_normal((K_, N_), dtype=np.float32)
    with apply_history_best(_record(task, _point(task, 1))):
        s, args = _model_matmul()
    (got,) = cpu_reference(s, args, [a, b])
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_a_record_without_the_knob_builds_single_buffered(tmp_path: Path) -> None:
    task = create("matmul.cuda", [M_, N_, K_], TARGET)
    d = json.loads(encode(*_record(task, _point(task, 1))[0]))
    del d["config"]["knobs"]["double_buffer"], d["config"]["kinds"]["double_buffer"]  # as a log from before the knob
    log = tmp_path / "old.log"
    log.write_text(json.dumps(d) + "\n")
    with apply_history_best(log, "cuda") as ctx:
        assert matmul_tiles(ctx.query("cuda", task.workload)).double_buffer is False
        s, args = _model_matmul()
        assert vdla.build(s, args, target=TARGET).kernels[0].shared_bytes == (64 * 16 + 16 * 64) * 4


def _conv1x1_graph() -> Graph:
    rng = np.random.default_rng(0)
    g = Graph("pointwise")
    x = g.add_input("x", (1, 32, 8, 8))
    w = g.add_const("w", (rng.standard_normal((64, 32, 1, 1)) * 0.1).astype(np.float32))
    b = g.add_const("b", rng.standard_normal(64).astype(np.float32))
    g.set_outputs(g.add_node("relu", [g.add_node("conv2d", [x, w, b], name="c", strides=1)], name="r"))
    return g.infer_types()


@needs_ptxas
def test_a_models_1x1_gemm_double_buffers_as_its_record_says(tmp_path: Path) -> None:
    g = _conv1x1_graph()
    direct = create("conv2d_nchw.cuda", [[1, 32, 8, 8], [64, 32, 1, 1], [1, 1], [0, 0, 0, 0], [1, 1]], TARGET)
    gemm = create("conv2d_1x1.cuda", [32, 8, 8, 64], TARGET)
    x = {"x": np.random.default_rng(1).standard_normal((1, 32, 8, 8)).astype(np.float32)}
    (want,) = reference_run(g, x, check=False)
    shared = {}
    for double in (0, 1):
        # the GEMM's hand tiles clipped to this shape: 32 rows, 64 columns, 16 channels a step
        knobs = {**hand_matmul_knobs(64, 64, 32, S.MatmulTiles(bm=32)), "double_buffer": double}
        cfg = gemm.config_space.get(gemm.config_space.index_of(knobs))
        log = tmp_path / f"t{double}.log"
        save_to_file([(MeasureInput(direct, direct.config_space.get(direct.fallback().index)),
                       MeasureResult([2e-5], 0, 0.1, time.time())),
                      (MeasureInput(gemm, cfg), MeasureResult([1e-5], 0, 0.1, time.time()))], log)
        with tuning_context(str(log), TARGET):
            m = compile_model(g, target=TARGET)
        (k,) = [k for k in m.kernels.values() if k.target == "cuda"]
        assert k.node == "r.2d" and k.record_reason.startswith("conv2d_1x1.cuda")
        shared[double] = k.kernel.func.kernels[0].shared_bytes
        assemble(k.kernel.func.ptx, "sm_90")
        (got,) = m.run_on_cpu(x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    assert shared[1] == 2 * shared[0] == 2 * (32 * 16 + 16 * 64) * 4
