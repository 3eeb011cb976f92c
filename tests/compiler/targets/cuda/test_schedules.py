"""The GPU operator schedules: every one builds for sm_80 and sm_90 with PTX that ptxas accepts, and
its CPU reference (the same loop IR with threads as loops) matches numpy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.cuda import build_all, cpu_reference, needs_ptxas

from vdla.compiler import te, topi
from vdla.compiler.targets.cuda import schedules as S
from vdla.compiler.topi import testing as ref

pytestmark = needs_ptxas
Case = Callable[[np.random.Generator], tuple[Any, list[Any], list[np.ndarray], np.ndarray]]


def _matmul(tiles: S.MatmulTiles, m: int, n: int, k: int) -> Case:
    def make(rng: np.random.Generator) -> Any:
        A, B, C = S.matmul(m, n, k)
        a, b = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
        return S.schedule_matmul(C, tiles), [A, B, C], [a, b], a @ b

    return make


def _dense(rng: np.random.Generator) -> Any:
    x, w = te.placeholder((32, 64), name="x"), te.placeholder((128, 64), name="w")
    y = S.dense(x, w)
    xa, wa = rng.standard_normal((32, 64)).astype("float32"), rng.standard_normal((128, 64)).astype("float32")
    return S.schedule_matmul(y, S.MatmulTiles(bm=32, bn=32, bk=16, tm=2, tn=4, vec=4)), [x, w, y], [xa, wa], xa @ wa.T


def _conv(stride: int, pad: int, relu: bool, tiles: S.Conv2dTiles | None = None) -> Case:
    def make(rng: np.random.Generator) -> Any:
        x, w = te.placeholder((1, 16, 14, 14), name="x"), te.placeholder((32, 16, 3, 3), name="w")
        y = topi.conv2d_nchw(x, w, stride, pad)
        if relu:
            y = topi.relu(y)
        xa = rng.standard_normal((1, 16, 14, 14)).astype("float32")
        wa = rng.standard_normal((32, 16, 3, 3)).astype("float32")
        want = ref.conv2d_nchw(xa, wa, stride, pad)
        return S.schedule_conv2d_nchw(y, tiles or S.Conv2dTiles()), [x, w, y], [xa, wa], np.maximum(want, 0) if relu else want

    return make


def _depthwise(rng: np.random.Generator) -> Any:
    x, w = te.placeholder((1, 8, 15, 15), name="x"), te.placeholder((8, 1, 3, 3), name="w")
    y = topi.relu(topi.depthwise_conv2d_nchw(x, w, 2, 1))
    xa, wa = rng.standard_normal((1, 8, 15, 15)).astype("float32"), rng.standard_normal((8, 1, 3, 3)).astype("float32")
    return S.schedule_depthwise_conv2d_nchw(y), [x, w, y], [xa, wa], np.maximum(ref.depthwise_conv2d_nchw(xa, wa, 2, 1), 0)


def _conv_transpose(rng: np.random.Generator) -> Any:
    x, w = te.placeholder((1, 8, 7, 7), name="x"), te.placeholder((8, 4, 4, 4), name="w")
    y = topi.conv2d_transpose_nchw(x, w, 2, 1)
    xa, wa = rng.standard_normal((1, 8, 7, 7)).astype("float32"), rng.standard_normal((8, 4, 4, 4)).astype("float32")
    return S.schedule_conv2d_transpose_nchw(y), [x, w, y], [xa, wa], ref.conv2d_transpose_nchw(xa, wa, 2, 1)


def _pool(kind: str) -> Case:
    def make(rng: np.random.Generator) -> Any:
        x = te.placeholder((2, 8, 12, 12), name="x")
        y = topi.pool2d(x, 3, 2, 1, kind)
        xa = rng.standard_normal((2, 8, 12, 12)).astype("float32")
        return S.schedule_pool(y), [x, y], [xa], ref.pool2d(xa, 3, 2, 1, kind)

    return make


def _global_avg(rng: np.random.Generator) -> Any:
    x = te.placeholder((2, 16, 7, 7), name="x")
    y = topi.global_pool(x, "avg")
    xa = rng.standard_normal((2, 16, 7, 7)).astype("float32")
    return S.schedule_pool(y), [x, y], [xa], xa.mean(axis=(2, 3), keepdims=True)


def _softmax(rng: np.random.Generator) -> Any:
    x = te.placeholder((6, 100), name="x")
    y = topi.softmax(x)
    xa = rng.standard_normal((6, 100)).astype("float32")
    return S.schedule_softmax(y), [x, y], [xa], ref.softmax(xa)


def _reduce(rng: np.random.Generator) -> Any:
    x = te.placeholder((40, 30), name="x")
    k = te.reduce_axis((0, 30), name="k")
    y = te.compute((40,), lambda i: te.max(x[i, k], axis=k), name="rowmax")
    xa = rng.standard_normal((40, 30)).astype("float32")
    return S.schedule_reduce(y), [x, y], [xa], xa.max(axis=1)


def _fused_elementwise(vec: int) -> Case:
    def make(rng: np.random.Generator) -> Any:
        a, b = te.placeholder((32, 64), name="a"), te.placeholder((64,), name="b")
        y = topi.relu(topi.add(topi.multiply(a, 2.0), b))
        aa, ba = rng.standard_normal((32, 64)).astype("float32"), rng.standard_normal(64).astype("float32")
        return S.schedule_injective(y, num_thread=128, vec=vec), [a, b, y], [aa, ba], np.maximum(aa * 2 + ba, 0)

    return make


CASES: dict[str, Case] = {
    "matmul 64x64 tiles": _matmul(S.MatmulTiles(), 128, 128, 64),
    "matmul 32x64 tiles, 2x8 threads tiles": _matmul(S.MatmulTiles(bm=32, bn=64, bk=8, tm=2, tn=8, vec=2), 64, 128, 32),
    "matmul with 2x2 virtual threads": _matmul(S.MatmulTiles(bm=64, bn=64, bk=16, tm=4, tn=4, vec=4, vt=2), 64, 128, 32),
    "dense": _dense,
    "conv2d 3x3 pad 1 + relu": _conv(1, 1, True),
    "conv2d 3x3 stride 2": _conv(2, 0, False, S.Conv2dTiles(bf=8, ty=3, tx=6, bk=4)),
    "conv2d_transpose 4x4 stride 2": _conv_transpose,
    "depthwise conv2d + relu": _depthwise,
    "max pool": _pool("max"),
    "avg pool": _pool("avg"),
    "global avg pool": _global_avg,
    "softmax": _softmax,
    "row max": _reduce,
    "fused element-wise, vectorised": _fused_elementwise(4),
    "fused element-wise, scalar": _fused_elementwise(1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule(name: str, rng: np.random.Generator) -> None:
    s, args, inputs, want = CASES[name](rng)
    fs = build_all(s, args)
    for f in fs.values():
        assert f.kernels and all(k.threads_per_block <= 1024 for k in f.kernels)
        # "local" tiles live in registers: LLVM promoted every one (no alloca is left for ptxas)
        assert "alloca" not in f.optimized_ir
    (got,) = cpu_reference(s, args, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_tiles_must_divide() -> None:
    A, B, C = S.matmul(100, 64, 64)
    with pytest.raises(ValueError, match="rows 100 is not a multiple of the tile 64"):
        S.schedule_matmul(C)
    A, B, C = S.matmul(64, 64, 64)
    with pytest.raises(ValueError, match="the fetch width 4 must divide bk=2"):
        S.schedule_matmul(C, S.MatmulTiles(bm=64, bn=64, bk=2, tm=4, tn=4, vec=4))
    with pytest.raises(ValueError, match=r"the A tile \(256 elements\) does not split over 256 threads x 4"):
        S.schedule_matmul(C, S.MatmulTiles(bm=64, bn=64, bk=4, tm=4, tn=4, vec=4))


@pytest.mark.parametrize(("ic", "oc", "size", "k", "stride", "pad", "tuned"),
                         [(64, 128, 56, 3, 2, 1, True), (256, 512, 14, 1, 2, 0, True), (64, 128, 56, 3, 1, 1, False),
                          (3, 8, 9, 3, 1, 1, False)],
                         ids=["resnet-C4-padded", "resnet-C11-unpadded", "same-kernel-other-output", "untuned"])
def test_a_convolution_takes_its_tuned_tiles_by_kernel_and_output_shape(ic, oc, size, k, stride, pad, tuned):
    from vdla.compiler.targets.cuda.schedules.conv2d import TUNED_TILES, tiles_for

    x = te.placeholder((1, ic, size, size), name="x")
    w = te.placeholder((oc, ic, k, k), name="w")
    y = topi.conv2d_nchw(x, w, stride, pad)
    out = (size + 2 * pad - k) // stride + 1
    assert tiles_for(y) == (TUNED_TILES[(oc, ic, k, k, out, out)] if tuned else S.Conv2dTiles())
