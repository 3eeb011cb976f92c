"""Operator × schedule combinations built for the host CPU and checked against numpy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.compile import check

from vdla.compiler import te

Case = Callable[[], tuple[Any, list[te.Tensor], list[te.Tensor], Callable[..., Any]]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _ew(n: int = 37, dtype: str = "float32") -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((n,), dtype, name="A")
    B = te.placeholder((n,), dtype, name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return A, B, C


@case
def add_default():
    A, B, C = _ew()
    return te.create_schedule(C.op), [A, B], [C], lambda a, b: a + b


@case
def add_split_nondivisible():
    A, B, C = _ew(37)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=8)
    return s, [A, B], [C], lambda a, b: a + b


@case
def add_split_nparts_nondivisible():
    A, B, C = _ew(37)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], nparts=5)
    return s, [A, B], [C], lambda a, b: a + b


@case
def add_vectorize_nondivisible():
    A, B, C = _ew(37)
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    return s, [A, B], [C], lambda a, b: a + b


@case
def add_vectorize_parallel_exact():
    A, B, C = _ew(256)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    return s, [A, B], [C], lambda a, b: a + b


@case
def add_unroll_inner():
    A, B, C = _ew(30)
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].unroll(xi)
    return s, [A, B], [C], lambda a, b: a + b


@case
def relu_int8_pragma():
    A = te.placeholder((5, 7), "int8", name="A")
    B = te.compute((5, 7), lambda i, j: te.max(A[i, j], te.const(0, "int8")), name="B")
    s = te.create_schedule(B.op)
    s[B].pragma(B.op.axis[0], "dma_copy")
    return s, [A], [B], lambda a: np.maximum(a, 0)


def _matmul(n: int, m: int, k: int, dtype: str = "float32", acc: str = "float32"):
    A = te.placeholder((n, k), dtype, name="A")
    B = te.placeholder((k, m), dtype, name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r].astype(acc) * B[r, j].astype(acc), axis=r), name="C")
    return A, B, C, r


def _mm_ref(a, b):  # type: ignore[no-untyped-def]
    return a.astype(np.float64) @ b.astype(np.float64)


@case
def matmul_default():
    A, B, C, _ = _matmul(13, 17, 19)
    return te.create_schedule(C.op), [A, B], [C], _mm_ref


@case
def matmul_tile_vectorize_parallel():
    A, B, C, r = _matmul(64, 64, 48)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    ko, ki = s[C].split(r, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, [A, B], [C], _mm_ref


@case
def matmul_tile_nondivisible():
    A, B, C, r = _matmul(37, 45, 29)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    ko, ki = s[C].split(r, factor=5)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].unroll(ki)
    return s, [A, B], [C], _mm_ref


@case
def matmul_cache_write_compute_at():
    A, B, C, r = _matmul(37, 45, 29)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    ko, ki = s[CC].split(r, factor=4)
    s[CC].reorder(ko, ic, ki, jc)
    s[CC].vectorize(jc)
    s[CC].unroll(ic)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, [A, B], [C], _mm_ref


@case
def matmul_int8_int32():
    A, B, C, r = _matmul(16, 24, 40, "int8", "int32")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(C.op.axis[0], jo, r, ji)
    s[C].vectorize(ji)
    return s, [A, B], [C], lambda a, b: a.astype(np.int32) @ b.astype(np.int32)


@case
def matmul_reduce_outer_fuse_parallel():
    A, B, C, r = _matmul(12, 20, 9)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    f = s[C].fuse(i, j)
    fo, fi = s[C].split(f, factor=7)
    s[C].parallel(fo)
    return s, [A, B], [C], _mm_ref


@case
def matmul_packed_b():
    n, bn = 32, 8
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="r")
    PB = te.compute((n // bn, n, bn), lambda x, y, z: B[y, x * bn + z], name="PB")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, r] * PB[j // bn, r, j % bn], axis=r), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, bn)
    s[C].reorder(io, jo, r, ii, ji)
    s[C].vectorize(ji)
    s[PB].vectorize(PB.op.axis[2])
    s[PB].parallel(PB.op.axis[0])
    return s, [A, B], [C], _mm_ref


@case
def row_sum_split_reduce():
    A = te.placeholder((9, 23), name="A")
    k = te.reduce_axis((0, 23), name="k")
    B = te.compute((9,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=5)
    s[B].reorder(ko, B.op.axis[0], ki)
    return s, [A], [B], lambda a: a.sum(axis=1)


@case
def row_max_int16():
    A = te.placeholder((6, 11), "int16", name="A")
    k = te.reduce_axis((0, 11), name="k")
    B = te.compute((6,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].split(k, nparts=3)
    return s, [A], [B], lambda a: a.max(axis=1)


@case
def col_min_vectorized():
    A = te.placeholder((13, 32), name="A")
    k = te.reduce_axis((0, 13), name="k")
    B = te.compute((32,), lambda j: te.min(A[k, j], axis=k), name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[0], factor=16)
    s[B].reorder(jo, k, ji)
    s[B].vectorize(ji)
    return s, [A], [B], lambda a: a.min(axis=0)


@case
def user_reducer_product_with_where_and_init():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: 1, name="prod")
    A = te.placeholder((4, 6), "int32", name="A")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((4,), lambda i: prod(A[i, k], axis=k, where=k % 2 == 0, init=te.const(3)), name="B")
    s = te.create_schedule(B.op)
    return s, [A], [B], lambda a: 3 * a[:, ::2].prod(axis=1)


@case
def sum_two_axes_int64():
    A = te.placeholder((3, 4, 5), "int64", name="A")
    k1 = te.reduce_axis((0, 4), name="k1")
    k2 = te.reduce_axis((1, 5), name="k2")
    B = te.compute((3,), lambda i: te.sum(A[i, k1, k2] * 3, axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s[B].reorder(k2, B.op.axis[0], k1)
    return s, [A], [B], lambda a: 3 * a[:, :, 1:].sum(axis=(1, 2))


def _conv_decl(n, c, h, w, k, r, pad):  # type: ignore[no-untyped-def]
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((k, c, r, r), name="W")
    P = te.compute(
        (n, c, h + 2 * pad, w + 2 * pad),
        lambda b, ci, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), X[b, ci, y - pad, x - pad], 0.0
        ),
        name="pad",
    )
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, r), name="ry")
    rx = te.reduce_axis((0, r), name="rx")
    oh, ow = h + 2 * pad - r + 1, w + 2 * pad - r + 1
    Out = te.compute(
        (n, k, oh, ow),
        lambda b, ko, y, x: te.sum(P[b, rc, y + ry, x + rx] * W[ko, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv",
    )

    def ref(x, wt):  # type: ignore[no-untyped-def]
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
        out = np.zeros((n, k, oh, ow))
        for dy in range(r):
            for dx in range(r):
                out += np.einsum("nchw,kc->nkhw", xp[:, :, dy : dy + oh, dx : dx + ow], wt[:, :, dy, dx])
        return out

    return X, W, P, Out, ref


@case
def conv2d_pad_inline_vectorized():
    X, W, P, Out, ref = _conv_decl(1, 4, 10, 11, 5, 3, 1)
    s = te.create_schedule(Out.op)
    s[P].compute_inline()
    b, k, y, x = Out.op.axis
    xo, xi = s[Out].split(x, factor=4)
    rc, ry, rx = Out.op.reduce_axis
    s[Out].reorder(b, k, y, xo, rc, ry, rx, xi)
    s[Out].vectorize(xi)
    s[Out].parallel(k)
    return s, [X, W], [Out], ref


@case
def conv2d_pad_compute_at():
    X, W, P, Out, ref = _conv_decl(2, 3, 9, 8, 4, 3, 1)
    s = te.create_schedule(Out.op)
    b, k, y, x = Out.op.axis
    s[P].compute_at(s[Out], b)
    return s, [X, W], [Out], ref


@case
def conv2d_pad_compute_at_row():
    X, W, P, Out, ref = _conv_decl(1, 3, 9, 8, 4, 3, 1)
    s = te.create_schedule(Out.op)
    b, k, y, x = Out.op.axis
    s[Out].reorder(b, y, k, x)
    s[P].compute_at(s[Out], y)
    return s, [X, W], [Out], ref


@case
def maxpool_2x2():
    A = te.placeholder((2, 3, 8, 10), name="A")
    ry = te.reduce_axis((0, 2), name="ry")
    rx = te.reduce_axis((0, 2), name="rx")
    B = te.compute((2, 3, 4, 5), lambda n, c, y, x: te.max(A[n, c, y * 2 + ry, x * 2 + rx], axis=[ry, rx]), name="pool")
    s = te.create_schedule(B.op)
    s[B].parallel(s[B].fuse(B.op.axis[0], B.op.axis[1]))
    return s, [A], [B], lambda a: a.reshape(2, 3, 4, 2, 5, 2).max(axis=(3, 5))


@case
def transpose_tile_fuse_parallel():
    A = te.placeholder((19, 27), name="A")
    B = te.compute((27, 19), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 8)
    s[B].parallel(s[B].fuse(io, jo))
    return s, [A], [B], lambda a: a.T


@case
def bias_add_broadcast_inline_chain():
    A = te.placeholder((6, 16), name="A")
    b = te.placeholder((16,), name="b")
    B1 = te.compute((6, 16), lambda i, j: A[i, j] + b[j], name="bias")
    B2 = te.compute((6, 16), lambda i, j: B1[i, j] * 2.0, name="scale")
    B3 = te.compute((6, 16), lambda i, j: te.max(B2[i, j], 0.0), name="relu")
    s = te.create_schedule(B3.op)
    s[B1].compute_inline()
    s[B2].compute_inline()
    s[B3].vectorize(B3.op.axis[1])
    return s, [A, b], [B3], lambda a, bb: np.maximum((a + bb) * 2, 0)


@case
def softmax_multi_stage():
    A = te.placeholder((5, 12), name="A")
    k1 = te.reduce_axis((0, 12), name="k1")
    mx = te.compute((5,), lambda i: te.max(A[i, k1], axis=k1), name="mx")
    ex = te.compute((5, 12), lambda i, j: te.exp(A[i, j] - mx[i]), name="ex")
    k2 = te.reduce_axis((0, 12), name="k2")
    sm = te.compute((5,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    out = te.compute((5, 12), lambda i, j: ex[i, j] / sm[i], name="softmax")
    s = te.create_schedule(out.op)
    s[mx].compute_at(s[ex], ex.op.axis[0])
    s[sm].compute_at(s[out], out.op.axis[0])

    def ref(a):  # type: ignore[no-untyped-def]
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return s, [A], [out], ref


@case
def reshape_floordiv_floormod():
    A = te.placeholder((6, 7), name="A")
    B = te.compute((42,), lambda i: A[i // 7, i % 7], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    return s, [A], [B], lambda a: a.reshape(-1)


@case
def negative_floordiv_floormod_values():
    A = te.placeholder((20,), "int32", name="A")
    B = te.compute((20,), lambda i: te.floordiv(A[i], 3) * 10 + te.floormod(A[i], 3), name="B")
    return te.create_schedule(B.op), [A], [B], lambda a: (a // 3) * 10 + a % 3


@case
def clip_if_then_else_float16():
    A = te.placeholder((33,), "float16", name="A")
    B = te.compute((33,), lambda i: te.if_then_else(A[i] > 0.5, te.const(0.5, "float16"), A[i]), name="B")
    s = te.create_schedule(B.op)
    return s, [A], [B], lambda a: np.where(a > 0.5, np.float16(0.5), a)


@case
def casts_float_to_int_and_uint8():
    A = te.placeholder((17,), "float32", name="A")
    U = te.placeholder((17,), "uint8", name="U")
    B = te.compute((17,), lambda i: (A[i] * 10.0).astype("int32") + U[i].astype("int32"), name="B")
    s = te.create_schedule(B.op)
    return s, [A, U], [B], lambda a, u: (a * 10).astype(np.int32) + u.astype(np.int32)


@case
def uint8_wraparound_add():
    A = te.placeholder((16,), "uint8", name="A")
    B = te.compute((16,), lambda i: A[i] + te.const(200, "uint8"), name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    return s, [A], [B], lambda a: (a + np.uint8(200)).astype(np.uint8)


@case
def float64_sqrt_tanh():
    A = te.placeholder((9,), "float64", name="A")
    B = te.compute((9,), lambda i: te.sqrt(te.abs(A[i])) + te.tanh(A[i]), name="B")
    s = te.create_schedule(B.op)
    return s, [A], [B], lambda a: np.sqrt(np.abs(a)) + np.tanh(a)


@case
def bool_output_compare():
    A = te.placeholder((10,), "int32", name="A")
    B = te.compute((10,), lambda i: te.any(A[i] > 5, A[i] < -5), name="B")
    s = te.create_schedule(B.op)
    return s, [A], [B], lambda a: (a > 5) | (a < -5)


@case
def cache_read_then_compute_at():
    A = te.placeholder((8, 12), name="A")
    B = te.compute((8, 12), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    s[AA].compute_at(s[B], B.op.axis[0])
    return s, [A], [B], lambda a: a * 3


@case
def compute_root_explicit_3d_tile():
    A = te.placeholder((5, 6, 7), name="A")
    B = te.compute((5, 6, 7), lambda i, j, k: A[i, j, k] + 1.0, name="B")
    C = te.compute((5, 6, 7), lambda i, j, k: B[i, j, k] * B[i, j, k], name="C")
    s = te.create_schedule(C.op)
    s[B].compute_root()
    i, j, k = C.op.axis
    jo, ko, ji, ki = s[C].tile(j, k, 4, 3)
    s[C].parallel(s[C].fuse(i, jo))
    return s, [A], [C], lambda a: (a + 1) ** 2


@case
def sigmoid_vectorized_exp():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: te.sigmoid(A[i]), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    return s, [A], [B], lambda a: 1 / (1 + np.exp(-a))


@case
def topi_matmul_default_schedule():
    from vdla.compiler.targets.llvm.schedules import MatmulConfig, schedule_matmul_cpu
    from vdla.compiler.topi.matmul import matmul

    A, B, C = matmul(20, 128, 37)
    return schedule_matmul_cpu(C, MatmulConfig(mr=4, kc=16, ku=4)), [A, B], [C], _mm_ref


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    sch, ins, outs, ref = CASES[name]()
    tol = 1e-2 if any(t.dtype == "float16" for t in ins + outs) else 1e-4
    check(sch, ins, outs, ref, rtol=tol, atol=tol)


def test_at_least_25_cases() -> None:
    assert len(CASES) >= 25
