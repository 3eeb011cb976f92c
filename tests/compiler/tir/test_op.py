"""vdla.tir functions (TVM's tvm.tir): calls, index arithmetic, constants, buffers."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te, tir
from vdla.compiler.tir.nodes import IRError


def _eval(expr_fn, dtype="int32", n=16, seed=5):
    rng = np.random.default_rng(seed)
    print("seed", seed)
    x = rng.integers(-50, 50, n).astype(dtype)
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: expr_fn(A[i], i), name="B")
    f = vdla.build(te.create_schedule(B.op), [A, B], "llvm")
    out = np.zeros(n, B.dtype)
    f(x, out)
    return x, out


@pytest.mark.parametrize(
    "fn, ref",
    [
        (lambda a, i: tir.indexmod(a, 7), lambda x: np.mod(x, 7)),
        (lambda a, i: tir.indexdiv(a, 7), lambda x: np.floor_divide(x, 7)),
        (lambda a, i: tir.floordiv(a, 3) + tir.floormod(a, 3), lambda x: x // 3 + x % 3),
        (lambda a, i: tir.truncdiv(a, 4), lambda x: np.trunc(x / 4).astype("int32")),
        (lambda a, i: tir.truncmod(a, 4), lambda x: np.fmod(x, 4)),
        (lambda a, i: tir.shift_right(a, 2) + tir.shift_left(a, 1), lambda x: (x >> 2) + (x << 1)),
        (lambda a, i: tir.call_intrin("int32", "tir.shift_right", a, 1), lambda x: x >> 1),
        (lambda a, i: a + tir.const(3, "int32"), lambda x: x + 3),
        (lambda a, i: tir.if_then_else(a > 0, a, tir.const(0)), lambda x: np.maximum(x, 0)),
    ],
)
def test_index_and_shift_ops_match_numpy(fn, ref):
    x, out = _eval(fn)
    np.testing.assert_array_equal(out, ref(x))


def test_call_intrin_math_and_errors():
    x, out = _eval(lambda a, i: tir.call_intrin("float32", "tir.exp", a.astype("float32") / 50), "float32")
    np.testing.assert_allclose(out, np.exp(x / 50), rtol=1e-5)
    with pytest.raises(IRError, match="unknown intrinsic 'tir.nope'"):
        tir.call_intrin("float32", "tir.nope", 1.0)
    with pytest.raises(IRError, match="float dtype"):
        tir.call_intrin("int32", "tir.exp", 1)
    with pytest.raises(IRError, match="function name"):
        tir.call_extern("int32", "", 1)
    with pytest.raises(IRError, match="neither a buffer nor a scalar"):
        tir.call_packed("f", object())


def test_const_and_decl_buffer():
    assert tir.const(1.5).dtype == "float32" and tir.const(2, "int8").dtype == "int8"
    b = tir.decl_buffer((4, 6), "int8", name="Bb", strides=[te.var("s"), 1], offset_factor=1)
    assert (b.name, b.dtype, [s.value for s in b.shape]) == ("Bb", "int8", [4, 6])
    assert [str(s) for s in b.strides] == ["6", "1"]
    from vdla.compiler.tir.passes.simplify import simplify_expr

    assert simplify_expr(b.vload([1, 2]).index).value == 8 and str(b[3]) == "Bb[3]"
    assert "Bb" in str(b.access_ptr("r"))
    with pytest.raises(IRError, match="2 dimension"):
        b.vload([1, 2, 3])


def test_ir_builder_shapes_statements():
    n = 8
    A = te.placeholder((n,), "int32", name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        tmp = ib.allocate("int32", (n,), name="tmp")
        with ib.for_range(0, n, name="i") as i:
            tmp[i] = a[i] * 2
        acc = ib.let("three", tir.const(3))
        with ib.for_range(0, n, name="j", kind="unroll") as j:
            with ib.if_scope(j == 0):
                c[j] = tmp[j]
            with ib.else_scope():
                c[j] = tmp[j] + c[j - 1] + acc
        return ib.get()

    C = te.extern((n,), [A], body, name="C")
    f = vdla.build(te.create_schedule(C.op), [A, C], "llvm")
    a = np.arange(n, dtype="int32")
    c = np.zeros(n, "int32")
    f(a, c)
    want = np.cumsum(a * 2) + 3 * np.arange(n)
    np.testing.assert_array_equal(c, want)
    ib = tir.ir_builder.create()
    with pytest.raises(IRError, match="must follow an if_scope"):
        with ib.else_scope():
            pass
    with pytest.raises(IRError, match="expected a buffer"):
        ib.buffer_ptr(A)


def test_tvm_argument_order_of_constants():
    x = tir.IntImm("int8", 3)
    assert (x.value, x.dtype) == (3, "int8") and isinstance(x, tir.IntImm) and not isinstance(x, tir.FloatImm)
    y = tir.FloatImm("float64", 0.5)
    assert (y.value, y.dtype) == (0.5, "float64") and isinstance(y, tir.FloatImm)
    assert isinstance(te.const(2), tir.IntImm)
    s = tir.Select(te.var("a") > 0, 1, 2.5)
    assert s.dtype == "float32"
