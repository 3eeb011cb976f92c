"""Micro-op kernels (vdla.runtime.kernel) and the stream's uop cache: loaded once, the ring
wrapping, size and field limits."""

from __future__ import annotations

import numpy as np
import pytest
from support.sim import describe

from vdla import isa
from vdla.config import PRESETS
from vdla.runtime import (
    AluOp,
    CommandStream,
    Device,
    KernelError,
    Loop,
    Stage,
    StreamError,
    UopKernel,
)

SMALL = PRESETS["small"]


L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def _ring_kernel(row0: int, name: str) -> UopKernel:
    return UopKernel(tuple((row0 + i % 4, 0, 0) for i in range(100)), name=name)


def test_same_kernel_twice_loads_once():
    s = CommandStream(SMALL)
    k1 = UopKernel(((0, 0, 0), (1, 1, 1)), (Loop(2, dst=2, src=2),), name="a")
    k2 = UopKernel(((0, 0, 0), (1, 1, 1)), (Loop(3, dst=2),), name="same uops, other loops")
    s.gemm(k1)
    s.gemm(k1, reset=True)
    s.gemm(k2)
    prog = s.finish()
    insns = prog.instructions()
    assert [describe(i) for i in insns[:4]] == ["LOAD.UOP", "GEMM", "GEMM", "GEMM"]
    assert prog.uops.size == 2 and prog.uop_relocs == (0,)
    assert [(i.uop_bgn, i.uop_end, i.iter_out, i.iter_in) for i in insns[1:4]] == [(0, 2, 2, 1), (0, 2, 2, 1),
                                                                                   (0, 2, 3, 1)]
    assert [i.reset for i in insns[1:4]] == [0, 1, 0]


def test_uop_ring_wraps_and_evicts_small_config():
    """small: 256 uops. Kernels of 100: A@0, B@100, C wraps to 0 (evicts A), A reloads at 100
    (evicts B), C still resident, B wraps to 0 (evicts C), A still resident."""
    c = SMALL
    assert c.uop_depth == 256
    ka, kb, kc = _ring_kernel(0, "A"), _ring_kernel(4, "B"), _ring_kernel(8, "C")
    dev = Device("fsim", config=c, dram_size=1 << 20)
    out = dev.alloc(12 * c.out_elem_bytes, "out")
    s = CommandStream(c)
    for k in (ka, kb, kc, ka, kc, kb, ka):
        s.alu(k, AluOp.ADD, 1)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, out, x_size=12)
    prog = s.finish()
    insns = prog.instructions()
    loads = [(i.sram_base, i.dram_base, i.x_size) for i in insns if describe(i) == "LOAD.UOP"]
    assert loads == [(0, 0, 100), (100, 100, 100), (0, 200, 100), (100, 0, 100), (0, 100, 100)]
    alus = [(i.uop_bgn, i.uop_end) for i in insns if i.opcode == isa.Op.ALU]
    assert alus == [(0, 100), (100, 200), (0, 100), (100, 200), (0, 100), (0, 100), (100, 200)]
    assert [describe(i) for i in insns[:12]] == ["LOAD.UOP", "ALU"] * 4 + ["ALU", "LOAD.UOP", "ALU", "ALU"]
    assert prog.uops.size == 300
    assert prog.uop_relocs == tuple(k for k, i in enumerate(insns) if describe(i) == "LOAD.UOP")
    dev.run(prog)
    got = out.read(np.int8, (12, c.block_out))
    # A ran 3 times, B and C twice, each adding 1 to each of its 4 rows 25 times
    assert got[:, 0].tolist() == [75] * 4 + [50] * 8
    assert (got == got[:, :1]).all()


def test_kernel_filling_the_uop_buffer_exactly():
    c = SMALL
    s = CommandStream(c)
    s.alu(UopKernel(tuple((i % 3, 0, 0) for i in range(256)), name="full"), AluOp.ADD, 1)
    s.alu(_ring_kernel(0, "A"), AluOp.ADD, 1)
    insns = s.finish().instructions()
    assert [(i.sram_base, i.x_size) for i in insns if describe(i) == "LOAD.UOP"] == [(0, 256), (0, 100)]


def test_kernel_larger_than_uop_buffer():
    s = CommandStream(SMALL)
    with pytest.raises(StreamError) as ei:
        s.gemm(UopKernel(tuple((i % 3, 0, 0) for i in range(257)), name="huge"))
    msg = str(ei.value)
    assert "'huge'" in msg and "257" in msg and "256" in msg and "gemm" in msg


def test_kernel_index_too_wide_for_uop_field():
    s = CommandStream(SMALL)  # 7-bit uop fields
    with pytest.raises(StreamError, match="'wide'.*dst_idx"):
        s.gemm(UopKernel.single(dst=128, name="wide"))


def test_kernel_errors():
    with pytest.raises(KernelError) as ei:
        UopKernel(((3, 0, 0), (1, 0, 0), (1, 2, 2)), name="dup")
    assert "'dup'" in str(ei.value) and "uops 1 and 2" in str(ei.value) and "row 1" in str(ei.value)
    with pytest.raises(KernelError, match=r"'three' has 3 loops"):
        UopKernel.single(loops=(Loop(1), Loop(1), Loop(1)), name="three")
    with pytest.raises(KernelError, match=r"'empty' has no uops"):
        UopKernel((), name="empty")
    with pytest.raises(KernelError, match="'neg'"):
        UopKernel(((0, -1, 0),), name="neg")
    with pytest.raises(KernelError, match="'zero'.*loop 0"):
        UopKernel.single(loops=(Loop(0),), name="zero")
    assert UopKernel(((0, 0, 0), (1, 0, 0)), (Loop(3), Loop(5))).iterations == 30


def test_kernel_rejects_same_row_two_uops_apart_like_vta():
    with pytest.raises(KernelError):
        UopKernel(((0, 0, 0), (1, 0, 0), (0, 1, 1)), name="gap1")
