"""Schedule.rfactor, Stage.set_store_predicate, multiple outputs and tuple reducers on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te, tir
from vdla.compiler.schedule.primitives import ScheduleError
from vdla.compiler.te.operation import TensorError


def _sum_rows():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B


@pytest.mark.parametrize("part, factor, factor_axis, shape", [
    ("inner", 16, 0, (70, 37)), ("outer", 4, 0, (9, 33)), ("inner", 5, 1, (8, 25)), ("root", None, 0, (6, 11)),
])
def test_rfactor_matches_numpy(part, factor, factor_axis, shape):
    A, B = _sum_rows()
    s = te.create_schedule(B.op)
    k = B.op.reduce_axis[0]
    if part == "root":
        axis = k
    else:
        ko, ki = s[B].split(k, factor=factor)
        axis = ki if part == "inner" else ko
    BF = s.rfactor(B, axis, factor_axis=factor_axis)
    assert BF.ndim == 2 and len(s[B].op.reduce_axis) == 1
    xo, xi = s[B].split(s[B].op.axis[0], factor=4)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0] if factor_axis == 0 else xi)
    f = vdla.build(s, [A, B], "llvm")
    rng = np.random.default_rng(6)
    print("seed 6", part)
    a = rng.standard_normal(shape).astype("float32")
    b = np.zeros(shape[0], "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-4, atol=1e-5)


def test_rfactor_errors():
    A, B = _sum_rows()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="not a reduction axis"):
        s.rfactor(B, B.op.axis[0])
    s[B].split(B.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match="before the stage's other loops"):
        s.rfactor(B, B.op.reduce_axis[0])
    C = te.compute((4,), lambda i: A[i, 0] * 2, name="C")
    with pytest.raises(ScheduleError, match="not a reduction"):
        s2 = te.create_schedule(C.op)
        s2.rfactor(C, C.op.axis[0])


def test_set_store_predicate():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].set_store_predicate(B.op.axis[0] % 2 == 0)
    f = vdla.build(s, [A, B], "llvm")
    a = np.arange(10, dtype="float32")
    b = np.full(10, -1, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, np.where(np.arange(10) % 2 == 0, a + 1, -1))


def test_tuple_reducer_argmin_with_where():
    def fcombine(x, y):
        keep = x[1] <= y[1]
        return tir.Select(keep, x[0], y[0]), tir.Select(keep, x[1], y[1])

    argmin = te.comm_reducer(fcombine, lambda t0, t1: (tir.const(-1, t0), te.max_value(t1)), name="argmin")
    val = te.placeholder((4, 12), "float32", name="val")
    k = te.reduce_axis((0, 12), "k")
    Idx, V = te.compute((4,), lambda i: argmin((k, val[i, k]), axis=k, where=k > 1), name="T")
    s = te.create_schedule(Idx.op)
    f = vdla.build(s, [val, Idx, V], "llvm")
    rng = np.random.default_rng(7)
    print("seed 7")
    v = rng.standard_normal((4, 12)).astype("float32")
    i_out, v_out = np.zeros(4, "int32"), np.zeros(4, "float32")
    f(v, i_out, v_out)
    np.testing.assert_array_equal(i_out, v[:, 2:].argmin(axis=1) + 2)
    np.testing.assert_array_equal(v_out, v[:, 2:].min(axis=1))


def test_multi_output_errors():
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), "k")
    with pytest.raises(TensorError, match="one tuple reduction"):
        te.compute((1,), lambda i: (te.sum(A[k], axis=k), A[0]), name="mixed")
    B0, B1 = te.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="B")
    assert (B0.name, B1.name, B1.value_index) == ("B.v0", "B.v1", 1)
    s = te.create_schedule(B0.op)
    f = vdla.build(s, [A, B1, B0], "llvm")  # any order; both outputs written
    a = np.arange(4, dtype="float32")
    o1, o0 = np.zeros(4, "float32"), np.zeros(4, "float32")
    f(a, o1, o0)
    np.testing.assert_array_equal(o0, a + 1)
    np.testing.assert_array_equal(o1, a * 2)
