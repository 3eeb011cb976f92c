"""NVPTX code generation: what the PTX of each GPU feature looks like (special registers, shared
memory in address space 3, barriers, vector loads and stores, unrolled register tiles, libdevice
math, the block-size bound), every kernel assembled by ptxas for sm_80 and sm_90."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.cuda import build_all, cpu_reference, needs_ptxas

import vdla
from vdla.compiler import te, topi
from vdla.compiler.targets.cuda import schedules
from vdla.compiler.targets.cuda.codegen import libdevice_path
from vdla.compiler.tir.nodes import For
from vdla.compiler.tir.visitor import walk

pytestmark = needs_ptxas


def test_special_registers_of_all_axes() -> None:
    A = te.placeholder((4, 8, 16, 32), name="A")
    C = te.compute(A.shape, lambda a, b, c, d: A[a, b, c, d] * 3.0, name="C")
    s = te.create_schedule(C.op)
    for ax, tag in zip(C.op.axis, ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x"), strict=True):
        s[C].bind(ax, te.thread_axis(tag))
    for arch, f in build_all(s, [A, C]).items():
        for reg in ("%ctaid.y", "%ctaid.x", "%tid.y", "%tid.x"):
            assert reg in f.ptx, (arch, reg)
        assert f.kernels[0].block == (32, 16, 1) and [g.value for g in f.kernels[0].grid] == [8, 4, 1]
        assert ".maxntid 32, 16, 1" in f.ptx


def test_vector_loads_and_stores() -> None:
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    C = topi.add(A, B)
    s = schedules.schedule_injective(C, num_thread=256, vec=4)
    for f in build_all(s, [A, B, C]).values():
        assert re.search(r"ld\.global(\.nc)?\.v4\.(f32|b32)", f.ptx), f.ptx
        assert re.search(r"st\.global\.v4\.(f32|b32)", f.ptx)


def test_shared_memory_is_address_space_3_with_vector_fetch() -> None:
    A, B, C = schedules.matmul(64, 64, 32)
    s = schedules.schedule_matmul(C, schedules.MatmulTiles(bm=32, bn=32, bk=16, tm=4, tn=4, vec=4))
    for f in build_all(s, [A, B, C]).values():
        assert "addrspace(3)" in f.llvm_ir
        assert re.search(r"\.shared \.align 16 \.b8 \w+A_shared\[2048\]", f.ptx)
        assert re.search(r"st\.shared\.v4\.(f32|b32)", f.ptx)  # cooperative fetch, 4 lanes per thread
        assert "bar.sync" in f.ptx


def test_unrolled_register_tile_has_no_loop() -> None:
    A, B, C = schedules.matmul(64, 64, 32)
    f = vdla.build(schedules.schedule_matmul(C, schedules.MatmulTiles(32, 32, 16, 4, 4, 4)), [A, B, C], target="cuda")
    loops = {n.var.name for n in walk(f.kernels[0].body) if isinstance(n, For)}
    assert not {"i.c", "j.c"} & loops  # the 4x4 accumulator tile is unrolled into registers
    assert "alloca" not in f.optimized_ir  # ... and promoted out of memory


@pytest.mark.skipif(libdevice_path() is None, reason="libdevice (nvidia-nvvm wheel) not installed")
def test_math_through_libdevice(rng: np.random.Generator) -> None:
    A = te.placeholder((256,), name="A")
    C = te.compute((256,), lambda i: te.exp(A[i]) + te.log(te.abs(A[i]) + 1.0) + te.tanh(A[i]), name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    for f in build_all(s, [A, C]).values():
        assert ".func" not in f.ptx  # libdevice inlined, the unused rest dropped
        assert "ex2.approx" in f.ptx
    a = rng.standard_normal(256).astype("float32")
    (c,) = cpu_reference(s, [A, C], [a])
    np.testing.assert_allclose(c, np.exp(a) + np.log(np.abs(a) + 1) + np.tanh(a), rtol=1e-5)


def test_get_source_formats() -> None:
    A = te.placeholder((32,), name="A")
    C = te.compute((32,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    f = vdla.build(s, [A, C], target="nvptx", name="inc")
    assert f.get_source().startswith("//") and ".entry inc_kernel(" in f.get_source("ptx")
    assert "ptx_kernel" in f.get_source("ll") and "nvptx64-nvidia-cuda" in f.get_source("opt")
    assert "kernel inc_kernel grid=" in f.get_source("tir")
    with pytest.raises(ValueError, match="unknown source format 'cubin'"):
        f.get_source("cubin")
    assert "inc(A, C)" in repr(f) and "sm_80" in repr(f)


def test_a_name_ptx_cannot_have_is_one_line() -> None:
    """NVPTX aborts the whole process on a '/' in a kernel's name, and ptxas rejects a '.' or a digit first."""
    A = te.placeholder((32,), name="A")
    C = te.compute((32,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    for name in ("tutorial/conv2d", "conv.2d", "1conv"):
        with pytest.raises(ValueError, match=f"cuda: function name {re.escape(repr(name))} has characters"):
            vdla.build(s, [A, C], target="cuda", name=name)
    for arch, f in build_all(s, [A, C], name="conv_2d$a").items():  # ptxas assembles '_' and '$'
        assert ".entry conv_2d$a_kernel(" in f.ptx, arch
