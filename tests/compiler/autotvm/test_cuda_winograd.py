"""The cuda Winograd template (``conv2d_nchw_winograd.cuda``): its space holds the fallback, its
points are proven by ptxas for sm_80 and sm_90, and each point's loop IR run on the CPU (GPU
threads as serial loops) matches numpy's direct convolution with the weights the pre-transformed
kernel came from, at ResNet-18's 3x3 stride-1 layers scaled down (ragged last tiles included).

The default run proves F(2x2) at one small shape (the fallback on both architectures, one
sampled point on sm_90) and F(4x4)'s fallback on sm_90; ``-m slow`` proves the fallback and four sampled points per
architecture at two shapes and runs a point on the SIMT interpreter (the shared-memory fetches
and their barriers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.cuda import ARCHS, cpu_reference, needs_ptxas, simt_check_points

from vdla.compiler.autotvm import measure_cuda as M
from vdla.compiler.autotvm.measure import LocalBuilder, MeasureErrorNo, _reference
from vdla.compiler.autotvm.space import ConfigEntity
from vdla.compiler.autotvm.task import Task, TaskError, create
from vdla.compiler.autotvm.templates import cuda_winograd as W
from vdla.compiler.topi import testing as ref
from vdla.compiler.topi.winograd import winograd_weight, winograd_weight_nchw

NAME = "conv2d_nchw_winograd.cuda"


def _args(c: int, oc: int, size: int, m: int) -> list[Any]:
    return [[1, c, size, size], [oc, c, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], m]


#: ResNet-18's 3x3 stride-1 layers scaled down: C2 (64 channels, 56x56) as 16 channels at 14x14
#: (F(4x4): 4 tiles a side, the last of 2 pixels), C12 (512 channels, 7x7) as 32 at 7x7 (both
#: tile sizes ragged)
SHAPES = {"C2": (16, 16, 14), "C12": (32, 32, 7)}


def _task(layer: str, m: int, arch: str = "sm_80") -> Task:
    return create(NAME, _args(*SHAPES[layer], m), f"cuda -arch={arch}")


def _check_direct(task: Task, cfg: ConfigEntity, seed: int = 0) -> None:
    """The point's loop IR (threads as loops, built for llvm) against numpy's direct convolution."""
    rng = np.random.default_rng(seed)
    data, kernel, _, padding, _, m = task.args
    x = rng.standard_normal(tuple(data)).astype(np.float32)
    w = rng.standard_normal(tuple(kernel)).astype(np.float32)
    s, tensors = task.instantiate(cfg)
    (got,) = cpu_reference(s, tensors, [x, winograd_weight_nchw(w, m)])
    want = ref.conv2d_nchw(x, w, 1, padding[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _build(task: Task, cfg: ConfigEntity) -> M.CudaBuild | M.MeasureResult:
    return M.build_one(None, task.name, task.args, task.target, cfg.to_json_dict(), LocalBuilder(120))


def _sample(task: Task, n: int, seed: int) -> list[tuple[ConfigEntity, M.CudaBuild]]:
    """``n`` random points that build and that ptxas assembles (invalid ones say why)."""
    rng = np.random.default_rng(seed)
    got = []
    for _ in range(40 * n):
        cfg = task.config_space.get(int(rng.integers(len(task.config_space))))
        r = _build(task, cfg)
        if isinstance(r, M.CudaBuild):
            got.append((cfg, r))
            if len(got) == n:
                return got
        else:
            assert r.error_no in (MeasureErrorNo.INSTANTIATION_ERROR, MeasureErrorNo.COMPILE_DEVICE), r.error_msg
    raise AssertionError(f"{task}: only {len(got)} of {n} sampled points build")


def _prove(layer: str, m: int, n: int, seed: int, archs: tuple[str, ...], hand_archs: tuple[str, ...] = ARCHS) -> None:
    """The fallback proven for each of ``hand_archs``, ``n`` sampled points for each of ``archs``;
    all of them checked on the CPU against the direct convolution (once: the loop IR does not
    depend on the architecture)."""
    for arch in hand_archs:
        task = _task(layer, m, arch)
        fb = task.config_space.get(task.fallback().index)
        hand = _build(task, fb)
        assert isinstance(hand, M.CudaBuild), hand.error_msg
        assert hand.arch == arch and hand.report and len(hand.kernels) == 3  # the transforms and the GEMM
        points = _sample(task, n, seed) if arch in archs else []
        assert all(k.registers > 0 for _, b in points for k in b.kernels)
        if arch == hand_archs[0]:
            for cfg in [fb, *(c for c, _ in points)]:
                _check_direct(task, cfg)


@needs_ptxas
def test_f2x2_points_prove_and_compute() -> None:
    _prove("C12", 2, 1, seed=5, archs=("sm_90",))


@needs_ptxas
def test_f4x4_fallback_proves_and_computes() -> None:
    """F(4x4)'s 36 tile positions unrolled make its builds the slow ones: the fallback on sm_90 here."""
    _prove("C12", 4, 0, seed=5, archs=(), hand_archs=("sm_90",))


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("layer", list(SHAPES))
@pytest.mark.parametrize("m", [2, 4])
def test_winograd_four_points_per_arch(layer: str, m: int) -> None:
    _prove(layer, m, 4, seed=13, archs=ARCHS)


def test_the_space_and_its_fallback() -> None:
    """TVM's knobs; the hand tiles are a point; the workload is the direct one's args and m."""
    task = _task("C2", 4)
    assert task.config_space.knob_names() == ["tile_b", "tile_y", "tile_x", "tile_rc", "auto_unroll_max_step",
                                              "unroll_explicit"]
    assert len(task.config_space.space_map["tile_b"]) == 1  # a block per tile position, as TVM's
    fb = task.fallback()
    assert fb.index is not None
    # 14x14 outputs in 4x4 tiles: 16 tiles; 36 tile positions
    assert fb.knobs()["tile_b"] == [36, 1, 1, 1] and fb.knobs()["tile_x"] == [1, 1, 16, 1]
    assert task.workload == [NAME, task.args]
    assert task.flop == 2.0 * 16 * 14 * 14 * 16 * 9  # the direct convolution's, as TVM counts it


def test_winograd_args_and_refusals() -> None:
    direct = [[1, 64, 56, 56], [64, 64, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]
    assert W.winograd_args(direct, 4) == [*direct, 4]
    assert W.winograd_args([*direct[:2], [2, 2], *direct[3:]], 4) is None  # stride 2
    assert W.winograd_args([direct[0], [64, 64, 1, 1], *direct[2:]], 2) is None  # 1x1
    assert W.winograd_args(direct, 3) is None  # no F(3x3, 3x3) transform here
    with pytest.raises(TaskError, match="stride 1"):
        create(NAME, [*direct[:2], [2, 2], *direct[3:], 2], "cuda")
    with pytest.raises(TaskError, match="serves target 'cuda'"):
        create(NAME, [*direct, 2], "llvm")


def test_the_reference_is_the_direct_convolution() -> None:
    """The measurement's inputs are a transformed OIHW kernel; its reference recovers the weights."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 4, 3, 3))
    for m in (2, 4):
        u = winograd_weight_nchw(w, m)
        assert u.shape == ((m + 2) ** 2, 4, 8)
        np.testing.assert_array_equal(u.reshape(-1), winograd_weight(w, m, 4, 8).reshape(-1))
        np.testing.assert_allclose(W.unpack_weight(u, m), w, rtol=1e-5, atol=1e-5)
    task = _task("C12", 2)
    s, tensors = task.instantiate(task.fallback())
    ins, want = _reference(task, tensors)
    w = W.unpack_weight(ins[1], 2)
    np.testing.assert_allclose(want[0], ref.conv2d_nchw(ins[0], w, 1, 1), rtol=1e-5, atol=1e-5)


def test_a_ragged_asymmetric_point_on_the_cpu() -> None:
    """An odd output (9x11, asymmetric padding) and a batch of 2: the tiles span the batch."""
    task = create(NAME, [[2, 8, 8, 10], [8, 8, 3, 3], [1, 1], [1, 1, 2, 2], [1, 1], 2], "cuda")
    s, tensors = task.instantiate(task.fallback())
    ins, want = _reference(task, tensors)
    (got,) = cpu_reference(s, tensors, ins)
    assert got.shape == (2, 8, 9, 11)
    np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-4 * float(np.abs(want[0]).max()))


@pytest.mark.slow
def test_winograd_on_the_simt_interpreter() -> None:
    """Two points' kernels with their threads in lockstep between barriers (support.simt): the
    GEMM's cooperative fetches, which threads-as-loops cannot check."""
    simt_check_points(NAME, [[1, 8, 5, 5], [8, 8, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 2], n=2, seed=4)

