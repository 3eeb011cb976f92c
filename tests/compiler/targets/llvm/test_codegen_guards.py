"""Generated CPU code never traps: division by a run-time zero and failed allocations.

Integer division and remainder by a tensor of zeros (and MIN // -1) give numpy's results,
checked against numpy over every dtype and op; a stage too large to allocate raises a
Python MemoryError naming the buffer, and the function works afterwards.
"""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te

# the zero divisors are the point here: build's warning about them (tir.division) is expected
pytestmark = pytest.mark.filterwarnings("ignore::vdla.compiler.tir.division.IntegerDivisionWarning")
OPS = {"floordiv": np.floor_divide, "floormod": np.mod}


def _build(op, dtype):
    A = te.placeholder((64,), dtype, name="A")
    B = te.placeholder((64,), dtype, name="B")
    C = te.compute((64,), lambda i: getattr(te, op)(A[i], B[i]), name="C")
    return vdla.build(te.create_schedule(C.op), [A, B, C], target="llvm")


def _trunc(op, a, b):
    """C semantics (in Python integers) with numpy's answers where C traps: 0 for x/0 and x%0; MIN/-1 wraps."""
    q, r = [], []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        qi = 0 if y == 0 else abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        q.append(qi)
        r.append(0 if y == 0 else x - y * qi)
    bits, signed = a.dtype.itemsize * 8, a.dtype.kind == "i"
    wrap = [(v + (1 << (bits - 1)) * signed) % (1 << bits) - (1 << (bits - 1)) * signed
            for v in (q if op == "truncdiv" else r)]
    return np.array(wrap, dtype=a.dtype)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("op", ["floordiv", "floormod", "truncdiv", "truncmod"])
def test_division_by_zero_and_overflow_give_numpy_results(op, dtype):
    seed = 17
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(-3 if info.min < 0 else 0, 3, 64, dtype=dtype, endpoint=True)
    b[:8] = 0
    a[8] = info.min
    b[8] = -1 if info.min < 0 else 1
    c = np.zeros(64, dtype)
    _build(op, dtype)(a, b, c)
    if op in OPS:
        with np.errstate(all="ignore"):
            want = OPS[op](a, b)
    else:
        want = _trunc(op, a, b)
    assert np.array_equal(c, want), f"seed {seed} {op} {dtype}: a={a[:10]} b={b[:10]} got {c[:10]} want {want[:10]}"


def _two_stage(shape_fn):
    n = te.var("n")
    X = te.placeholder((n,), "float32", name="X")
    T = te.compute(shape_fn(n), lambda *idx: X[idx[0]] * 2.0, name="T_big")
    Y = te.compute((n,), lambda i: T[(i,) + (0,) * (len(T.shape) - 1)] + 1.0, name="Y")
    return vdla.build(te.create_schedule(Y.op), [X, Y], target="llvm")


def test_allocation_that_overflows_is_a_memory_error_naming_the_buffer():
    f = _two_stage(lambda n: (n, n, n, n))
    x, y = np.ones(100_000, np.float32), np.zeros(100_000, np.float32)
    with pytest.raises(MemoryError, match="cannot allocate buffer 'T_big'"):
        f(x, y)
    x, y = np.ones(10, np.float32), np.zeros(10, np.float32)  # still usable
    f(x, y)
    assert np.array_equal(y, np.full(10, 3.0, np.float32))


def test_constant_allocation_too_large_is_a_memory_error():
    X = te.placeholder((4,), "float32", name="X")
    T = te.compute((1 << 30, 1 << 20), lambda i, j: X[0] + 1.0, name="T_huge")  # 4 PiB
    Y = te.compute((4,), lambda i: T[i, 0] * X[i], name="Y")
    f = vdla.build(te.create_schedule(Y.op), [X, Y], target="llvm")
    with pytest.raises(MemoryError, match=r"cannot allocate buffer 'T_huge': \d+ bytes"):
        f(np.ones(4, np.float32), np.zeros(4, np.float32))
