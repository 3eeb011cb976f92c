"""The cuda templates: spaces that contain today's hand tiles, points proven by ptxas for sm_80
and sm_90, and each point's loop IR run on the CPU (GPU threads as serial loops) against numpy.

The default run proves the hand point and one sampled point of each template (small shapes:
builds take a second or two); ``-m slow`` proves eight sampled points per template and arch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.cuda import ARCHS, cpu_reference, needs_ptxas, simt_check_points

import vdla
from vdla import te, topi
from vdla.compiler.autotvm import measure_cuda as M
from vdla.compiler.autotvm.measure import LocalBuilder, MeasureErrorNo, _reference
from vdla.compiler.autotvm.task import Task, TaskError, create
from vdla.compiler.targets.cuda import schedules as S
from vdla.compiler.topi.workloads import RESNET18

#: one small workload per template (shapes keep a build near a second)
SMALL: list[tuple[str, list[Any]]] = [
    ("conv2d_nchw.cuda", [[1, 16, 14, 14], [16, 16, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]),
    ("group_conv2d_nchw.cuda", [[1, 16, 14, 14], [16, 4, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 4]),
    ("depthwise_conv2d_nchw.cuda", [[1, 32, 28, 28], [32, 1, 3, 3], [2, 2], [1, 1, 1, 1], [1, 1]]),
    ("dense.cuda", [1, 256, 128, True]),
    ("matmul.cuda", [64, 64, 32]),
    ("conv2d_1x1.cuda", [32, 14, 14, 64]),
]


def _sample(task: Task, n: int, seed: int) -> list[Any]:
    """``n`` random points of the space that build (the template and the GPU's limits accept them)."""
    rng = np.random.default_rng(seed)
    got: list[Any] = []
    for _ in range(40 * n):
        cfg = task.config_space.get(int(rng.integers(len(task.config_space))))
        r = M.build_one(None, task.name, task.args, task.target, cfg.to_json_dict(), LocalBuilder(120))
        if isinstance(r, M.CudaBuild):
            got.append((cfg, r))
            if len(got) == n:
                break
        else:  # an invalid point is recorded with its reason, never raised
            assert r.error_no in (MeasureErrorNo.INSTANTIATION_ERROR, MeasureErrorNo.COMPILE_DEVICE), r.error_msg
            if r.error_no == MeasureErrorNo.COMPILE_DEVICE:
                assert r.error_msg.split(":")[0] in ("too many threads per block", "shared memory over the limit",
                                                     "registers over the limit", "ptxas error", "invalid for the GPU")
    assert len(got) == n, f"{task.name}: only {len(got)} of {n} sampled points build"
    return got


def _check_on_cpu(task: Task, cfg: Any) -> None:
    """The point's loop IR with its GPU threads as loops, built for llvm, against the numpy reference."""
    s, tensors = task.instantiate(cfg)
    ins, want = _reference(task, tensors)
    assert want, f"{task.name}: no numpy reference for {task.args}"
    got = cpu_reference(s, tensors, ins)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(w).max())))


def _prove(name: str, args: list[Any], n: int, seed: int, archs: tuple[str, ...] = ARCHS) -> None:
    """The hand point proven for every architecture; ``n`` sampled points for each of ``archs``;
    all of them run on the CPU against numpy."""
    for arch in ARCHS:
        task = create(name, args, f"cuda -arch={arch}")
        fb = task.fallback()
        assert fb.index is not None, f"{name}: the hand tiles are not a point of the space"
        hand = M.build_one(None, name, args, task.target, task.config_space.get(fb.index).to_json_dict(),
                           LocalBuilder(120))
        assert isinstance(hand, M.CudaBuild), hand.error_msg
        assert hand.report and hand.arch == arch  # assembled by ptxas for this architecture
        points = _sample(task, n, seed) if arch in archs else []
        assert all(b.report and all(k.registers > 0 for k in b.kernels) for _, b in points)
        if points and arch == archs[0]:  # the loop IR does not depend on the architecture: checked once
            for cfg, _ in [(task.config_space.get(fb.index), hand), *points]:
                _check_on_cpu(task, cfg)


@needs_ptxas
@pytest.mark.parametrize("name,args", SMALL, ids=[n for n, _ in SMALL])
def test_template_points_prove_and_compute(name: str, args: list[Any]) -> None:
    _prove(name, args, 1, seed=6, archs=("sm_90",))


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("name,args", SMALL, ids=[n for n, _ in SMALL])
def test_template_eight_points_per_arch(name: str, args: list[Any]) -> None:
    _prove(name, args, 8, seed=11)


def _conv_task(layer: Any, arch: str = "sm_80") -> Task:
    p = layer.pad
    return create("conv2d_nchw.cuda", [[1, layer.ic, layer.size, layer.size], [layer.oc, layer.ic, layer.k, layer.k],
                                       [layer.stride] * 2, [p] * 4, [1, 1]], f"cuda -arch={arch}")


@pytest.mark.parametrize("layer", RESNET18[1:], ids=[lay.name for lay in RESNET18[1:]])
def test_hand_tiles_are_points_of_the_space(layer: Any) -> None:
    """Every ResNet-18 layer's hand tiles (TUNED_TILES or the defaults, clipped) are a point, and
    the template at that point schedules exactly as the hand schedule (same loop IR)."""
    task = _conv_task(layer)
    fb = task.fallback()
    assert fb.index is not None
    s, tensors = task.instantiate(task.config_space.get(fb.index))
    x = te.placeholder((1, layer.ic, layer.size, layer.size), name="data")
    w = te.placeholder((layer.oc, layer.ic, layer.k, layer.k), name="kernel")
    y = topi.conv2d_nchw(x, w, layer.stride, layer.pad)
    assert str(vdla.lower(s, tensors)) == str(vdla.lower(S.schedule_conv2d_nchw(y), [x, w, y]))


def test_matmul_hand_tiles_are_a_point() -> None:
    task = create("matmul.cuda", [1024, 1024, 1024], "cuda")
    fb = task.fallback()
    assert fb.index is not None and fb.knobs()["tile_y"] == [16, 1, 16, 4]
    s, tensors = task.instantiate(task.config_space.get(fb.index))
    A, B, C = S.matmul(1024, 1024, 1024)
    assert str(vdla.lower(s, tensors)) == str(vdla.lower(S.schedule_matmul(C), [A, B, C]))


def test_a_tuned_record_schedules_the_models_kernel() -> None:
    """Outside a template, the GPU schedule uses the best record of its workload (apply_history_best)."""
    from vdla.compiler.autotvm.dispatch import ApplyConfig

    task = _conv_task(RESNET18[1])
    cfg = task.config_space.get(12345)
    x = te.placeholder((1, 64, 56, 56), name="data")
    w = te.placeholder((64, 64, 3, 3), name="kernel")
    y = topi.conv2d_nchw(x, w, 1, 1)
    with ApplyConfig(cfg, task.workload):
        tuned = str(vdla.lower(S.schedule_conv2d_nchw(y), [x, w, y]))
    s, tensors = task.instantiate(cfg)
    assert tuned == str(vdla.lower(s, tensors))
    assert tuned != str(vdla.lower(S.schedule_conv2d_nchw(y), [x, w, y]))


def test_templates_serve_cuda_only() -> None:
    with pytest.raises(TaskError, match="serves target 'cuda', not 'llvm'"):
        create("conv2d_nchw.cuda", SMALL[0][1], "llvm")
    with pytest.raises(TaskError, match="unknown target"):
        create("conv2d_nchw.cuda", SMALL[0][1], "opencl")


def test_invalid_points_are_recorded_with_the_reason() -> None:
    """Too many threads and too much shared memory are found by the lowering, before LLVM."""
    task = create("conv2d_nchw.cuda", [[1, 64, 56, 56], [64, 64, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]], "cuda")
    knobs = task.fallback().knobs()
    many = dict(knobs, tile_f=[4, 1, 16, 1], tile_y=[7, 1, 8, 1], tile_x=[4, 1, 14, 1])  # 16*8*14 threads
    big = dict(knobs, tile_rc=[1, 64], tile_x=[1, 1, 28, 2], tile_y=[1, 1, 8, 7], tile_f=[8, 1, 4, 2])
    for point, why in ((many, "too many threads per block"), (big, "shared memory over the limit")):
        cfg = task.config_space.get(task.config_space.index_of(point))
        r = M.build_one(None, task.name, task.args, task.target, cfg.to_json_dict(), LocalBuilder(60))
        assert isinstance(r, M.MeasureResult) and r.error_no == MeasureErrorNo.COMPILE_DEVICE
        assert r.error_msg.startswith(why), r.error_msg


def test_ptxas_report_parsing() -> None:
    report = ("ptxas info    : Compiling entry function 'k0' for 'sm_80'\nptxas info    : Function properties for k0\n"
              "    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
              "ptxas info    : Used 168 registers, 9984 bytes smem, 368 bytes cmem[0]\n")
    assert M.parse_ptxas(report) == {"k0": {"registers": 168, "shared": 9984, "spill": 8}}
    assert M.registers_per_block(168, 256) == 43008
    assert M.registers_per_block(255, 512) > M.REGISTERS_PER_SM


#: the templates whose blocks share tiles in shared memory, at shapes the SIMT interpreter runs in seconds
SHARED = [("conv2d_nchw.cuda", [[1, 8, 6, 6], [8, 8, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]),
          ("group_conv2d_nchw.cuda", [[1, 8, 6, 6], [8, 4, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 2]),
          ("matmul.cuda", [32, 32, 16]), ("conv2d_1x1.cuda", [16, 4, 4, 16])]


def test_the_gemm_template_on_the_simt_interpreter() -> None:
    simt_check_points(*SHARED[3], n=1, seed=2)


@pytest.mark.slow
@pytest.mark.parametrize("name,args", SHARED, ids=[n for n, _ in SHARED])
def test_shared_memory_templates_on_the_simt_interpreter(name: str, args: list[Any]) -> None:
    simt_check_points(name, args, n=5, seed=2)
