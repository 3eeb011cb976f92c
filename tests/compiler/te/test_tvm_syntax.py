"""TVM spellings in tensor expressions: A(*i), >> and << on integers, float extents (N / bn)."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.te.operation import TensorError
from vdla.compiler.tir.nodes import IRError


def _run(outs, args, inputs, out_shape, out_dtype):
    s = te.create_schedule(outs.op)
    f = vdla.build(s, args, "llvm")
    out = np.zeros(out_shape, out_dtype)
    f(*inputs, out)
    return out


def test_call_syntax_is_indexing():
    A = te.placeholder((2, 3, 4), "int32", name="A")
    B = te.compute(A.shape, lambda *i: A(*i) + 1, name="B")
    x = np.arange(24, dtype="int32").reshape(2, 3, 4)
    np.testing.assert_array_equal(_run(B, [A, B], [x], (2, 3, 4), "int32"), x + 1)
    with pytest.raises(TensorError, match="indexed with 2"):
        A(0, 1)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "int64"])
def test_shifts_match_numpy(dtype):
    rng = np.random.default_rng(2)
    print("seed 2", dtype)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=64, dtype=dtype)
    A = te.placeholder((64,), dtype, name="A")
    R = te.compute((64,), lambda i: (A[i] >> 3) + (A[i] << 1), name="R")
    want = (x >> 3) + (x << 1).astype(dtype)
    np.testing.assert_array_equal(_run(R, [A, R], [x], (64,), dtype), want.astype(dtype))


def test_shift_on_floats_is_an_error():
    A = te.placeholder((4,), "float32", name="A")
    with pytest.raises(IRError, match="integers"):
        A[0] >> 1
    assert str(2 << te.var("n")).startswith("shift_left")


def test_float_extent_converted_as_tvm():
    N, bn = 64, 16
    B = te.placeholder((N,), "float32", name="B")
    P = te.compute((N / bn, bn), lambda x, z: B[x * bn + z], name="P")
    assert [int(s.value) for s in P.shape] == [4, 16]
    with pytest.raises(TensorError, match="not a whole number"):
        te.compute((N / 3,), lambda i: B[i], name="Q")
    x = np.arange(N, dtype="float32")
    np.testing.assert_array_equal(_run(P, [B, P], [x], (4, 16), "float32"), x.reshape(4, 16))
