"""Tensor-expression declarations: shapes, dtypes, promotion and the errors users see."""

from __future__ import annotations

import pytest

from vdla.compiler import te
from vdla.compiler.te import TensorError
from vdla.compiler.tir.dtypes import DTypeError
from vdla.compiler.tir.nodes import IRError


def test_placeholder_and_compute_shapes() -> None:
    A = te.placeholder((4, 5), "int8", name="A")
    assert A.ndim == 2 and A.dtype == "int8" and A.name == "A"
    B = te.compute((4, 5), lambda i, j: A[i, j].astype("int32") + 1, name="B")
    assert B.dtype == "int32"
    assert [iv.var.name for iv in B.op.axis] == ["i", "j"]
    assert B.op.input_tensors() == [A]


def test_input_tensors_is_a_property_as_in_tvm() -> None:
    """TVM programs index it (``s[conv].op.input_tensors[0]``); vdla's modules call it: one list."""
    A = te.placeholder((8,), name="A")
    P = te.compute((10,), lambda i: A[i % 8], name="P")
    B = te.compute((8,), lambda i: P[i] + A[i], name="B")
    assert B.op.input_tensors[0] is P and B.op.input_tensors == [P, A] == B.op.input_tensors()
    assert A.op.input_tensors == []


def test_unknown_dtype() -> None:
    with pytest.raises(DTypeError, match="unknown dtype 'float8'"):
        te.placeholder((4,), "float8")
    with pytest.raises(DTypeError, match="unknown dtype"):
        te.placeholder((4,), "float32").__getitem__(0).astype("int3")


def test_index_count_mismatch() -> None:
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(TensorError, match=r"'A' has 2 dimension\(s\).*3 index"):
        te.compute((4,), lambda i: A[i, i, i])


def test_fcompute_arity_mismatch() -> None:
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(TensorError, match="takes 1 index argument.*2 dimension"):
        te.compute((4, 5), lambda i: A[i, 0], name="bad")


def test_float_index_rejected() -> None:
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    with pytest.raises(TensorError, match="must be a scalar integer"):
        te.compute((4,), lambda i: A[B[i]])


def test_negative_shape() -> None:
    with pytest.raises(TensorError, match="negative"):
        te.placeholder((3, -1))


def test_reduce_axis_outside_reduction() -> None:
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(TensorError, match="reduce axis 'k' is used outside a reduction"):
        te.compute((4,), lambda i: A[i, k], name="C")
    with pytest.raises(TensorError, match="reduce axis 'k' is used outside a reduction"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k, init=A[i, k]), name="C")


def test_reduction_must_be_top_level() -> None:
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(TensorError, match="top level"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1.0, name="C")


def test_reduce_requires_reduce_axis() -> None:
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(TensorError, match="not a reduction axis"):
        te.compute((4, 5), lambda i, j: te.sum(A[i, j], axis=j))
    k = te.reduce_axis((0, 5))
    with pytest.raises(TensorError, match="'axis'"):
        te.sum(A[0, k])


def test_dtype_promotion() -> None:
    A = te.placeholder((4,), "int8", name="A")
    B = te.placeholder((4,), "int32", name="B")
    F = te.placeholder((4,), "float16", name="F")
    assert (A[0] + B[0]).dtype == "int32"
    assert (A[0] + 1).dtype == "int8"  # Python ints take the tensor's dtype
    assert (A[0] * 2.5).dtype == "float32"
    assert (F[0] + A[0]).dtype == "float16"
    assert (F[0] + 1.0).dtype == "float16"
    assert (A[0] < B[0]).dtype == "bool"


def test_integer_true_division_is_an_error() -> None:
    A = te.placeholder((4,), "int32", name="A")
    with pytest.raises(IRError, match="use '//'"):
        te.compute((4,), lambda i: A[i] / 2)


def test_floordiv_floormod_builders() -> None:
    i = te.var("i")
    assert str(i // 4) == "floordiv(i, 4)"
    assert str(te.floormod(i, 4)) == "floormod(i, 4)"
    assert str(te.truncdiv(i, 4)) == "truncdiv(i, 4)"


def test_expression_truth_value_is_an_error() -> None:
    i = te.var("i")
    with pytest.raises(IRError, match="truth value"):
        bool(i < 3)
    # == keeps identity semantics so expressions work as dict keys
    d = {i: 1}
    assert d[i] == 1


def test_const_and_max_min_binary() -> None:
    assert te.const(3).dtype == "int32"
    assert te.const(3, "int8").dtype == "int8"
    with pytest.raises(IRError, match="does not fit"):
        te.const(300, "int8")
    x = te.var("x", "float32")
    assert str(te.max(x, 0.0)) == "max(x, 0.0f)"
    assert te.min(x, 1.0).dtype == "float32"


def test_comm_reducer_identity() -> None:
    prod = te.comm_reducer(lambda a, b: a * b, lambda t: 1, name="prod")
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((3,), lambda i: prod(A[i, k], axis=k), name="B")
    assert B.op.reduce_axis[0] is k
    assert str(prod.identity("float32")) == "1.0f"
    assert str(te.max.identity("int8")) == "int8(-128)"


def test_reduce_axis_domain() -> None:
    k = te.reduce_axis((2, 10), name="k")
    assert str(k.dom.min) == "2" and str(k.dom.extent) == "8"
    n = te.var("n")
    k2 = te.reduce_axis((0, n), name="k2")
    assert k2.dom.extent is n


def test_symbolic_shape() -> None:
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0, name="B")
    assert B.shape[0] is n
