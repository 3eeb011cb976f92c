"""Loop-nest generation cases TVM programs rely on: an inlined stage passed as an argument."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te


def test_inlined_argument_is_lowered_with_a_warning():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.warns(UserWarning, match="'B' is inlined.*not written") as rec:
        f = vdla.build(s, [A, B, C], "llvm")
    assert rec[0].filename == __file__  # the warning points at the caller
    a = np.arange(8, dtype="float32")
    b = np.full(8, -7, "float32")
    c = np.zeros(8, "float32")
    f(a, b, c)
    np.testing.assert_array_equal(c, (a + 1) * 2)
    np.testing.assert_array_equal(b, -7)  # as in TVM: the inlined stage is not stored
