"""Property tests: random shapes and split factors (hypothesis), compared with numpy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler import build, te

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


@SETTINGS
@given(
    n=st.integers(1, 40),
    m=st.integers(1, 40),
    fi=st.integers(1, 12),
    fj=st.integers(1, 12),
    vec=st.booleans(),
    par=st.booleans(),
)
def test_elementwise_2d_tiles(n: int, m: int, fi: int, fj: int, vec: bool, par: bool) -> None:
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * 2.0 - B[j], name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], fi, fj)
    if vec:
        s[C].vectorize(ji)
    if par:
        s[C].parallel(io)
    f = build(s, [A, B, C])
    rng = np.random.default_rng(n * 100 + m)
    a = rng.standard_normal((n, m)).astype("float32")
    b = rng.standard_normal(m).astype("float32")
    c = np.full((n, m), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a * 2 - b, rtol=1e-6)


@SETTINGS
@given(
    n=st.integers(1, 24),
    m=st.integers(1, 24),
    k=st.integers(1, 24),
    fi=st.integers(1, 8),
    fj=st.integers(1, 8),
    fk=st.integers(1, 8),
    cache=st.booleans(),
)
def test_matmul_random_tiles(n: int, m: int, k: int, fi: int, fj: int, fk: int, cache: bool) -> None:
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    if cache:
        CC = s.cache_write(C, "local")
        io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], fi, fj)
        s[CC].compute_at(s[C], jo)
        ko, ki = s[CC].split(r, factor=fk)
        ic, jc = s[CC].op.axis
        s[CC].reorder(ko, ic, ki, jc)
        s[CC].vectorize(jc)
    else:
        io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], fi, fj)
        ko, ki = s[C].split(r, factor=fk)
        s[C].reorder(io, jo, ko, ii, ki, ji)
        s[C].vectorize(ji)
    f = build(s, [A, B, C])
    rng = np.random.default_rng(n + 31 * m + 97 * k)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c = np.full((n, m), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(n=st.integers(1, 30), f1=st.integers(1, 9), f2=st.integers(1, 9))
def test_double_split_and_fuse(n: int, f1: int, f2: int) -> None:
    A = te.placeholder((n, 3), "int32", name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] * 7 - j, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    o, i = s[B].split(fused, factor=f1)
    io, ii = s[B].split(i, nparts=f2)
    s[B].unroll(ii)
    f = build(s, [A, B])
    a = np.arange(n * 3, dtype="int32").reshape(n, 3) - 5
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 7 - np.arange(3))
