"""Schedule features TVM's GPU programs use, checked on the loop nest (GPU threads run as serial
loops on the CPU against numpy): cross-thread reductions, a store predicate naming a thread
axis, TVM's default storage scope inside thread loops, and a local copy of a shared tile
computed deeper in the consumer than the tile (bound inference over the loops between)."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import te
from vdla.compiler.schedule.loop_nest import THREAD_ALLREDUCE
from vdla.compiler.schedule.primitives import ScheduleError
from vdla.compiler.targets.cuda.lower import threads_as_loops
from vdla.compiler.tir.nodes import Allocate, AttrStmt, IfThenElse, IntImm
from vdla.compiler.tir.visitor import walk


def _cpu(s: te.Schedule, args: list[te.Tensor], *arrays: np.ndarray) -> None:
    vdla.build(threads_as_loops(vdla.lower(s, args)), target="llvm", opt_level=2)(*arrays)


def _allocs(s: te.Schedule, args: list[te.Tensor]) -> dict[str, tuple[str, int]]:
    """Allocated buffer -> (scope, number of elements)."""
    out = {}
    for n in walk(vdla.lower(s, args).body):
        if isinstance(n, Allocate):
            size = 1
            for d in n.buffer.shape:
                size *= d.value if isinstance(d, IntImm) else -1
            out[n.buffer.name] = (n.buffer.scope, size)
    return out


def _row_reduce(combine: str, predicate: bool = True, factor: int = 16):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    red = te.sum if combine == "sum" else te.max
    B = te.compute((n,), lambda i: red(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=factor)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=8)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    if predicate:
        s[B].set_store_predicate(tx.var.equal(0))
    return s, [A, B], BF


@pytest.mark.parametrize(("combine", "predicate"), [("sum", True), ("max", True), ("sum", False)])
def test_cross_thread_reduction_on_the_cpu(combine: str, predicate: bool, rng: np.random.Generator) -> None:
    s, args, _ = _row_reduce(combine, predicate)
    a = rng.standard_normal((21, 45)).astype(np.float32)  # neither size divides its split
    b = np.zeros(21, np.float32)
    _cpu(s, args, a, b)
    want = a.sum(axis=1) if combine == "sum" else a.max(axis=1)
    np.testing.assert_allclose(b, want, rtol=1e-5)


def test_cross_thread_reduction_loop_nest() -> None:
    s, args, _ = _row_reduce("sum")
    body = vdla.lower(s, args).body
    marks = [n for n in walk(body) if isinstance(n, AttrStmt) and n.key == THREAD_ALLREDUCE]
    assert len(marks) == 1 and marks[0].value.tags == ("threadIdx.x",)
    # the row guard is inside the marked region (the threads' exchange sits outside any condition)
    assert not any(isinstance(n, IfThenElse) and any(x is marks[0] for x in walk(n)) for n in walk(body))
    allocs = _allocs(s, args)
    # B.rf computed inside threadIdx.x without a scope: one value per thread (TVM's rule), as is B.red
    assert allocs["B.rf"] == ("local", 1) and allocs["B.red"] == ("local", 1)


def test_cross_thread_reduction_needs_data_axes_outside() -> None:
    A = te.placeholder((16, 64), name="A")
    k = te.reduce_axis((0, 64), "k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=32)
    s[B].reorder(ko, B.op.axis[0], ki)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    with pytest.raises(ScheduleError, match="axis 'i' is inside reduce axis 'k.outer'.*reorder"):
        vdla.lower(s, [A, B])


def test_reduction_across_blocks_is_refused() -> None:
    A = te.placeholder((16, 64), name="A")
    k = te.reduce_axis((0, 64), "k")
    B = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=32)
    s[B].bind(ko, te.thread_axis("blockIdx.x"))
    with pytest.raises(ScheduleError, match="reduce axis 'k.outer' is bound to blockIdx.x: a reduction across blocks"):
        vdla.lower(s, [A, B])


def test_store_predicate_names_the_thread_axis(rng: np.random.Generator) -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, xi = s[B].split(B.op.axis[0], factor=16)
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, tx)
    s[B].set_store_predicate(tx.var < 4)
    a = rng.random(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    _cpu(s, [A, B], a, b)
    keep = (np.arange(64) % 16) < 4
    np.testing.assert_allclose(b, np.where(keep, a + 1, 0))


def test_default_scope_inside_thread_loops() -> None:
    A = te.placeholder((64, 64), name="A")
    T = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="T")
    U = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="U")
    C = te.compute((64, 64), lambda i, j: T[i, j] + U[i, j], name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].bind(i, te.thread_axis("blockIdx.x"))
    s[C].bind(j, te.thread_axis("threadIdx.x"))
    s[T].compute_at(s[C], j)  # inside threadIdx.x: one value per thread
    s[U].compute_at(s[C], i)  # inside blockIdx.x only: the block's row, shared by its threads
    allocs = _allocs(s, [A, C])
    assert allocs["T"] == ("local", 1) and allocs["U"] == ("shared", 64)
    s[T].set_scope("global")  # a scope the schedule chose stands
    assert _allocs(s, [A, C])["T"][0] == "global"


def test_local_copy_of_a_shared_tile_computed_deeper(rng: np.random.Generator) -> None:
    """A matmul staging A in shared memory at ko and a local copy of it at ki (TVM's pattern):
    the shared tile covers the ki loop's reads, the local copy one element."""
    M, N, K = 32, 32, 48
    A = te.placeholder((M, K), name="A")
    Bm = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), "k")
    Ap = te.compute((M, K), lambda i, kk: A[i, kk] * 1.0, name="Ap")
    C = te.compute((M, N), lambda i, j: te.sum(Ap[i, k] * Bm[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[Ap].compute_inline()
    AA = s.cache_read(Ap, "shared", [C])
    AL = s.cache_read(AA, "local", [C])
    CL = s.cache_write(C, "local")
    i, j = C.op.axis
    bi, ti = s[C].split(i, factor=8)
    s[C].bind(bi, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, te.thread_axis((0, 8), "threadIdx.x"))
    s[CL].compute_at(s[C], ti)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=4)
    ci, cj = s[CL].op.axis
    s[CL].reorder(ko, ki, ci, cj)
    s[AA].compute_at(s[CL], ko)
    s[AL].compute_at(s[CL], ki)
    allocs = _allocs(s, [A, Bm, C])
    assert allocs["Ap.shared"] == ("shared", 8 * 4)  # the block's 8 rows by the 4 k of one ko step
    assert allocs["Ap.shared.local"] == ("local", 1)
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    _cpu(s, [A, Bm, C], a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
