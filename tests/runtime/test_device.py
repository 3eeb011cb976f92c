"""Devices (vdla.runtime.device): config checks, backends by name, data segments, and programs end
to end on Device("fsim") against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.config import PRESETS
from vdla.runtime import (
    AluOp,
    CommandStream,
    Device,
    DeviceError,
    Loop,
    Mem,
    OutOfMemoryError,
    Program,
    Stage,
    UopKernel,
)

SMALL = PRESETS["small"]


DEFAULT = PRESETS["default"]


L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


PAGE = 4096


def test_device_rejects_program_for_other_config():
    prog = CommandStream(SMALL, "tiny").finish()
    dev = Device("fsim")
    with pytest.raises(DeviceError) as ei:
        dev.run(prog)
    msg = str(ei.value)
    assert "'small'" in msg and "'default'" in msg and "'tiny'" in msg


def test_unknown_backend_lists_available():
    with pytest.raises(DeviceError, match=r"unknown device 'nope'; available: .*fsim"):
        Device("nope")


def test_fsim_preset_suffix():
    assert Device("fsim:small").config == SMALL
    assert Device("fsim", config="batch2").config == PRESETS["batch2"]
    assert Device().config == DEFAULT


def test_data_segments_are_placed_and_released():
    dev = Device("fsim:small", dram_size=1 << 20)
    free0 = dev.allocator.free_bytes
    src = 16 * PAGE
    s = CommandStream(SMALL)
    s.load_2d(Mem.ACC, 0, src, x_size=2)
    s.alu(UopKernel.single(loops=(Loop(2, dst=1),), name="k"), AluOp.ADD, 1)
    dst = dev.alloc(2 * SMALL.out_elem_bytes, "dst")
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, dst, x_size=2)
    prog = s.finish()
    prog.data = ((src, np.arange(8, dtype="<i4").tobytes()),)
    dev.run(prog)
    assert dst.read(np.int8).tolist() == list(range(1, 9))
    assert dev.allocator.free_bytes == free0 - dst.nbytes  # only `dst` remains allocated


def test_data_segment_overlapping_a_buffer_keeps_the_buffer():
    dev = Device("fsim", dram_size=1 << 20)
    user = dev.alloc(PAGE, "user")
    prog = CommandStream(DEFAULT, "p").finish()
    prog.data = ((user.addr, b"\x01" * 16),)
    with pytest.raises(OutOfMemoryError):
        dev.run(prog)
    other = dev.alloc(PAGE, "other")
    assert other.addr != user.addr


SMALL = PRESETS["small"]


L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def wrap8(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + 128) % 256 - 128).astype(np.int8)


def wrap32(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)


def _gemm_program(c, dev, rng, m=4, nn=3, kk=2):
    """C[i, j] = sum_k A[i, k] . W[j, k]^T over blocks; kk input blocks per row."""
    a = rng.integers(-128, 128, (m, kk, c.batch, c.block_in), dtype=np.int8)
    w = rng.integers(-128, 128, (nn, kk, c.block_out, c.block_in), dtype=np.int8)
    a_buf, w_buf = dev.array(a, "A"), dev.array(w, "W")
    c_buf = dev.alloc(m * nn * c.out_elem_bytes, "C")
    s = CommandStream(c, "gemm-e2e")
    s.load_2d(Mem.INP, 0, a_buf, x_size=m * kk)
    s.load_2d(Mem.WGT, 0, w_buf, x_size=nn * kk)
    s.dep_push(L, G)
    s.dep_pop(L, G)
    s.gemm(UopKernel.single(loops=(Loop(m * nn, dst=1),), name="reset"), reset=True)
    kernel = UopKernel(tuple((j, 0, j * kk) for j in range(nn)),
                       (Loop(m, dst=nn, src=kk), Loop(kk, src=1, wgt=1)), "mm")
    s.gemm(kernel)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, c_buf, x_size=m * nn)
    ref = np.einsum("ikbc,jkoc->ijbo", a.astype(np.int64), w.astype(np.int64))
    return s.finish(), c_buf, wrap8(ref)


@pytest.mark.parametrize("preset", ["default", "small", "batch2"])
def test_alu_program_end_to_end(preset):
    c = PRESETS[preset]
    dev = Device("fsim", config=c, dram_size=1 << 22)
    rng = np.random.default_rng(2)
    n = 8
    a = rng.integers(-(1 << 20), 1 << 20, (n, c.batch, c.block_out)).astype(np.int32)
    b = rng.integers(-(1 << 20), 1 << 20, (n, c.batch, c.block_out)).astype(np.int32)
    ab = dev.array(np.concatenate([a, b]), "ab")
    out = dev.alloc(n * c.out_elem_bytes, "out")
    s = CommandStream(c, "alu-e2e")
    s.load_2d(Mem.ACC, 0, ab, x_size=2 * n)
    pair = UopKernel.single(dst=0, src=n, loops=(Loop(n, dst=1, src=1),), name="pair")
    rows = UopKernel.single(loops=(Loop(n, dst=1),), name="rows")
    s.alu(pair, AluOp.MAX)
    s.alu(rows, AluOp.ADD, -1234)
    s.alu(pair, AluOp.MUL)
    s.alu(rows, AluOp.SHR, 9)
    s.alu(rows, AluOp.SHR, -2)  # left by 2
    s.alu(rows, AluOp.MIN, 3000)
    s.alu(pair, AluOp.ADD)
    s.alu(rows, AluOp.MAX, -100)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, out, x_size=n)
    report = dev.run(s.finish())
    x, y = a.astype(np.int64), b.astype(np.int64)
    x = np.maximum(x, y)
    x = wrap32(x - 1234)
    x = wrap32(x * y)
    x = x >> 9
    x = wrap32(x << 2)
    x = np.minimum(x, 3000)
    x = wrap32(x + y)
    x = np.maximum(x, -100)
    assert np.array_equal(out.read(np.int8, (n, c.batch, c.block_out)), wrap8(x))
    assert report.counters["alu_counter"] == 8 * n and report.warnings == []


@pytest.mark.parametrize("preset", ["default", "small", "batch2"])
def test_gemm_program_end_to_end(preset):
    c = PRESETS[preset]
    dev = Device("fsim", config=c, dram_size=1 << 22)
    prog, c_buf, ref = _gemm_program(c, dev, np.random.default_rng(3))
    report = dev.run(prog)
    assert np.array_equal(c_buf.read(np.int8, ref.shape), ref)
    assert report.counters["gemm_counter"] == 4 * 3 * 2


def test_same_program_twice_gives_same_result():
    c = SMALL
    dev = Device("fsim", config=c, dram_size=1 << 22)
    prog, c_buf, ref = _gemm_program(c, dev, np.random.default_rng(4))
    insns_before = prog.insns.copy()
    free_before = dev.allocator.free_bytes
    r1 = dev.run(prog)
    first = c_buf.read(np.int8, ref.shape)
    c_buf.write(np.zeros(c_buf.nbytes, np.uint8))
    r2 = dev.run(prog)
    assert np.array_equal(first, ref) and np.array_equal(c_buf.read(np.int8, ref.shape), ref)
    assert np.array_equal(prog.insns, insns_before)  # relocation happened on a copy
    assert dev.allocator.free_bytes == free_before  # uop and instruction segments released
    assert r1.cycles == r2.cycles and r1.counters == r2.counters


def test_program_survives_file_round_trip_and_runs(tmp_path):
    c = PRESETS["batch2"]
    dev = Device("fsim", config=c, dram_size=1 << 22)
    prog, c_buf, ref = _gemm_program(c, dev, np.random.default_rng(5))
    prog.save(tmp_path / "mm.vdla")
    dev.run(Program.load(tmp_path / "mm.vdla"))
    assert np.array_equal(c_buf.read(np.int8, ref.shape), ref)
