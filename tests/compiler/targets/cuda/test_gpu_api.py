"""TVM's GPU API on the cuda target: the device module behind ``f.imported_modules[0]``,
cross-thread reductions (the threads' exchange in shared memory), CUDA's math functions from
libdevice (``expf``, ``__expf``), users' intrinsic lowering rules (``tvm.ir``), the limits'
one-line errors, ``Target(target, host=)`` and ``tvm.device("cuda", 0)``; every kernel
assembled by ptxas for sm_80 and sm_90."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
from support.cuda import build_all, needs_ptxas
from support.simt import run_kernels

import vdla
from vdla import te
from vdla.compiler.targets.cuda.codegen import libdevice_path
from vdla.compiler.targets.cuda.lower import SYNC, CudaLoweringError
from vdla.compiler.targets.cuda.ptxas import assemble
from vdla.compiler.targets.llvm.codegen import CodegenError
from vdla.compiler.tir import op_registry
from vdla.compiler.tir.nodes import BufferStore, CallExtern, Evaluate, IfThenElse, IRError, Seq
from vdla.compiler.tir.op_registry import OpRegistryError, register_intrin_lowering, register_op_attr
from vdla.compiler.tir.visitor import post_order_map, walk

needs_libdevice = pytest.mark.skipif(libdevice_path() is None, reason="libdevice not found (pip install nvidia-nvvm)")


@pytest.fixture
def registry() -> Iterator[None]:
    """Leave the operator registry as it was (the tests register lowering rules)."""
    saved = op_registry.snapshot()
    yield
    op_registry.restore(saved)


def _map(fn: object, n: object = 1000, factor: int = 64) -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")  # type: ignore[operator]
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=factor)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def test_device_module_holds_the_ptx() -> None:
    s, args = _map(lambda x: x + 1.0)
    f = vdla.build(s, args, target="cuda", name="addone")
    (dev,) = f.imported_modules
    assert dev.type_key == "cuda" and dev.functions == ["addone_kernel"]
    assert dev.get_source() == dev.get_source("ptx") == f.get_source("ptx")
    assert dev.imported_modules == [] and f.entry_name == "addone"
    with pytest.raises(ValueError, match="no 'cl' source; it holds ptx"):
        dev.get_source("cl")


def _row_sum(n: int, m: int, factor: int, rows: int, red: object = te.sum):
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: red(A[i, k], axis=k), name="B")  # type: ignore[operator]
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=factor)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=rows)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    return s, [A, B]


@needs_ptxas
@pytest.mark.parametrize(("factor", "steps"), [(16, 4), (24, 5)])
def test_cross_thread_reduction_exchange(factor: int, steps: int) -> None:
    s, args = _row_sum(64, 100, factor, 8)
    for arch, f in build_all(s, args).items():
        (k,) = f.kernels
        assert k.block == (factor, 8, 1), arch
        assert k.shared_bytes == factor * 8 * 4  # one float per thread of the block
        assert f"{factor * 8 * 4} bytes smem" in f.ptxas_report  # type: ignore[attr-defined]
        # the tree: one guarded combine per halving, a barrier before each and before the read-back
        tree = [n for n in walk(k.body) if isinstance(n, IfThenElse) and isinstance(n.then_case, BufferStore)
                and n.then_case.buffer.scope == "shared"]  # fmt: skip
        assert len(tree) == steps
        syncs = sum(isinstance(n, CallExtern) and n.name == SYNC for n in walk(k.body))
        assert syncs == steps + 1
        assert len(re.findall(r"bar\.sync", f.ptx)) >= steps


@pytest.mark.parametrize(("factor", "red"), [(16, "sum"), (24, "sum"), (16, "max")])
def test_cross_thread_reduction_runs_as_on_a_gpu(factor: int, red: str, rng: np.random.Generator) -> None:
    """The kernel's threads run in lockstep between barriers (support.simt), each with its own
    partial value, exchanged through shared memory: the result is numpy's."""
    s, args = _row_sum(10, 45, factor, 8, te.sum if red == "sum" else te.max)
    f = vdla.build(s, args, target="cuda")
    a = rng.standard_normal((10, 45)).astype(np.float32)
    b = np.zeros(10, np.float32)
    run_kernels(f, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1) if red == "sum" else a.max(axis=1), rtol=1e-5)


@needs_ptxas
def test_cross_thread_reduction_without_rfactor(rng: np.random.Generator) -> None:
    """The inner part of a split reduce axis bound to threadIdx.x directly: each thread sums its
    strided share of the row (the outer part a serial loop), then the threads combine."""
    A = te.placeholder((10, 45), name="A")
    k = te.reduce_axis((0, 45), "k")
    B = te.compute((10,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=32)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(ki, tx)
    s[B].set_store_predicate(tx.var.equal(0))
    f = build_all(s, [A, B])["sm_80"]
    assert f.kernels[0].block == (32, 4, 1)
    a = rng.random((10, 45), dtype=np.float32)
    b = np.zeros(10, np.float32)
    run_kernels(f, a, b)
    np.testing.assert_allclose(b, 2 * a.sum(axis=1), rtol=1e-5)


def test_cross_thread_tuple_reduction(rng: np.random.Generator) -> None:
    """argmax (a tuple reducer: index and value) across threads: both values travel together."""

    def fcombine(x: tuple, y: tuple) -> tuple:
        keep = x[1] >= y[1]
        return vdla.tir.Select(keep, x[0], y[0]), vdla.tir.Select(keep, x[1], y[1])

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (vdla.tir.const(-1, t0), te.min_value(t1)), name="argmax")
    idx = te.placeholder((10, 45), name="idx", dtype="int32")
    val = te.placeholder((10, 45), name="val")
    k = te.reduce_axis((0, 45), "k")
    T0, T1 = te.compute((10,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=16)
    xo, xi = s[T0].split(T0.op.axis[0], factor=4)
    s[T0].bind(xo, te.thread_axis("blockIdx.x"))
    s[T0].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[T0].bind(ki, tx)
    s[T0].set_store_predicate(tx.var.equal(0))
    args = [idx, val, T0, T1]
    f = vdla.build(s, args, target="cuda")
    assert f.kernels[0].shared_bytes == 2 * 16 * 4 * 4  # an int32 and a float32 slot per thread
    ii = np.tile(np.arange(45, dtype=np.int32), (10, 1))
    vv = rng.random((10, 45), dtype=np.float32)
    for run in (lambda *a: run_kernels(f, *a), lambda *a: vdla.testing.run_cuda_schedule_on_cpu(s, args, *a)):
        o0, o1 = np.zeros(10, np.int32), np.zeros(10, np.float32)
        run(ii, vv, o0, o1)
        np.testing.assert_array_equal(o0, vv.argmax(axis=1))
        np.testing.assert_array_equal(o1, vv.max(axis=1))


def test_the_exchange_needs_its_barriers(rng: np.random.Generator) -> None:
    """Without the barriers storage_sync put in, the same kernel reads partial values before other
    threads wrote them: the interpreter sees it (so the test above checks the barriers too)."""
    s, args = _row_sum(10, 45, 16, 8)
    f = vdla.build(s, args, target="cuda")
    (k,) = f.kernels

    def drop(n: object) -> object:
        if isinstance(n, Seq):
            kept = [x for x in n.stmts if not (isinstance(x, Evaluate) and isinstance(x.value, CallExtern)
                                                and x.value.name == SYNC)]  # fmt: skip
            return Seq(kept) if len(kept) != len(n.stmts) else None
        return None

    k.body = post_order_map(k.body, drop)
    a = rng.random((10, 45), dtype=np.float32)
    b = np.zeros(10, np.float32)
    run_kernels(f, a, b)
    assert not np.allclose(b, a.sum(axis=1), rtol=1e-5)


def test_cooperative_shared_tile_with_a_local_copy(rng: np.random.Generator) -> None:
    """A matmul whose A tile is fetched into shared memory by the block's threads together (one
    row each) at ko, then copied to a register at ki (deeper than the tile), as opt_conv_cuda does."""
    M, N, K = 16, 8, 16
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
    tx = te.thread_axis((0, 8), "threadIdx.x")
    bi, ti = s[C].split(C.op.axis[0], factor=8)
    s[C].bind(bi, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, tx)
    s[CL].compute_at(s[C], ti)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=4)
    s[CL].reorder(ko, ki, *s[CL].op.axis)
    s[AA].compute_at(s[CL], ko)
    s[AA].bind(s[AA].op.axis[0], tx)
    s[AL].compute_at(s[CL], ki)
    f = vdla.build(s, [A, Bm, C], target="cuda")
    assert f.kernels[0].shared_bytes == 8 * 4 * 4
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    run_kernels(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@needs_ptxas
@needs_libdevice
def test_cuda_math_functions_from_libdevice() -> None:
    def build(name: str) -> object:
        return vdla.build(*_map(lambda x: vdla.tir.call_pure_extern("float32", name, x)), target="cuda -arch=sm_90")

    fast, precise = build("__expf"), build("expf")
    assert "ex2.approx" in fast.ptx and fast.ptx.count("fma.rn") < precise.ptx.count("fma.rn")
    for f in (fast, precise):
        assemble(f.ptx, "sm_90")
    s, args = _map(lambda x: vdla.tir.call_pure_extern("float32", "powf", x, vdla.tir.const(2.5, "float32")))
    build_all(s, args)
    from vdla.compiler.targets.cuda.codegen import libdevice_symbol

    assert [libdevice_symbol(n) for n in ("expf", "__expf", "__nv_expf", "__fmul_rn", "exp", "nope")] == [
        "__nv_expf", "__nv_fast_expf", "__nv_expf", "__nv_fmul_rn", "__nv_exp", None]


@needs_libdevice
def test_bad_math_calls_are_named() -> None:
    s, args = _map(lambda x: vdla.tir.call_pure_extern("float32", "no_such_fn", x))
    with pytest.raises(CodegenError, match="cannot call external function 'no_such_fn' on the GPU"):
        vdla.build(s, args, target="cuda")
    s, args = _map(lambda x: vdla.tir.call_pure_extern("float32", "expf", x.astype("float64")))
    with pytest.raises(CodegenError, match=r"expf on the GPU \(__nv_expf\) takes \(float\) .* passes \(double\)"):
        vdla.build(s, args, target="cuda")


@needs_ptxas
@needs_libdevice
def test_intrin_lowering_rule_replaces_the_default(registry: None) -> None:
    s, args = _map(vdla.te.exp)
    default = vdla.build(s, args, target="cuda").ptx
    seen = []

    def fast_exp(op: vdla.tir.Call) -> object:
        seen.append(op.op.name)
        return vdla.tir.call_pure_extern(op.dtype, "__expf", op.args[0]) if op.dtype == "float32" else op

    register_intrin_lowering("tir.exp", target="cuda", f=fast_exp, level=99)
    fast = build_all(s, args)["sm_80"].ptx
    assert seen[0] == "tir.exp" and fast != default and "ex2.approx" in fast
    register_intrin_lowering("tir.exp", target="cuda", f=lambda op: op, level=5)  # a lower level: ignored
    assert vdla.build(s, args, target="cuda").ptx == fast and seen == ["tir.exp"] * 3
    with pytest.raises(OpRegistryError, match="already registered at level 99"):
        register_intrin_lowering("tir.exp", target="cuda", f=fast_exp, level=99)
    # the rule's result must keep the call's type
    register_intrin_lowering("tir.exp", target="cuda", f=lambda op: op.args[0].astype("float64"), level=100)
    with pytest.raises(CudaLoweringError, match="turned a float32 call into a float64 value"):
        vdla.build(s, args, target="cuda")


@needs_ptxas
@needs_libdevice
def test_a_new_intrinsic(registry: None, rng: np.random.Generator) -> None:
    def mylog(x: object) -> object:
        return vdla.tir.call_intrin("float32", "tir.mylog2", x)

    with pytest.raises(IRError, match="unknown intrinsic 'tir.mylog2'"):
        mylog(te.var("x", "float32"))
    register_op_attr("tir.mylog2", "TCallEffectKind", vdla.tir.CallEffectKind.Pure)
    s, args = _map(mylog)
    with pytest.raises(CodegenError, match=r"tir.mylog2 has no lowering for cuda; .*register_intrin_lowering"):
        vdla.build(s, args, target="cuda")
    register_intrin_lowering("tir.mylog2", target="cuda",
                             f=lambda op: vdla.tir.call_pure_extern("float32", "log2f", op.args[0]))  # fmt: skip
    build_all(s, args)
    a = rng.uniform(0.5, 8.0, 1000).astype(np.float32)
    b = np.zeros_like(a)
    vdla.testing.run_cuda_schedule_on_cpu(s, args, a, b)  # the rule's log2f is the C library's on the CPU
    np.testing.assert_allclose(b, np.log2(a), rtol=1e-6)


def test_thread_extent_over_the_limit_names_the_axis() -> None:
    s, args = _map(lambda x: x * 2.0, n=4096, factor=2048)
    with pytest.raises(CudaLoweringError, match=r"axis 'i.inner' bound to threadIdx.x has extent 2048; sm_80 allows 1024"):
        vdla.build(s, args, target="cuda")


def test_target_with_host_and_device() -> None:
    t = vdla.target.Target(target="cuda", host="llvm")
    assert t.kind.name == "cuda" and t.host.kind.name == "llvm"
    s, args = _map(lambda x: x + 1.0)
    f = vdla.build(s, args, target=t)
    assert ".target sm_80" in f.imported_modules[0].get_source()
    dev = vdla.device(t.kind.name, 0)
    assert (dev.kind, dev.device_id, dev.device_type) == ("cuda", 0, 2)
    assert dev.exist == (vdla.cuda(0).exist)
