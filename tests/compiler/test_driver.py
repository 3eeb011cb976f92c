"""The driver: build()'s calling convention, argument checking, symbolic shapes, threads, generated code; lower()'s pass trace."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import ArgumentError, build, get_num_threads, lower, set_num_threads, te
from vdla.compiler.targets.llvm.jit import host_info


def _add(n=8, dtype="float32"):  # type: ignore[no-untyped-def]
    A = te.placeholder((n, 4), dtype, name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + A[i, j], name="B")
    return A, B


@pytest.fixture(scope="module")
def f_add():  # type: ignore[no-untyped-def]
    A, B = _add()
    return build(te.create_schedule(B.op), [A, B])


def test_wrong_argument_count(f_add) -> None:  # type: ignore[no-untyped-def]
    a = np.zeros((8, 4), "float32")
    with pytest.raises(ArgumentError, match=r"takes 2 arguments \(A, B\), got 1"):
        f_add(a)


def test_wrong_shape(f_add) -> None:  # type: ignore[no-untyped-def]
    a = np.zeros((8, 4), "float32")
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\): expected shape \(8, 4\), got \(8, 5\)"):
        f_add(a, np.zeros((8, 5), "float32"))
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\): expected 2 dimension\(s\), got shape \(32,\)"):
        f_add(a, np.zeros(32, "float32"))


def test_wrong_dtype(f_add) -> None:  # type: ignore[no-untyped-def]
    a = np.zeros((8, 4), "float64")
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\): expected dtype float32, got float64"):
        f_add(a, np.zeros((8, 4), "float32"))


def test_not_an_array_and_not_contiguous(f_add) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ArgumentError, match="must be a numpy array, got list"):
        f_add([[0.0] * 4] * 8, np.zeros((8, 4), "float32"))
    a = np.zeros((4, 8), "float32").T
    with pytest.raises(ArgumentError, match="must be C-contiguous"):
        f_add(a, np.zeros((8, 4), "float32"))


def test_aliasing_rejected(f_add) -> None:  # type: ignore[no-untyped-def]
    a = np.zeros((8, 4), "float32")
    with pytest.raises(ArgumentError, match="share memory"):
        f_add(a, a)


def test_device_argument_is_accepted(f_add) -> None:  # type: ignore[no-untyped-def]
    a = np.arange(32, dtype="float32").reshape(8, 4)
    b = np.zeros_like(a)
    f_add(object(), a, b)  # f(dev, a, b) as in DESIGN.md
    np.testing.assert_array_equal(b, 2 * a)


def test_symbolic_shape_bound_at_call() -> None:
    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].parallel(xo)
    f = build(s, [A, B])
    for rows in (1, 5, 17):
        a = np.random.rand(rows, 3).astype("float32")
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_allclose(b, 2 * a)
    with pytest.raises(ArgumentError, match="'n' was bound to 5"):
        f(np.zeros((5, 3), "float32"), np.zeros((6, 3), "float32"))


def test_scalar_argument() -> None:
    x = te.var("x", "float32")
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * x, name="B")
    f = build(te.create_schedule(B.op), [A, x, B])
    a = np.arange(6, dtype="float32")
    b = np.zeros_like(a)
    f(a, 2.5, b)
    np.testing.assert_allclose(b, a * 2.5)
    with pytest.raises(ArgumentError, match="must be a Python number"):
        f(a, a, b)


def test_unbound_variable() -> None:
    x = te.var("x", "float32")
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * x, name="B")
    with pytest.raises(ValueError, match="variable 'x' is used but not bound"):
        build(te.create_schedule(B.op), [A, B])


def test_bind_is_rejected_on_cpu() -> None:
    A, B = _add()
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    assert "thread_binding(threadIdx.x)" in str(lower(s, [A, B]))
    with pytest.raises(ValueError, match="needs a GPU target"):
        build(s, [A, B])


def test_unknown_target() -> None:
    A, B = _add()
    with pytest.raises(ValueError, match="unknown target kind 'opencl'.*cuda"):
        build(te.create_schedule(B.op), [A, B], target="opencl")


def test_parallel_uses_thread_count_and_is_correct() -> None:
    A = te.placeholder((1000, 64), name="A")
    B = te.compute((1000, 64), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    f = build(s, [A, B])
    a = np.random.rand(1000, 64).astype("float32")
    old = get_num_threads()
    try:
        for nt in (1, 2, 3):
            set_num_threads(nt)
            b = np.zeros_like(a)
            f(a, b)
            np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)
    finally:
        set_num_threads(old)
    with pytest.raises(ValueError):
        set_num_threads(0)


def test_generated_code_uses_host_vectors() -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = build(s, [A, B])
    assert "<16 x float>" in f.get_source("ll")
    assert "noalias" in f.get_source("ll")
    assert f.get_source("asm")
    info = host_info()
    assert info["cpu"] and info["triple"].startswith("x86_64") or info["triple"]
    with pytest.raises(ValueError, match="unknown source format"):
        f.get_source("ptx")


def test_build_from_lowered_function() -> None:
    A, B = _add()
    func = lower(te.create_schedule(B.op), [A, B], name="twice")
    f = build(func)
    assert f.name == "twice"
    a = np.ones((8, 4), "float32")
    b = np.zeros_like(a)
    f(a, b)
    assert (b == 2).all()


def test_large_and_symbolic_intermediates_use_heap() -> None:
    n = te.var("n")
    A = te.placeholder((n, 300), name="A")
    B = te.compute((n, 300), lambda i, j: A[i, j] + 1.0, name="B")  # symbolic size: heap
    C = te.compute((n, 300), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    f = build(s, [A, C])
    for rows in (3, 400):  # 400 x 300 floats would not fit the stack limit for allocas
        a = np.random.rand(rows, 300).astype("float32")
        c = np.zeros_like(a)
        f(a, c)
        np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)
    A2 = te.placeholder((512, 300), name="A2")
    B2 = te.compute((512, 300), lambda i, j: A2[i, j] + 1.0, name="B2")
    C2 = te.compute((512, 300), lambda i, j: B2[i, j] - A2[i, j], name="C2")
    f2 = build(te.create_schedule(C2.op), [A2, C2])
    assert "vdla_workspace_alloc" in f2.get_source("ll")  # the runtime's caching aligned_alloc
    a2 = np.random.rand(512, 300).astype("float32")
    c2 = np.zeros_like(a2)
    f2(a2, c2)
    np.testing.assert_allclose(c2, np.ones_like(a2), rtol=1e-5)


def test_lower_prints_each_pass(capsys) -> None:  # type: ignore[no-untyped-def]
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    f = lower(s, [A, B], print_passes=True)
    out = capsys.readouterr().out
    for name in ("schedule_ops", "storage_flatten", "simplify", "vectorize", "unroll"):
        assert f"after {name}" in out
    text = str(f)
    assert text.startswith("primfn main(A: float32[10], B: float32[10])")
    # the non-divisible split keeps a guard; the guarded vector loop falls back to a hinted scalar loop
    assert "if (((i.outer * 4) + i.inner) < 10)" in text
