"""Winograd's F(m x m, 3 x 3) on NCHW[x]c (:mod:`vdla.compiler.topi.winograd`) with its CPU
schedule (:mod:`vdla.compiler.targets.llvm.schedules.winograd`), checked against the direct
convolution computed by numpy in float64 (an independent method), and the kernels' workspace
allocator that keeps their large intermediate buffers between calls."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vdla
from vdla.compiler import te, topi
from vdla.compiler.graph.ops.nchwc import unpack_winograd_weight
from vdla.compiler.targets.llvm import threadpool
from vdla.compiler.targets.llvm.schedules.winograd import schedule_conv2d_winograd_NCHWc, winograd_tile
from vdla.compiler.topi.conv2d import pack_nchwc, unpack_nchwc
from vdla.compiler.topi.winograd import _unaliased, winograd_matrices, winograd_weight


def _direct(x: np.ndarray, w: np.ndarray, pad: tuple[int, int, int, int]) -> np.ndarray:
    """float64 3x3 correlation of NCHW ``x`` (padding top, left, bottom, right)."""
    pt, pl, pb, pr = pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.float64))
    return out


@pytest.mark.parametrize("m", [2, 4])
def test_transforms_compute_the_correlation_exactly(m: int) -> None:
    """In exact arithmetic, ``A^T [(G g) * (B^T d)]`` is the 1-D correlation of d with g."""
    at, g, bt = winograd_matrices(m)
    rng = np.random.default_rng(m)
    for _ in range(5):
        d = [Fraction(int(v)) for v in rng.integers(-9, 9, m + 2)]
        k = [Fraction(int(v)) for v in rng.integers(-9, 9, 3)]
        u = [sum(g[a][i] * k[i] for i in range(3)) for a in range(m + 2)]
        v = [sum(bt[a][i] * d[i] for i in range(m + 2)) for a in range(m + 2)]
        y = [sum(at[r][a] * u[a] * v[a] for a in range(m + 2)) for r in range(m)]
        assert y == [sum(d[r + j] * k[j] for j in range(3)) for r in range(m)]


def test_an_unknown_tile_is_refused() -> None:
    with pytest.raises(ValueError, match="m=3 has no transform"):
        winograd_matrices(3)
    with pytest.raises(ValueError, match="needs a 3x3 kernel"):
        winograd_weight(np.zeros((8, 8, 5, 5), np.float32), 2, 8, 8)


def test_the_weight_transform_inverts() -> None:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    for m in (2, 4):
        np.testing.assert_allclose(unpack_winograd_weight(winograd_weight(w, m, 8, 16), m), w, rtol=1e-4, atol=1e-5)


#: (channels, out channels, height, width, padding, m, cb, ob): ragged tiles (odd sizes), no
#: padding, uneven padding, both tiles, one and two vectors per block
CASES = [
    (16, 16, 8, 8, (1, 1, 1, 1), 2, 8, 16),
    (16, 32, 7, 7, (1, 1, 1, 1), 2, 16, 16),
    (8, 16, 13, 11, (1, 1, 1, 1), 4, 8, 8),
    (16, 16, 9, 9, (0, 0, 0, 0), 4, 8, 16),
    (8, 8, 6, 10, (1, 0, 2, 1), 2, 8, 8),
    (32, 16, 28, 28, (1, 1, 1, 1), 4, 16, 16),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}@{c[2]}x{c[3]}-m{c[5]}" for c in CASES])
def test_kernel_with_its_tail_matches_the_direct_convolution(case: tuple) -> None:
    c, k, h, w, pad, m, cb, ob = case
    seed = sum(case[:4]) + m
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    bias = rng.standard_normal(k).astype(np.float32)
    want = _direct(x, wt, pad) + bias.reshape(1, -1, 1, 1)
    res = rng.standard_normal(want.shape).astype(np.float32)
    want = np.maximum(want + res, 0)  # the residual block's tail: bias, add, ReLU
    xt = te.placeholder((1, c // cb, h, w, cb), name="x")
    ut = te.placeholder(((m + 2) ** 2, k // ob, c // cb, cb, ob), name="u")
    bt = te.placeholder((1, k // ob, 1, 1, ob), name="b")
    rt = te.placeholder((1, k // ob, *want.shape[2:], ob), name="r")
    y = topi.relu(topi.add(topi.add(topi.conv2d_winograd_NCHWc(xt, ut, pad, m), bt), rt))
    f = vdla.build(schedule_conv2d_winograd_NCHWc(y), [xt, ut, bt, rt, y], "llvm")
    out = np.zeros((1, k // ob, *want.shape[2:], ob), np.float32)
    f(pack_nchwc(x, cb), winograd_weight(wt, m, cb, ob), bias.reshape(1, k // ob, 1, 1, ob), pack_nchwc(res, ob), out)
    np.testing.assert_allclose(unpack_nchwc(out), want, rtol=1e-5, atol=2e-5 * float(np.abs(want).max()))


def test_kernel_without_a_tail() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
    wt = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    xt = te.placeholder((1, 2, 10, 10, 8), name="x")
    ut = te.placeholder((16, 1, 2, 8, 16), name="u")
    y = topi.conv2d_winograd_NCHWc(xt, ut, 1, 2)
    f = vdla.build(schedule_conv2d_winograd_NCHWc(y), [xt, ut, y], "llvm")
    out = np.zeros((1, 1, 10, 10, 16), np.float32)
    f(pack_nchwc(x, 8), winograd_weight(wt, 2, 8, 16), out)
    want = _direct(x, wt, (1, 1, 1, 1))
    np.testing.assert_allclose(unpack_nchwc(out), want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@settings(max_examples=40, deadline=None)
@given(tiles=st.integers(1, 5000), c=st.sampled_from([8, 16, 24, 64, 128, 512]), k=st.sampled_from([8, 16, 64, 256]))
def test_tile_slots_keep_the_planes_off_4k_multiples(tiles: int, c: int, k: int) -> None:
    slots = _unaliased(tiles, (c, k))
    assert tiles <= slots < tiles + 64
    for ch in (c, k):
        assert 256 <= (ch * slots * 4) % 4096 <= 4096 - 256


@pytest.mark.parametrize(("c", "k", "oh", "ow", "m"), [
    (64, 64, 56, 56, 4), (128, 128, 28, 28, 4), (256, 256, 14, 14, 2), (512, 512, 7, 7, 2), (64, 256, 13, 13, 2),
    (32, 128, 27, 27, 4), (8, 64, 56, 56, None), (64, 8, 56, 56, None), (16, 16, 56, 56, 4), (512, 512, 4, 4, None),
    (64, 64, 8, 8, 2),
])
def test_the_cost_rule(c: int, k: int, oh: int, ow: int, m: int | None) -> None:
    assert winograd_tile(c, k, oh, ow) == m


def test_large_intermediates_are_kept_for_the_next_call() -> None:
    """The padded input and the transformed tiles (over 256 KiB: heap, not stack) come back from
    the workspace cache on the second call, and the results stay the same."""
    if threadpool.backend() != "native":
        pytest.skip("the workspace cache is the native pool's")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 32, 40, 40)).astype(np.float32)
    wt = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    xt = te.placeholder((1, 4, 40, 40, 8), name="x")
    ut = te.placeholder((36, 2, 4, 8, 16), name="u")
    y = topi.conv2d_winograd_NCHWc(xt, ut, 1, 4)
    f = vdla.build(schedule_conv2d_winograd_NCHWc(y), [xt, ut, y], "llvm")
    args = [pack_nchwc(x, 8), winograd_weight(wt, 4, 8, 16)]
    outs = [np.zeros((1, 2, 40, 40, 16), np.float32) for _ in range(3)]
    f(*args, outs[0])
    kept = threadpool.workspace_cached_bytes()
    assert kept >= 2 * 36 * 32 * 100 * 4  # V and M, at least
    for o in outs[1:]:
        f(*args, o)
        assert threadpool.workspace_cached_bytes() == kept  # the same buffers, taken and given back
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
