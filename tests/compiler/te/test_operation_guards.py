"""Declaration-time guards of te.compute: reads past an input's shape, constant zero divisors.

A read past the shape raises when the schedule is created (a scan's update may read
``state[t - 1]``, valid only over the scan's time range), with a message naming the
tensor, the axis and its extent; a constant zero divisor raises at `te.compute`. Guarded
reads (padding written with if_then_else), reads that stay inside, and scans are accepted.
"""

from __future__ import annotations

import pytest

from vdla import te
from vdla.compiler.te.operation import TensorError
from vdla.compiler.tir.nodes import ZeroDivisorError

A = te.placeholder((4, 6), "int32", name="A")


def _rows8():
    return te.compute((8, 6), lambda i, j: A[i, j], name="C")


def _reduce_past_columns():
    k = te.reduce_axis((0, 9), name="k")
    return te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="R")


def _negative():
    return te.compute((4, 6), lambda i, j: A[i - 1, j], name="N")


def _shifted():
    return te.compute((4, 4), lambda i, j: A[i, j + 3], name="S")


BAD = [
    (_rows8, "compute 'C' reads A[i, j] outside its shape (4, 6): axis 0 has extent 4 but index i ranges over 0..7"),
    (_reduce_past_columns, "axis 1 has extent 6 but index k ranges over 0..8"),
    (_negative, "axis 0 has extent 4 but index (i - 1) ranges over -1..2"),
    (_shifted, "axis 1 has extent 6 but index (j + 3) ranges over 3..6"),
]


@pytest.mark.parametrize("make,message", BAD, ids=[f.__name__ for f, _ in BAD])
def test_read_past_the_shape_is_an_error_naming_tensor_axis_extent(make, message):
    t = make()
    with pytest.raises(TensorError) as e:
        te.create_schedule(t.op)
    assert message in str(e.value)


GOOD = [
    lambda: te.compute((4, 6), lambda i, j: A[i, j]),
    lambda: te.compute((2, 3), lambda i, j: A[2 * i + 1, 2 * j + 1]),
    lambda: te.compute((8, 6), lambda i, j: te.if_then_else(i < 4, A[te.min(i, 3), j], 0)),
    lambda: te.compute((6, 6), lambda i, j: te.if_then_else(te.all(i >= 1, i < 5), A[i - 1, j], 0)),
    lambda: te.compute((8,), lambda i: A[i // 2, i % 6]),
]


@pytest.mark.parametrize("k", range(len(GOOD)))
def test_reads_inside_the_shape_or_guarded_are_accepted(k):
    te.create_schedule(GOOD[k]().op)


def test_scan_reading_the_previous_step_is_accepted_and_checked_over_its_time_range():
    X = te.placeholder((5, 3), "float32", name="X")
    for shift, ok in ((1, True), (2, False)):  # init has 1 step: t - 2 reaches step -1
        state = te.placeholder((5, 3), "float32", name="state")
        init = te.compute((1, 3), lambda _, i: X[0, i], name="init")
        upd = te.compute((5, 3), lambda t, i: state[t - shift, i] + X[t, i], name="upd")  # noqa: B023
        res = te.scan(init, upd, state, inputs=[X])
        if ok:
            te.create_schedule(res.op)
        else:
            with pytest.raises(TensorError, match="axis 0 has extent 5 but index \\(t - 2\\) ranges over -1..2"):
                te.create_schedule(res.op)


@pytest.mark.parametrize("op,sym", [("floordiv", "//"), ("floormod", "%"), ("truncdiv", "truncdiv"),
                                    ("truncmod", "truncmod")])
def test_constant_zero_divisor_is_an_error_at_declaration(op, sym):
    with pytest.raises(ZeroDivisorError, match=f"integer division by the constant 0: A\\[i, j\\] {sym} 0"):
        te.compute((4, 6), lambda i, j: getattr(te, op)(A[i, j], 0))
    assert issubclass(ZeroDivisorError, ZeroDivisionError)


def test_float_division_by_zero_stays_ieee():
    F = te.placeholder((4,), "float32", name="F")
    te.compute((4,), lambda i: F[i] / 0.0)  # inf/nan, as numpy: defined
