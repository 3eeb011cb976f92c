"""The operator library: every operator with its default CPU schedule against numpy.

Table-driven (one row per operator/schedule combination, several with shapes that do
not divide the schedule's split factors) plus hypothesis over shapes for the operators
whose index arithmetic is most error-prone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compile import check

from vdla.compiler import te, topi
from vdla.compiler.targets.llvm import schedules
from vdla.compiler.topi import testing as ref

Case = Callable[[], tuple[Any, list[te.Tensor], list[te.Tensor], Callable[..., Any]]]
CASES: dict[str, Case] = {}
SETTINGS = settings(max_examples=8, deadline=None, derandomize=True)


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def ph(shape: tuple[int, ...], name: str, dtype: str = "float32") -> te.Tensor:
    return te.placeholder(shape, dtype, name=name)


# ---------------------------------------------------------------------------- injective


@case
def relu_4d():
    x = ph((2, 3, 5, 7), "x")
    y = topi.relu(x)
    return schedules.schedule_injective(y), [x], [y], lambda a: np.maximum(a, 0)


@case
def relu_int8():
    x = ph((1000,), "x", "int8")
    y = topi.relu(x)
    return schedules.schedule_injective(y), [x], [y], lambda a: np.maximum(a, 0)


@case
def clip_nondivisible():
    x = ph((37, 11), "x")
    y = topi.clip(x, -0.5, 0.25)
    return schedules.schedule_injective(y), [x], [y], lambda a: np.clip(a, -0.5, 0.25)


@case
def broadcast_add_row():
    a, b = ph((33, 40), "a"), ph((40,), "b")
    y = topi.add(a, b)
    return schedules.schedule_injective(y), [a, b], [y], lambda u, v: u + v


@case
def broadcast_mul_ones():
    a, b = ph((4, 1, 6), "a"), ph((5, 1), "b")
    y = topi.multiply(a, b)
    return schedules.schedule_injective(y), [a, b], [y], lambda u, v: u * v


@case
def broadcast_sub_scalar_and_max():
    a, b = ph((3, 17), "a"), ph((3, 1), "b")
    y = topi.maximum(topi.subtract(a, 1.5), b)
    return schedules.schedule_injective(y), [a, b], [y], lambda u, v: np.maximum(u - 1.5, v)


@case
def broadcast_div_min_chain_inlined():
    a, b = ph((2, 3, 4, 5), "a"), ph((3, 1, 1), "b")
    y = topi.minimum(topi.divide(a, topi.add(topi.multiply(b, b), 1.0)), 0.3)
    return (
        schedules.schedule_injective(y),
        [a, b],
        [y],
        lambda u, v: np.minimum(u / (v * v + 1), 0.3),
    )


@case
def broadcast_int32_floordiv():
    a, b = ph((6, 10), "a", "int32"), ph((10,), "b", "int32")
    y = topi.divide(a, topi.add(topi.maximum(b, 0), 1))
    return schedules.schedule_injective(y), [a, b], [y], lambda u, v: u // (np.maximum(v, 0) + 1)


@case
def bias_add_nchw():
    x, b = ph((2, 8, 5, 5), "x"), ph((8,), "b")
    y = topi.bias_add(x, b)
    return schedules.schedule_injective(y), [x, b], [y], lambda u, v: u + v[None, :, None, None]


@case
def batch_norm_then_relu():
    x = ph((2, 6, 7, 9), "x")
    g, be, m, v = (ph((6,), n) for n in ("gamma", "beta", "mean", "var"))
    pos_var = te.compute((6,), lambda c: te.abs(v[c]), name="abs_var")  # random inputs: keep var >= 0
    y = topi.relu(topi.batch_norm_inference(x, g, be, m, pos_var, epsilon=1e-3))

    def want(x_, g_, b_, m_, v_):  # type: ignore[no-untyped-def]
        c = (1, -1, 1, 1)
        norm = (x_ - m_.reshape(c)) / np.sqrt(np.abs(v_).reshape(c) + 1e-3)
        return np.maximum(norm * g_.reshape(c) + b_.reshape(c), 0)

    return schedules.schedule_injective(y), [x, g, be, m, v], [y], want


# ---------------------------------------------------------------------------- reductions


@case
def softmax_last_axis():
    x = ph((7, 50), "x")
    y = topi.softmax(x)
    return schedules.schedule_softmax(y), [x], [y], ref.softmax


@case
def softmax_middle_axis_3d():
    x = ph((3, 9, 4), "x")
    y = topi.softmax(x, axis=1)
    return schedules.schedule_softmax(y), [x], [y], lambda a: ref.softmax(a, axis=1)


@case
def dense_packed_bias_relu():
    x, w, b = ph((10, 37), "x"), ph((48, 37), "w"), ph((48,), "b")
    y = topi.relu(topi.dense(x, w, b))
    return schedules.schedule_dense(y), [x, w, b], [y], lambda u, v, c: np.maximum(u @ v.T + c, 0)


@case
def dense_unpacked_nondivisible():
    x, w = ph((5, 19), "x"), ph((13, 19), "w")
    y = topi.dense(x, w)
    return schedules.schedule_dense(y), [x, w], [y], lambda u, v: u @ v.T


@case
def dense_int8_int32():
    x, w = ph((4, 24), "x", "int8"), ph((32, 24), "w", "int8")
    y = topi.dense(x, w, out_dtype="int32")
    return schedules.schedule_dense(y), [x, w], [y], lambda u, v: u.astype(np.int32) @ v.T.astype(np.int32)


@case
def maxpool_3x3_s2_pad1():
    x = ph((2, 3, 13, 11), "x")
    y = topi.pool2d(x, 3, 2, 1, "max")
    return schedules.schedule_pool(y), [x], [y], lambda a: ref.pool2d(a, 3, 2, 1, "max")


@case
def avgpool_2x2_include_pad():
    x = ph((1, 4, 9, 9), "x")
    y = topi.pool2d(x, 2, 2, 1, "avg")
    return schedules.schedule_pool(y), [x], [y], lambda a: ref.pool2d(a, 2, 2, 1, "avg")


@case
def avgpool_3x3_exclude_pad():
    x = ph((1, 2, 8, 10), "x")
    y = topi.pool2d(x, 3, 1, 1, "avg", count_include_pad=False)
    return schedules.schedule_pool(y), [x], [y], lambda a: ref.pool2d(a, 3, 1, 1, "avg", False)


@case
def global_avg_pool():
    x = ph((2, 5, 7, 7), "x")
    y = topi.global_pool(x, "avg")
    return schedules.schedule_global_pool(y), [x], [y], lambda a: a.mean(axis=(2, 3), keepdims=True)


@case
def global_max_pool():
    x = ph((2, 5, 6, 3), "x")
    y = topi.global_pool(x, "max")
    return schedules.schedule_global_pool(y), [x], [y], lambda a: a.max(axis=(2, 3), keepdims=True)


# ---------------------------------------------------------------------------- convolutions


@case
def conv2d_nchw_3x3_pad1():
    x, w = ph((1, 5, 12, 20), "x"), ph((8, 5, 3, 3), "w")
    y = topi.conv2d_nchw(x, w, 1, 1)
    return schedules.schedule_conv2d_nchw(y), [x, w], [y], lambda a, b: ref.conv2d_nchw(a, b, 1, 1)


@case
def conv2d_nchw_stride2_nondivisible_bias_relu():
    x, w, b = ph((2, 3, 15, 15), "x"), ph((6, 3, 3, 3), "w"), ph((6,), "b")
    y = topi.relu(topi.bias_add(topi.conv2d_nchw(x, w, 2, 1), b))
    return (
        schedules.schedule_conv2d_nchw(y),
        [x, w, b],
        [y],
        lambda a, k, c: np.maximum(ref.conv2d_nchw(a, k, 2, 1) + c[None, :, None, None], 0),
    )


@case
def conv2d_nchw_dilated_1x1():
    x, w = ph((1, 4, 9, 9), "x"), ph((3, 4, 3, 3), "w")
    y = topi.conv2d_nchw(x, w, 1, 2, dilation=2)
    return schedules.schedule_conv2d_nchw(y), [x, w], [y], lambda a, b: ref.conv2d_nchw(a, b, 1, 2, 2)


def _nchwc_case(n, c, h, oc, k, s, p, cb, ob, tail=False, cfg=None):  # type: ignore[no-untyped-def]
    x = ph((n, c // cb, h, h, cb), "x")
    w = ph((oc // ob, c // cb, k, k, cb, ob), "w")
    y = topi.conv2d_NCHWc(x, w, s, p)
    ins = [x, w]
    if tail:
        b = ph((oc // ob, ob), "b")
        y = te.compute(y.shape, lambda i, f, yy, xx, fb: te.max(y[i, f, yy, xx, fb] + b[f, fb], 0.0), name="bias_relu")
        y.op.tag = "injective"
        ins.append(b)
    sch = schedules.schedule_conv2d_NCHWc(y, cfg)

    def want(a, kk, *bias):  # type: ignore[no-untyped-def]
        out = ref.conv2d_nchw(topi.unpack_nchwc(a), _unpack_kernel(kk), s, p)
        if bias:
            out = np.maximum(out + bias[0].reshape(1, -1, 1, 1), 0)
        return topi.pack_nchwc(out, ob)

    return sch, ins, [y], want


def _unpack_kernel(k: np.ndarray) -> np.ndarray:
    occ, icc, kh, kw, cb, ob = k.shape
    return k.transpose(0, 5, 1, 4, 2, 3).reshape(occ * ob, icc * cb, kh, kw)


@case
def conv2d_nchwc_3x3():
    return _nchwc_case(1, 16, 14, 32, 3, 1, 1, 8, 16)


@case
def conv2d_nchwc_stride2_odd_width_bias_relu():
    return _nchwc_case(1, 8, 15, 16, 3, 2, 1, 4, 8, tail=True)


@case
def conv2d_nchwc_1x1_nondivisible_reg_tile():
    return _nchwc_case(2, 8, 11, 16, 1, 1, 0, 8, 16, cfg=schedules.NCHWcConfig(reg_n=4, unroll_kw=True))


@case
def conv2d_nchwc_rows_per_task_block():
    """tile_oh between 1 and the height: (n, oc-chunk, row block) parallel, rows inside."""
    return _nchwc_case(2, 16, 12, 32, 3, 1, 1, 8, 16, cfg=schedules.NCHWcConfig(tile_oh=4))


@case
def conv2d_nchwc_whole_height_per_task_bias_relu():
    return _nchwc_case(1, 8, 15, 16, 3, 2, 1, 4, 8, tail=True, cfg=schedules.NCHWcConfig(tile_oh=8))


def test_conv2d_nchwc_rows_per_task_must_divide_the_height() -> None:
    x = ph((1, 1, 12, 12, 8), "x")
    w = ph((1, 1, 3, 3, 8, 8), "w")
    y = topi.conv2d_NCHWc(x, w, 1, 1)
    with pytest.raises(ValueError, match="tile_oh=5 does not divide the output height 12"):
        schedules.schedule_conv2d_NCHWc(y, schedules.NCHWcConfig(tile_oh=5))


@case
def depthwise_3x3_pad1():
    x, w = ph((1, 6, 17, 17), "x"), ph((6, 1, 3, 3), "w")
    y = topi.depthwise_conv2d_nchw(x, w, 1, 1)
    return schedules.schedule_depthwise_conv2d_nchw(y), [x, w], [y], lambda a, b: ref.depthwise_conv2d_nchw(a, b, 1, 1)


@case
def depthwise_multiplier2_stride2_relu():
    x, w = ph((2, 3, 12, 12), "x"), ph((3, 2, 3, 3), "w")
    y = topi.relu(topi.depthwise_conv2d_nchw(x, w, 2, 1))
    return (
        schedules.schedule_depthwise_conv2d_nchw(y),
        [x, w],
        [y],
        lambda a, b: np.maximum(ref.depthwise_conv2d_nchw(a, b, 2, 1), 0),
    )


def _depthwise_nchwc_case(h: int, stride: int, relu: bool) -> Any:
    """NCHW[8]c depthwise 3x3, pad 1: the hand pick pads at root (stride 1, wide) or inline."""
    cb, c = 8, 16
    x, w = ph((1, c // cb, h, h, cb), "x"), ph((c // cb, 3, 3, cb), "w")
    y = topi.depthwise_conv2d_NCHWc(x, w, stride, 1)
    y = topi.relu(y) if relu else y

    def want(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        nchw = a.transpose(0, 1, 4, 2, 3).reshape(1, c, h, h)
        kern = b.transpose(0, 3, 1, 2).reshape(c, 1, 3, 3)
        o = ref.depthwise_conv2d_nchw(nchw, kern, stride, 1)
        o = np.maximum(o, 0) if relu else o
        return o.reshape(1, c // cb, cb, *o.shape[2:]).transpose(0, 1, 3, 4, 2)

    return schedules.schedule_depthwise_conv2d_NCHWc(y), [x, w], [y], want


@case
def depthwise_nchwc_wide_stride1_padded_at_root():
    assert not schedules.inline_pad(1, 40)
    return _depthwise_nchwc_case(40, 1, relu=False)


@case
def depthwise_nchwc_stride2_inline_pad_relu():
    assert schedules.inline_pad(2, 20)
    return _depthwise_nchwc_case(40, 2, relu=True)


@case
def depthwise_nchwc_narrow_inline_pad():
    assert schedules.inline_pad(1, 14)
    return _depthwise_nchwc_case(14, 1, relu=False)


@case
def conv2d_transpose_stride2():
    x, w = ph((1, 4, 5, 5), "x"), ph((4, 3, 4, 4), "w")
    y = topi.conv2d_transpose_nchw(x, w, 2, 1)
    return schedules.schedule_conv2d_transpose_nchw(y), [x, w], [y], lambda a, b: ref.conv2d_transpose_nchw(a, b, 2, 1)


@case
def conv2d_transpose_stride3_output_padding():
    x, w = ph((2, 2, 4, 4), "x"), ph((2, 5, 3, 3), "w")
    y = topi.conv2d_transpose_nchw(x, w, 3, 1, output_padding=2)
    return (
        schedules.schedule_conv2d_transpose_nchw(y),
        [x, w],
        [y],
        lambda a, b: ref.conv2d_transpose_nchw(a, b, 3, 1, 2),
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator(name: str) -> None:
    sch, ins, outs, want = CASES[name]()
    tol = 1e-3
    check(sch, ins, outs, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- hypothesis


@SETTINGS
@given(
    sa=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    drop=st.integers(0, 3),
    ones=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_broadcast_shapes(sa: list[int], drop: int, ones: list[bool]) -> None:
    sb = [1 if o else d for d, o in zip(sa, ones, strict=False)][min(drop, len(sa) - 1) :]
    a, b = ph(tuple(sa), "a"), ph(tuple(sb), "b")
    y = topi.add(topi.multiply(a, b), b)
    check(schedules.schedule_injective(y), [a, b], [y], lambda u, v: u * v + v)


@SETTINGS
@given(
    c=st.integers(1, 6),
    oc=st.integers(1, 9),
    h=st.integers(3, 13),
    k=st.sampled_from([1, 3]),
    s=st.integers(1, 2),
    p=st.integers(0, 1),
)
def test_conv2d_nchw_shapes(c: int, oc: int, h: int, k: int, s: int, p: int) -> None:
    x, w = ph((1, c, h, h + 2), "x"), ph((oc, c, k, k), "w")
    y = topi.conv2d_nchw(x, w, s, p)
    check(schedules.schedule_conv2d_nchw(y), [x, w], [y], lambda a, b: ref.conv2d_nchw(a, b, s, p), rtol=1e-4, atol=1e-4)


@SETTINGS
@given(h=st.integers(2, 12), k=st.integers(1, 3), s=st.integers(1, 3), kind=st.sampled_from(["max", "avg"]))
def test_pool_shapes(h: int, k: int, s: int, kind: str) -> None:
    p = min(k - 1, 1)
    if h + 2 * p < k:
        return
    x = ph((1, 2, h, h), "x")
    y = topi.pool2d(x, k, s, p, kind)
    check(schedules.schedule_pool(y), [x], [y], lambda a: ref.pool2d(a, k, s, p, kind), rtol=1e-5, atol=1e-5)


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError, match="cannot be broadcast"):
        topi.add(ph((3, 4), "a"), ph((5,), "b"))
    with pytest.raises(ValueError, match="channels"):
        topi.conv2d_nchw(ph((1, 3, 8, 8), "x"), ph((4, 2, 3, 3), "w"))
    with pytest.raises(ValueError, match="bias_add"):
        topi.bias_add(ph((1, 3, 8, 8), "x"), ph((4,), "b"))
    with pytest.raises(ValueError, match="input features"):
        topi.dense(ph((2, 3), "x"), ph((4, 5), "w"))


def test_operator_count_floor() -> None:
    """Issue 3's floor: at least 25 operator/schedule combinations against numpy."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("codegen_cases", Path(__file__).with_name("test_codegen.py"))
    assert spec is not None and spec.loader is not None
    codegen_cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(codegen_cases)
    assert len(CASES) + len(codegen_cases.CASES) >= 25
