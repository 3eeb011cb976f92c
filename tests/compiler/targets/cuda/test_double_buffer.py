"""Double-buffered shared tiles (``s[AA].double_buffer()``, tir.passes.double_buffer): a small
matmul whose A and B tiles have two halves, the next step's fetched while this one's is read.
Checked against numpy on the SIMT interpreter (threads in lockstep, barriers honoured) and with
threads as loops; without its one barrier per iteration the same kernel is wrong; its PTX
declares twice the shared memory and assembles for sm_80 and sm_90; bad uses name the stage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.cuda import ARCHS, needs_ptxas
from support.simt import run_kernels

import vdla
from vdla import te
from vdla.compiler.autotvm.task import create
from vdla.compiler.schedule.primitives import ScheduleError
from vdla.compiler.targets.cuda.lower import SYNC
from vdla.compiler.targets.cuda.ptxas import assemble
from vdla.compiler.tir.nodes import AttrStmt, CallExtern, Evaluate, For, Seq
from vdla.compiler.tir.passes.double_buffer import DOUBLE_BUFFER_WRITE
from vdla.compiler.tir.visitor import post_order_map, pre_order_map, walk

M, N, K = 16, 16, 32  # one block of 4x4 threads, 4 reduction steps of 8: about a second on the interpreter


def _matmul(double: bool = True, k: int = K, bk: int = 8) -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((M, k), name="A")
    B = te.placeholder((k, N), name="B")
    r = te.reduce_axis((0, k), "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    AA, BB = s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    tx, ty = te.thread_axis("threadIdx.x"), te.thread_axis("threadIdx.y")
    by, yi = s[C].split(C.op.axis[0], factor=16)
    bx, xi = s[C].split(C.op.axis[1], factor=16)
    ty_, yi = s[C].split(yi, nparts=4)
    tx_, xi = s[C].split(xi, nparts=4)
    s[C].reorder(by, bx, ty_, tx_, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty_, ty)
    s[C].bind(tx_, tx)
    s[CL].compute_at(s[C], tx_)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=bk)
    s[CL].reorder(ko, ki, *s[CL].op.axis)
    for cache in (AA, BB):  # the block's 16 threads fetch a tile together
        s[cache].compute_at(s[CL], ko)
        _, i = s[cache].split(s[cache].fuse(*s[cache].op.axis), factor=16)
        yo, xo = s[cache].split(i, factor=4)
        s[cache].bind(yo, ty)
        s[cache].bind(xo, tx)
        if double:
            s[cache].double_buffer()
    return s, [A, B, C]


def _data(k: int = K) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((M, k), dtype=np.float32), rng.random((k, N), dtype=np.float32)


def _barriers(stmt: Any) -> int:
    return sum(isinstance(n, Evaluate) and isinstance(n.value, CallExtern) and n.value.name == SYNC for n in walk(stmt))


def _main_loop(body: Any) -> For:
    """The reduction loop that fetches the next tiles (the one holding double_buffer_write)."""
    return next(n for n in walk(body) if isinstance(n, For) and any(
        isinstance(a, AttrStmt) and a.key == DOUBLE_BUFFER_WRITE for a in walk(n.body)))


@pytest.mark.parametrize("k", [K, 8, pytest.param(24, marks=pytest.mark.slow)], ids=["4-steps", "1-step", "3-steps"])
def test_double_buffered_matmul_on_the_simt_interpreter(k: int) -> None:
    s, args = _matmul(k=k)
    f = vdla.build(s, args, target="cuda")
    if k > 8:  # one barrier per step where an ordinary tile needs two (and one before the last step)
        assert _barriers(_main_loop(f.kernels[0].body)) == 1 and _barriers(f.kernels[0].body) == 2
    else:  # one step: the loop was simplified away, and with it the second half
        assert f.kernels[0].shared_bytes == (16 * 8 + 8 * 16) * 4
    a, b = _data(k)
    c = np.zeros((M, N), np.float32)
    run_kernels(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_double_buffered_matmul_with_threads_as_loops() -> None:
    s, args = _matmul()
    a, b = _data()
    c = np.zeros((M, N), np.float32)
    vdla.testing.run_cuda_schedule_on_cpu(s, args, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_without_its_barrier_the_double_buffer_is_wrong() -> None:
    """The same kernel with the barrier of its reduction loop removed reads halves other threads
    have not written yet (or overwrites one still being read): the interpreter sees it."""
    s, args = _matmul()
    f = vdla.build(s, args, target="cuda")
    (kern,) = f.kernels
    loop = _main_loop(kern.body)

    def strip(x: Any) -> Any:
        if isinstance(x, Seq):
            kept = [y for y in x.stmts if not (isinstance(y, Evaluate) and isinstance(y.value, CallExtern)
                                               and y.value.name == SYNC)]  # fmt: skip
            return Seq(kept) if len(kept) != len(x.stmts) else None
        return None

    kern.body = pre_order_map(kern.body, lambda n: post_order_map(n, strip) if n is loop else None)
    assert _barriers(_main_loop(kern.body)) == 0
    a, b = _data()
    c = np.zeros((M, N), np.float32)
    run_kernels(f, a, b, c)
    assert not np.allclose(c, a @ b, rtol=1e-5)


@needs_ptxas
def test_double_buffer_ptx_declares_twice_the_shared_memory() -> None:
    for arch in ARCHS:
        one = vdla.build(*_matmul(double=False), target=f"cuda -arch={arch}")
        two = vdla.build(*_matmul(), target=f"cuda -arch={arch}")
        assert two.kernels[0].shared_bytes == 2 * one.kernels[0].shared_bytes == 2 * (16 * 8 + 8 * 16) * 4
        for name in ("A", "B"):
            assert f"main_kernel_{name}_shared[512]" in one.ptx and f"main_kernel_{name}_shared[1024]" in two.ptx
        report = assemble(two.ptx, arch).report
        assert f"{2 * one.kernels[0].shared_bytes} bytes smem" in report


def test_without_double_buffer_the_lowering_is_unchanged() -> None:
    s, args = _matmul(double=False)
    trace = dict(vdla.lower(s, args, target="cuda").attrs["trace"])
    assert trace["inject_double_buffer"] is trace["inject_virtual_thread"]


def test_bad_uses_name_the_stage() -> None:
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"stage 'A': double_buffer: it is a placeholder"):
        s[A].double_buffer()
    # a stage computed at root (not inside a loop)
    s, args = _matmul(double=False)
    AA = next(st for st in s.stages if st.name == "A.shared")
    AA.compute_root()
    AA.double_buffer()
    with pytest.raises(ScheduleError, match=r"^stage 'A.shared': double_buffer: it is not computed inside a loop"):
        vdla.lower(s, args, target="cuda")
    # a stage in local memory
    s, args = _matmul(double=False)
    CL = next(st for st in s.stages if st.name == "C.local")
    AL = s.cache_read(next(st for st in s.stages if st.name == "A.shared").op.output(0), "local", [CL])
    s[AL].compute_at(CL, CL.leaf_iter_vars[1])
    s[AL].double_buffer()
    with pytest.raises(ScheduleError, match=r"^stage 'A.shared.local': double_buffer: it is in scope 'local'"):
        vdla.lower(s, args, target="cuda")
    # a stage computed at a loop bound to a thread
    s, args = _matmul(double=False)
    C = next(st for st in s.stages if st.name == "C")
    for st in s.stages:
        if st.name == "B.shared":
            st.compute_at(C, C.leaf_iter_vars[3])
            st.double_buffer()
    with pytest.raises(ScheduleError, match=r"^stage 'B.shared': double_buffer: it is computed at axis .* bound to a "
                                            "thread"):
        vdla.lower(s, args, target="cuda")


@needs_ptxas
def test_the_gemm_template_double_buffer_knob() -> None:
    """matmul.cuda's ``double_buffer`` knob: 0 in the fallback (today's kernel); a point with 1 has
    twice the shared memory, assembles for both architectures and computes the product."""
    task = create("matmul.cuda", [32, 32, 16], "cuda -arch=sm_80")
    fb = task.fallback()
    assert fb["double_buffer"].val == 0 and fb.index is not None
    knobs = {**fb.knobs(), "tile_k": [2, 8]}
    one = task.config_space.get(task.config_space.index_of(knobs))
    two = task.config_space.get(task.config_space.index_of({**knobs, "double_buffer": 1}))
    f1 = vdla.build(*task.instantiate(one), target="cuda -arch=sm_80")
    s, tensors = task.instantiate(two)
    f2 = vdla.build(s, tensors, target="cuda -arch=sm_80")
    assert f2.kernels[0].shared_bytes == 2 * f1.kernels[0].shared_bytes
    for arch in ARCHS:
        assemble(vdla.build(s, tensors, target=f"cuda -arch={arch}").ptx, arch)
    rng = np.random.default_rng(1)
    a, b = rng.random((32, 16), dtype=np.float32), rng.random((16, 32), dtype=np.float32)
    c = np.zeros((32, 32), np.float32)
    run_kernels(f2, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_double_buffer_of_a_symbolic_trip_count() -> None:
    """A reduction of symbolic length (not a multiple of the step): one loop, the next tile's fetch
    under ``if ko + 1 < steps``, the tiles' own guards kept; on the interpreter and as loops."""
    k = te.var("k")
    A = te.placeholder((M, k), name="A")
    B = te.placeholder((k, N), name="B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    AA, BB = s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    tx, ty = te.thread_axis("threadIdx.x"), te.thread_axis("threadIdx.y")
    ty_, yi = s[C].split(C.op.axis[0], nparts=4)
    tx_, xi = s[C].split(C.op.axis[1], nparts=4)
    s[C].reorder(ty_, tx_, yi, xi)
    s[C].bind(ty_, ty)
    s[C].bind(tx_, tx)
    s[CL].compute_at(s[C], tx_)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=8)
    s[CL].reorder(ko, ki, *s[CL].op.axis)
    for cache in (AA, BB):
        s[cache].compute_at(s[CL], ko)
        _, i = s[cache].split(s[cache].fuse(*s[cache].op.axis), factor=16)
        yo, xo = s[cache].split(i, factor=4)
        s[cache].bind(yo, ty)
        s[cache].bind(xo, tx)
        s[cache].double_buffer()
    f = vdla.build(s, [A, B, C], target="cuda")
    assert f.kernels[0].shared_bytes == 2 * (16 * 8 + 8 * 16) * 4
    assert _barriers(_main_loop(f.kernels[0].body)) == 1
    a, b = _data(20)
    for run in (lambda *x: run_kernels(f, *x), lambda *x: vdla.testing.run_cuda_schedule_on_cpu(s, [A, B, C], *x)):
        c = np.zeros((M, N), np.float32)
        run(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)
