"""te.extern: ir_builder bodies (JIT-compiled), call_packed into numpy or into another built
function, several outputs, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te, tir
from vdla.compiler.schedule.primitives import ScheduleError
from vdla.compiler.te.operation import TensorError
from vdla.runtime.packed import PackedFuncError


@pytest.fixture
def registry():
    names = []

    def reg(name, fn):
        vdla.register_func(name, fn, override=True)
        names.append(name)

    yield reg
    from vdla.runtime.packed import remove_global_func

    for n in names:
        remove_global_func(n)


def _addone_ib(ins, outs):
    ib = tir.ir_builder.create()
    a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
    n = ins[0].shape[0]
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(a[i] > 0):
            c[i] = a[i] + 1
        with ib.else_scope():
            c[i] = a[i] * 0
    return ib.get()


def test_ir_builder_extern_feeds_a_compute():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.extern(A.shape, [A], _addone_ib, name="C")
    D = te.compute(A.shape, lambda i: C[i] * 2, name="D")
    s = te.create_schedule(D.op)
    f = vdla.build(s, [A, D], "llvm")
    rng = np.random.default_rng(4)
    print("seed 4")
    a = rng.standard_normal(33).astype("float32")
    d = np.zeros(33, "float32")
    f(a, d)
    np.testing.assert_allclose(d, np.where(a > 0, a + 1, 0) * 2, rtol=1e-6)


def test_packed_numpy_extern(registry):
    seen = []

    def addone(x, y):
        seen.append((type(x).__name__, x.shape, y.dtype))
        y.copyfrom(x.numpy() + 1)

    registry("test.addone", addone)
    A = te.placeholder((4, 5), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed("test.addone", ins[0], outs[0]), name="B")
    s = te.create_schedule(B.op)
    f = vdla.build(s, [A, B], "llvm")
    a = vdla.nd.array(np.arange(20, dtype="float32").reshape(4, 5))
    b = vdla.nd.empty((4, 5), "float32")
    f(a, b)
    np.testing.assert_array_equal(b.numpy(), a.numpy() + 1)
    assert seen == [("NDArray", (4, 5), "float32")]


def test_packed_jit_extern_and_scalars(registry, tmp_path):
    # the packed function is itself a built kernel: it takes the NDArrays it is given
    X = te.placeholder((8,), name="X")
    Y = te.compute((8,), lambda i: X[i] * X[i], name="Y")
    square = vdla.build(te.create_schedule(Y.op), [X, Y], "llvm", name="square")
    calls = []

    def sq_then_scale(x, y, k):
        calls.append(k)
        square(x, y)
        y.copyfrom(y.numpy() * k)

    registry("test.square_scale", sq_then_scale)
    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], lambda ins, outs: tir.call_packed("test.square_scale", ins[0], outs[0], 3),
                  name="B")
    E = te.compute((8,), lambda i: B[i] + 1, name="E")
    f = vdla.build(te.create_schedule(E.op), [A, E], "llvm")
    a = np.arange(8, dtype="float32")
    e = np.zeros(8, "float32")
    f(a, e)
    np.testing.assert_array_equal(e, a * a * 3 + 1)
    assert calls == [3]
    f.export_library(tmp_path / "k.so")  # the call sites are saved and bound again on load
    g = vdla.runtime.load_module(tmp_path / "k.so")
    e2 = np.zeros(8, "float32")
    g(a, e2)
    np.testing.assert_array_equal(e2, e)


def test_packed_errors_are_raised(registry):
    def boom(x, y):
        raise KeyError("inside the packed function")

    registry("test.boom", boom)
    A = te.placeholder((3,), name="A")
    B = te.extern((3,), [A], lambda ins, outs: tir.call_packed("test.boom", ins[0], outs[0]), name="B")
    f = vdla.build(te.create_schedule(B.op), [A, B], "llvm")
    with pytest.raises(KeyError, match="inside the packed function"):
        f(np.zeros(3, "float32"), np.zeros(3, "float32"))
    C = te.extern((3,), [A], lambda ins, outs: tir.call_packed("test.missing", ins[0], outs[0]), name="C")
    g = vdla.build(te.create_schedule(C.op), [A, C], "llvm")
    with pytest.raises(PackedFuncError, match="test.missing"):
        g(np.zeros(3, "float32"), np.zeros(3, "float32"))


def test_two_outputs():
    A = te.placeholder((6,), name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        a, lo, hi = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0]), ib.buffer_ptr(outs[1])
        with ib.for_range(0, 6, name="i") as i:
            lo[i] = a[i] - 1
            hi[i] = a[i] + 1
        return ib.get()

    lo, hi = te.extern([(6,), (6,)], [A], body, name="pm")
    s = te.create_schedule([lo.op])
    f = vdla.build(s, [A, lo, hi], "llvm")
    a = np.arange(6, dtype="float32")
    outs = [np.zeros(6, "float32"), np.zeros(6, "float32")]
    f(a, *outs)
    np.testing.assert_array_equal(outs[0], a - 1)
    np.testing.assert_array_equal(outs[1], a + 1)


def test_extern_errors():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TensorError, match="must return a statement"):
        te.extern((4,), [A], lambda ins, outs: 3, name="bad")
    with pytest.raises(TensorError, match="dtype="):
        te.extern((4,), [], lambda ins, outs: tir.call_packed("x"), name="nodt")
    B = te.compute((4,), lambda i: A[i] * 2, name="B")
    C = te.extern((4,), [B], _addone_ib, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.raises(ScheduleError, match="reads 'B' whole"):
        vdla.lower(s, [A, C])
    with pytest.raises(ScheduleError, match="extern op"):
        s[C].split(None, 2)

def test_registry(registry):
    registry("test.twice", print)
    with pytest.raises(PackedFuncError, match="already registered"):
        vdla.register_func("test.twice", len)
    assert vdla.get_global_func("test.twice") is print

    @vdla.register_func
    def test_bare_name(x):
        return x + 1

    try:
        assert vdla.get_global_func("test_bare_name")(1) == 2
    finally:
        from vdla.runtime.packed import remove_global_func

        remove_global_func("test_bare_name")
    assert vdla.get_global_func("test.none", allow_missing=True) is None
    with pytest.raises(PackedFuncError, match="no global function 'test.none'"):
        vdla.get_global_func("test.none")
