"""The GPU lowering: host/device split, thread binding and launch extents, the storage-sync pass,
and the errors for schedules a GPU cannot run (each checked on the kernel's loop IR, with the
PTX proven by ptxas for sm_80 and sm_90 and the index arithmetic run on the CPU against numpy)."""

from __future__ import annotations

import numpy as np
import pytest
from support.cuda import build_all, cpu_reference, needs_ptxas

import vdla
from vdla.compiler import te
from vdla.compiler.targets.cuda import schedules
from vdla.compiler.targets.cuda.lower import SYNC, CudaLoweringError, storage_sync
from vdla.compiler.tir.nodes import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferLoad,
    BufferStore,
    CallExtern,
    Evaluate,
    For,
    IfThenElse,
    IntImm,
    Seq,
    Var,
)
from vdla.compiler.tir.visitor import walk


def _vadd(n: object = 1000, factor: int = 128) -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=factor)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def _flat(s: object) -> list[object]:
    """A statement list with allocations, attributes and nested sequences opened."""
    if isinstance(s, Seq):
        return [y for x in s.stmts for y in _flat(x)]
    if isinstance(s, Allocate | AttrStmt):
        return _flat(s.body)
    return [s]


def _syncs(stmt: object) -> int:
    return sum(isinstance(n, CallExtern) and n.name == SYNC for n in walk(stmt))


@needs_ptxas
def test_thread_binding_launch_shape_and_guard(rng: np.random.Generator) -> None:
    s, args = _vadd(1000, 128)
    fs = build_all(s, args)
    k = fs["sm_80"].kernels[0]
    assert k.block == (128, 1, 1) and k.grid[0].value == 8
    tir = fs["sm_80"].get_source("tir")
    assert "threadIdx.x" in tir and "blockIdx.x" in tir
    assert any(isinstance(n, IfThenElse) for n in walk(k.body))  # 8*128 > 1000: guarded
    for f in fs.values():
        assert "%tid.x" in f.ptx and "%ctaid.x" in f.ptx and ".maxntid 128, 1, 1" in f.ptx
    a, b = rng.standard_normal(1000).astype("float32"), rng.standard_normal(1000).astype("float32")
    (c,) = cpu_reference(s, args, [a, b])
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_symbolic_grid_is_evaluated_per_call() -> None:
    n = te.var("n")
    s, args = _vadd(n, 64)
    f = vdla.build(s, args, target="cuda")
    k = f.kernels[0]
    assert k.block == (64, 1, 1)
    from vdla.compiler.targets.cuda.module import _eval
    from vdla.compiler.tir.nodes import IntImm

    assert _eval(k.grid[0], {n: IntImm(1000, n.dtype)}, "grid") == 16  # ceil(1000 / 64)
    assert "n" in [p.name for p in k.params]


def test_lower_shows_device_loops() -> None:
    s, args = _vadd()
    text = str(vdla.lower(s, args))
    assert "thread_binding(blockIdx.x)" in text and "thread_binding(threadIdx.x)" in text


@needs_ptxas
def test_matmul_barriers_around_the_shared_tiles(rng: np.random.Generator) -> None:
    A, B, C = schedules.matmul(128, 128, 64)
    s = schedules.schedule_matmul(C, schedules.MatmulTiles(bm=64, bn=64, bk=16, tm=4, tn=4, vec=4))
    fs = build_all(s, [A, B, C])
    k = fs["sm_90"].kernels[0]
    ko = next(n for n in walk(k.body) if isinstance(n, For) and n.var.name == "k.outer")
    # inside the reduction loop: barrier, fetch A, fetch B, barrier, multiply; nothing else
    marks = ["sync" if isinstance(x, Evaluate) else "work" for x in _flat(ko.body)]
    assert marks == ["sync", "work", "work", "sync", "work"], marks
    assert _syncs(k.body) == 2
    assert k.shared_bytes == 2 * 64 * 16 * 4
    for f in fs.values():
        assert "bar.sync" in f.ptx and ".shared" in f.ptx and "ld.shared" in f.ptx
        assert "8192 bytes smem" in f.ptxas_report  # type: ignore[attr-defined]
    a = rng.standard_normal((128, 64)).astype("float32")
    b = rng.standard_normal((64, 128)).astype("float32")
    (c,) = cpu_reference(s, [A, B, C], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_no_barrier_without_shared_memory() -> None:
    s, args = _vadd()
    f = vdla.build(s, args, target="cuda")
    assert _syncs(f.kernels[0].body) == 0 and "bar.sync" not in f.ptx


@needs_ptxas
def test_virtual_threads_on_the_gpu(rng: np.random.Generator) -> None:
    A = te.placeholder((64, 64), name="A")
    C = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, x = s[C].split(C.op.axis[0], factor=16)
    vx, tx = s[C].split(x, nparts=2)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(vx, te.thread_axis("vthread"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    fs = build_all(s, [A, C])
    assert fs["sm_80"].kernels[0].block == (8, 1, 1)
    assert not any(isinstance(n, For) and n.kind == "thread_binding" for n in walk(fs["sm_80"].kernels[0].body))
    a = rng.standard_normal((64, 64)).astype("float32")
    (c,) = cpu_reference(s, [A, C], [a])
    np.testing.assert_allclose(c, a * 2.0)


def test_several_root_stages_are_several_kernels() -> None:
    x = te.placeholder((8, 100), name="x")
    from vdla.compiler import topi

    y = topi.softmax(x)
    f = vdla.build(schedules.schedule_softmax(y), [x, y], target="cuda")
    assert [k.name for k in f.kernels] == ["main_kernel0", "main_kernel1"]
    assert [t.name for t in f.device_module.temps] == ["softmax_exp"]  # the host allocates it


# ---------------------------------------------------------------------------- errors


def _unbound() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] + 1.0, name="C")
    return te.create_schedule(C.op), [A, C]


def _too_many_threads() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64, 32), name="A")
    C = te.compute((64, 32), lambda i, j: A[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.y"))
    return s, [A, C]


def _too_deep_z() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((128,), name="A")
    C = te.compute((128,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.z"))
    return s, [A, C]


def _too_much_shared() -> tuple[te.Schedule, list[te.Tensor]]:
    A, B, C = schedules.matmul(256, 256, 256)
    tiles = schedules.MatmulTiles(bm=128, bn=128, bk=64, tm=8, tn=8, vec=4)
    return schedules.schedule_matmul(C, tiles), [A, B, C]


def _local_at_root() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64,), name="A")
    T = te.compute((64,), lambda i: A[i] + 1.0, name="T")
    C = te.compute((64,), lambda i: T[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[T].set_scope("local")
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, C]


def _copy_with_more_threads() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    bx, tx = s[C].split(C.op.axis[0], factor=8)
    txa = te.thread_axis("threadIdx.x")
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, txa)
    s[AA].compute_at(s[C], tx)
    _, ti = s[AA].split(s[AA].op.axis[0], factor=16)  # 16 copying threads, but C has 8
    s[AA].bind(ti, txa)
    return s, [A, C]


def _local_filled_by_threads() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    bx, tx = s[C].split(C.op.axis[0], factor=8)
    txa = te.thread_axis("threadIdx.x")
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, txa)
    s[AL].compute_at(s[C], bx)
    s[AL].bind(s[AL].op.axis[0], txa)
    return s, [A, C]


def _parallel_loop() -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((64, 64), name="A")
    D = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    s[D].bind(D.op.axis[0], te.thread_axis("threadIdx.x"))
    s[D].parallel(D.op.axis[1])
    return s, [A, D]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (_unbound, r"writing 'C' is not bound to any GPU thread; bind its outer axes"),
        (_too_many_threads, r"2048 threads per block \(threadIdx x,y,z = 64,32,1\) exceeds the 1024 sm_80 allows"),
        (_too_deep_z, r"threadIdx.z has extent 128; sm_80 allows 64"),
        (_too_much_shared, r"65536 bytes of shared memory \(A.shared 32768 B, B.shared 32768 B\) exceeds the 49152"),
        (_local_at_root, r"stage 'T' is in scope 'local' but computed at root"),
        (_parallel_loop, r"loop 'j' is marked parallel"),
        (_copy_with_more_threads, r"binds threadIdx.x to 16 threads inside loop 'i.inner', which binds it to 8"),
        (_local_filled_by_threads, r"A.local \(scope local, one per thread\) is written under loop 'ax0' and read "
         r"under loop 'i.inner', both bound to threadIdx"),
    ],
)
def test_schedules_the_gpu_cannot_run(make: object, match: str) -> None:
    s, args = make()  # type: ignore[operator]
    with pytest.raises(CudaLoweringError, match=match):
        vdla.build(s, args, target="cuda")


def test_barrier_under_a_thread_condition_is_refused() -> None:
    tx = Var("threadIdx.x", "int32")
    sh = Buffer("S", "float32", [IntImm(64, "int32")], "shared")
    out = Buffer("O", "float32", [IntImm(64, "int32")])
    body = IfThenElse(
        tx < 32,
        Seq([BufferStore(sh, tx, BufferLoad(out, tx, "float32")), BufferStore(out, tx, BufferLoad(sh, 63 - tx, "float32"))]),
    )
    with pytest.raises(CudaLoweringError, match=r"S need a barrier inside 'if \(threadIdx.x < 32\)'"):
        storage_sync(body, "k", {tx})
    # the same code reached by every thread gets its barrier between the write and the read
    ok = storage_sync(body.then_case, "k", {tx})
    assert ["sync" if isinstance(x, Evaluate) else "work" for x in _flat(ok)] == ["work", "sync", "work"]
