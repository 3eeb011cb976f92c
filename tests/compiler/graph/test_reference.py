"""The numpy reference executor against direct loop implementations and exact integer maths."""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import int8

from vdla.compiler.graph import Graph, run
from vdla.compiler.graph.ops import conv2d_nchw, conv2d_transpose_nchw, shift_round


def naive_conv(x, w, stride, pad, dil=1, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64 if x.dtype.kind == "i" else np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - (kh - 1) * dil - 1) // stride + 1
    ow = (wd + 2 * pad - (kw - 1) * dil - 1) // stride + 1
    out = np.zeros((n, o, oh, ow), xp.dtype)
    og = o // groups
    for f in range(o):
        gi = f // og
        for i in range(oh):
            for j in range(ow):
                for ci in range(cg):
                    for a in range(kh):
                        for b in range(kw):
                            out[:, f, i, j] += (
                                xp[:, gi * cg + ci, i * stride + a * dil, j * stride + b * dil] * w[f, ci, a, b]
                            )
    return out


def naive_conv_transpose(x, w, stride, pad, opad=0):
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    full = np.zeros((n, o, (h - 1) * stride + kh + opad, (wd - 1) * stride + kw + opad), np.float64)
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j], w
            )
    return full[:, :, pad : full.shape[2] - pad, pad : full.shape[3] - pad]


@pytest.mark.parametrize(
    "stride,pad,dil,groups", [(1, 1, 1, 1), (2, 0, 1, 1), (2, 1, 2, 1), (1, 1, 1, 2), (1, 1, 1, 4)]
)
def test_conv_float_matches_loops(rng, stride, pad, dil, groups):
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    got = conv2d_nchw(x, w, (stride, stride), (pad,) * 4, (dil, dil), groups)
    np.testing.assert_allclose(got, naive_conv(x, w, stride, pad, dil, groups), rtol=1e-4, atol=1e-4)


def test_conv_int8_is_exact(rng):
    x, w = int8(rng, (1, 16, 6, 6)), int8(rng, (8, 16, 3, 3), -127, 127)
    g = Graph()
    g.add_input("x", x.shape, "int8")
    g.set_outputs(g.add_node("conv2d", ["x", g.add_const("w", w)], padding=1))
    y = run(g, {"x": x})[0]
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, naive_conv(x, w, 1, 1))
    # the worst case for a K=144 int8 dot product is far from float64's 2**53
    xm = np.full((1, 16, 6, 6), -128, np.int8)
    wm = np.full((8, 16, 3, 3), -127, np.int8)
    assert run(g, {"x": xm})[0].max() < 2**31 and conv2d_nchw(xm, wm, (1, 1), (0,) * 4).max() == 128 * 127 * 144


def test_int32_accumulator_wraps_like_hardware():
    g = Graph()
    g.add_input("a", (3,), "int32")
    g.set_outputs(g.add_node("add", ["a", g.add_const("b", np.array([1, 1, -1], np.int32))]))
    a = np.array([2**31 - 1, 5, -(2**31)], np.int32)
    np.testing.assert_array_equal(run(g, a)[0], np.array([-(2**31), 6, 2**31 - 1], np.int32))


@pytest.mark.parametrize("stride,pad,opad", [(1, 0, 0), (2, 1, 0), (2, 1, 1), (3, 2, 1)])
def test_conv_transpose_matches_scatter(rng, stride, pad, opad):
    x = rng.standard_normal((1, 3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    got = conv2d_transpose_nchw(x, w, (stride, stride), (pad,) * 4, (opad, opad))
    want = naive_conv_transpose(x, w, stride, pad, opad)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_shift_rounding_is_vta_realize():
    x = np.array([-9, -8, -7, -5, -4, -3, 0, 3, 4, 5, 7, 8, 2**31 - 1], np.int32)
    # add 2**(n-1), arithmetic shift right n, with the add wrapping at 32 bits
    want = np.array([(int(v) + 4) >> 3 for v in x[:-1]] + [-(2**28)], np.int64)
    np.testing.assert_array_equal(shift_round(x, 3), want.astype(np.int32))
    np.testing.assert_array_equal(shift_round(np.array([3, -3], np.int32), -2), [12, -12])
    g = Graph()
    g.add_input("a", (4,), "int32")
    g.set_outputs(g.add_node("requantize", ["a"], shift=2, min=-127, max=127))
    np.testing.assert_array_equal(run(g, np.array([1000, -1000, 6, -6], np.int32))[0], [127, -127, 2, -1])


def test_quantize_dequantize_like_onnx():
    g = Graph()
    g.add_input("x", (6,))
    q = g.add_node("quantize", ["x"], scale=0.5, dtype="int8")
    g.set_outputs(q, g.add_node("dequantize", [q], scale=0.5))
    x = np.array([0.25, 0.75, -0.25, 100.0, -100.0, 1.1], np.float32)
    qv, dv = run(g, x)
    np.testing.assert_array_equal(qv, [0, 2, 0, 127, -128, 2])  # round half to even, saturate
    np.testing.assert_array_equal(dv, qv.astype(np.float32) * 0.5)


def test_pools(rng):
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    g = Graph()
    g.add_input("x", x.shape)
    mp = g.add_node("max_pool2d", ["x"], kernel=3, strides=2, padding=1)
    ap = g.add_node("avg_pool2d", ["x"], kernel=3, strides=2, padding=1)
    api = g.add_node("avg_pool2d", ["x"], kernel=3, strides=2, padding=1, count_include_pad=True)
    gp = g.add_node("global_avg_pool2d", ["x"])
    g.set_outputs(mp, ap, api, gp)
    m, a, ai, gv = run(g, x)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    for i in range(3):
        for j in range(3):
            win = xp[:, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3]
            np.testing.assert_allclose(m[:, :, i, j], np.nanmax(win, axis=(2, 3)), rtol=1e-6)
            np.testing.assert_allclose(a[:, :, i, j], np.nanmean(win, axis=(2, 3)), rtol=1e-5)
            np.testing.assert_allclose(ai[:, :, i, j], np.nansum(win, axis=(2, 3)) / 9, rtol=1e-5)
    np.testing.assert_allclose(gv[:, :, 0, 0], x.mean(axis=(2, 3)), rtol=1e-5)


def test_int8_max_pool_pads_with_minimum():
    g = Graph()
    g.add_input("x", (1, 1, 2, 2), "int8")
    g.set_outputs(g.add_node("max_pool2d", ["x"], kernel=3, strides=1, padding=1))
    y = run(g, np.full((1, 1, 2, 2), -100, np.int8))[0]
    assert y.dtype == np.int8 and (y == -100).all()


def test_dense_softmax_flatten_concat(rng):
    g = Graph()
    g.add_input("x", (2, 3, 2, 2))
    f = g.add_node("flatten", ["x"])
    c = g.add_node("concat", [f, f], axis=1)
    w = rng.standard_normal((5, 24)).astype(np.float32)
    d = g.add_node("dense", [c, g.add_const("w", w), g.add_const("b", np.arange(5, dtype=np.float32))])
    g.set_outputs(g.add_node("softmax", [d]))
    x = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    y = run(g, x)[0]
    flat = x.reshape(2, 12)
    logits = np.concatenate([flat, flat], 1) @ w.T + np.arange(5)
    e = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5)
