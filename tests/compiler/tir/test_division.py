"""Integer division by a run-time zero (vdla.compiler.tir.division): the llvm and cuda targets
give 0, quotient and remainder alike (TVM leaves it undefined), and ``vdla.build`` says so
where a divisor is read from a tensor and nothing tests it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.tir.division import IntegerDivisionWarning
from vdla.compiler.tir.nodes import ZeroDivisorError

N = 8
A = te.placeholder((N,), "int32", name="A")
B = te.placeholder((N,), "int32", name="B")
a = np.arange(-4, 4, dtype=np.int32)
b = np.array([0, 1, 2, 0, -1, 3, 0, 2], np.int32)

ADVICE = "If 0 can occur, choose the result: te.if_then_else("


def _warning(expr: str, divisor: str, target: str = "llvm") -> str:
    return (f"main: {expr} divides int32 by a tensor's values: where the divisor is 0 the {target} target gives 0, "
            f"quotient and remainder alike (numpy's values; TVM leaves integer division by zero undefined). "
            f"{ADVICE}{divisor} == 0, VALUE, ...)")


def _build(fn, target: str = "llvm") -> tuple[object, list[str]]:
    C = te.compute((N,), fn, name="C")
    s = te.create_schedule(C.op)
    if target == "cuda":
        s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = vdla.build(s, [A, B, C], target=target)
    return f, [str(w.message) for w in caught if issubclass(w.category, IntegerDivisionWarning)]


@pytest.mark.parametrize(("fn", "want", "warning"), [
    # the divisor is B[i], 0 at indices 0, 3 and 6: the quotient and the remainder are 0 there
    (lambda i: A[i] // B[i], [0, -3, -1, 0, 0, 0, 0, 1], _warning("floordiv(A[i], B[i])", "B[i]")),
    (lambda i: A[i] % B[i], [0, 0, 0, 0, 0, 1, 0, 1], _warning("floormod(A[i], B[i])", "B[i]")),
    (lambda i: te.truncdiv(A[i], B[i]), [0, -3, -1, 0, 0, 0, 0, 1], _warning("truncdiv(A[i], B[i])", "B[i]")),
    (lambda i: te.truncmod(A[i], B[i]), [0, 0, 0, 0, 0, 1, 0, 1], _warning("truncmod(A[i], B[i])", "B[i]")),
    (lambda i: A[i] // (B[i] + 1), [-4, -2, -1, -1, 0, 0, 2, 1], _warning("floordiv(A[i], (B[i] + 1))", "(B[i] + 1)")),
    # guarded by a test of the divisor: the author chose the value, no warning
    (lambda i: te.if_then_else(B[i] == 0, -1, A[i] // B[i]), [-1, -3, -1, -1, 0, 0, -1, 1], None),
    (lambda i: te.if_then_else(B[i] != 0, A[i] % B[i], 7), [7, 0, 0, 7, 0, 1, 7, 1], None),
    # a constant divisor is never 0 at run time
    (lambda i: A[i] // 3 + B[i] * 0, [-2, -1, -1, -1, 0, 0, 0, 1], None),
])
def test_llvm_zero_divisor_gives_zero_and_warns(fn, want, warning) -> None:
    f, caught = _build(fn)
    assert caught == ([warning] if warning else [])
    c = np.zeros(N, np.int32)
    f(a, b, c)
    assert c.tolist() == want


def test_numpy_gives_the_same_values() -> None:
    """The reference the llvm target matches (numpy warns at run time; the kernel cannot)."""
    with np.errstate(divide="ignore"):
        assert (a // b).tolist() == [0, -3, -1, 0, 0, 0, 0, 1] and (a % b).tolist() == [0, 0, 0, 0, 0, 1, 0, 1]


def test_cuda_build_warns_the_same() -> None:
    """The GPU's code is the CPU's division (PTX built without a GPU)."""
    _, caught = _build(lambda i: A[i] // B[i], "cuda")
    assert caught == [_warning("floordiv(A[i], B[i])", "B[i]", "cuda")]


def test_a_constant_zero_divisor_is_an_error_when_written() -> None:
    with pytest.raises(ZeroDivisorError, match=r"integer division by the constant 0: A\[i\] // 0"):
        te.compute((N,), lambda i: A[i] // 0, name="C")


def test_one_warning_per_function_pointing_at_the_build_call() -> None:
    C = te.compute((N,), lambda i: A[i] // B[i] + A[i] % B[i], name="C")
    s = te.create_schedule(C.op)
    with pytest.warns(IntegerDivisionWarning) as record:
        vdla.build(s, [A, B, C], target="llvm")
    assert len(record) == 1 and record[0].filename == __file__
