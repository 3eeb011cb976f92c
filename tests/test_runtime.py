"""Tests of the runtime (vdla.runtime): DRAM allocator and buffers, CommandStream dependency
flags and uop caching against VTA's runtime rules (/work/shared/reference/vta.md §5.3-5.5),
kernel rules, program files, devices, and end-to-end programs checked against numpy.

Expected flag sequences are literal tables worked out by hand from VTA's `DepPush`,
`DepPop`, `CommitPendingPop` and `Synchronize` (runtime.cc), not from the code under test.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from simhelpers import describe, flag_table

from vdla import isa
from vdla.config import PRESETS
from vdla.runtime import (
    Allocator,
    AluOp,
    Buffer,
    BufferError_,
    CommandStream,
    Device,
    DeviceError,
    KernelError,
    Loop,
    Mem,
    OutOfMemoryError,
    Program,
    ProgramFileError,
    Stage,
    StreamError,
    UopKernel,
)
from vdla.simulator import TokenUnderflowError

REPO = Path(__file__).resolve().parents[1]
SMALL = PRESETS["small"]
DEFAULT = PRESETS["default"]
L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
PAGE = 4096


def wrap8(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + 128) % 256 - 128).astype(np.int8)


def wrap32(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)


# =====================================================================================
# Allocator and Buffer
# =====================================================================================


def test_allocator_alignment_and_no_zero_address():
    a = Allocator(1 << 20)
    addrs = [a.alloc(n) for n in (1, 100, 4096, 5000, 3)]
    assert all(x % PAGE == 0 and x != 0 for x in addrs)
    big = a.alloc(10, align=1 << 16)
    assert big % (1 << 16) == 0 and big != 0
    # no overlaps
    spans = sorted([(x, n) for x, n in zip(addrs, (1, 100, 4096, 5000, 3))] + [(big, 10)])
    assert all(s0 + n0 <= s1 for (s0, n0), (s1, _) in zip(spans, spans[1:]))


def test_allocator_alignment_gap_is_reused():
    a = Allocator(1 << 20, align=16)
    x = a.alloc(16)  # 4096
    y = a.alloc(16, align=1 << 14)  # 16384: leaves a gap [4112, 16384)
    z = a.alloc(16)
    assert (x, y, z) == (PAGE, 1 << 14, PAGE + 16)


def test_allocator_exhaust_free_coalesce_reallocate():
    size = 1 << 16
    a = Allocator(size)
    blocks = []
    while True:
        try:
            blocks.append(a.alloc(PAGE))
        except OutOfMemoryError:
            break
    assert len(blocks) == (size - PAGE) // PAGE and 0 not in blocks
    assert a.free_bytes == 0
    rng = np.random.default_rng(0)
    for i in rng.permutation(len(blocks)):
        a.free(blocks[int(i)])
    assert a.free_bytes == size - PAGE and a.largest_free == size - PAGE
    assert a.alloc(size - PAGE) == PAGE  # only possible if every block coalesced
    with pytest.raises(OutOfMemoryError):
        a.alloc(1)


def test_allocator_oom_message():
    a = Allocator(1 << 16)
    a.alloc(3 * PAGE)
    with pytest.raises(OutOfMemoryError) as ei:
        a.alloc(1 << 20)
    msg = str(ei.value)
    assert "1048576 bytes" in msg and f"{(1 << 16) - 4 * PAGE} bytes free" in msg


def test_allocator_double_free_and_bad_args():
    a = Allocator(1 << 16)
    x = a.alloc(10)
    a.free(x)
    with pytest.raises(BufferError_, match="double free"):
        a.free(x)
    with pytest.raises(BufferError_):
        a.free(12345)
    with pytest.raises(ValueError):
        a.alloc(0)
    with pytest.raises(ValueError):
        Allocator(PAGE)


@pytest.mark.parametrize("preset", ["default", "small", "batch2"])
def test_device_buffers_aligned_to_every_element(preset):
    dev = Device("fsim", config=preset, dram_size=1 << 22)
    c = dev.config
    for n in (1, 7, 300, 5000):
        b = dev.alloc(n)
        for eb in (c.inp_elem_bytes, c.wgt_elem_bytes, c.acc_elem_bytes, c.out_elem_bytes, c.uop_elem_bytes,
                   c.acc8_elem_bytes):
            assert b.addr % eb == 0
        assert b.addr != 0


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.float32])
def test_buffer_round_trip(dtype):
    dev = Device("fsim", dram_size=1 << 20)
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((3, 5, 7)) * 100).astype(dtype)
    buf = dev.array(data, "x")
    assert buf.nbytes == data.nbytes
    assert np.array_equal(buf.read(dtype, data.shape), data)
    assert np.array_equal(buf.read(dtype), data.ravel())
    # partial write at an offset, bytes input
    buf.write(b"\x01\x02", offset=4)
    raw = buf.read(np.uint8)
    assert raw[4:6].tolist() == [1, 2] and np.array_equal(raw[:4], data.view(np.uint8).ravel()[:4])
    assert np.array_equal(buf.read(np.uint8, 3, offset=6), data.view(np.uint8).ravel()[6:9])


def test_buffer_access_past_end_and_use_after_free():
    dev = Device("fsim", dram_size=1 << 20)
    buf = dev.alloc(16, "b")
    with pytest.raises(BufferError_, match=r"b: access \[0, 17\) is outside the buffer \(16 bytes\)"):
        buf.write(np.zeros(17, np.uint8))
    with pytest.raises(BufferError_, match="outside"):
        buf.write(b"\x00\x00", offset=15)
    with pytest.raises(BufferError_, match="outside"):
        buf.read(np.int32, 5)
    with pytest.raises(BufferError_, match="outside"):
        buf.read(np.uint8, 1, offset=-1)
    dev.free(buf)
    with pytest.raises(BufferError_, match="b was freed"):
        buf.read()
    with pytest.raises(BufferError_, match="freed"):
        buf.write(b"\x00")
    with pytest.raises(BufferError_, match="already freed"):
        buf.free()


# =====================================================================================
# CommandStream: dependency flags (VTA runtime §5.3, §5.5) as literal tables
# =====================================================================================


def _table(s: CommandStream):
    return flag_table(s.insns)


def test_pending_pop_attaches_to_next_instruction_of_that_stage():
    c = SMALL
    s = CommandStream(c)
    s.dep_pop(L, G)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)  # load stage: not affected
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)  # first compute instruction takes the pop
    s.load_2d(Mem.ACC, 1, PAGE, x_size=1)
    s.dep_pop(G, L)
    s.dep_pop(S, G)
    s.load_2d(Mem.WGT, 0, PAGE, x_size=1)
    s.store_2d(0, PAGE, x_size=1)  # store stage: no pending pop
    s.load_2d(Mem.ACC_8BIT, 0, PAGE, x_size=1)
    assert _table(s) == [
        ("LOAD.INP", "-"),
        ("LOAD.ACC", "pop_prev"),
        ("LOAD.ACC", "-"),
        ("LOAD.WGT", "pop_next"),
        ("STORE", "-"),
        ("LOAD.ACC_8BIT", "pop_next"),
    ]


def test_pending_pop_goes_to_uop_load_of_a_new_kernel():
    """VTA's PushGEMMOp emits the LOAD UOP first, so it carries the pending pop; a cached
    kernel emits no load and the GEMM itself carries it."""
    s = CommandStream(SMALL)
    k = UopKernel.single(loops=(Loop(4, dst=1),), name="k")
    s.dep_pop(L, G)
    s.gemm(k)
    s.dep_pop(L, G)
    s.gemm(k)
    assert _table(s) == [("LOAD.UOP", "pop_prev"), ("GEMM", "-"), ("GEMM", "pop_prev")]


def test_second_pending_pop_commits_a_nop():
    s = CommandStream(SMALL)
    s.dep_pop(L, G)
    s.dep_pop(L, G)  # the first becomes a compute NOP
    s.dep_pop(S, G)  # other kind: no NOP, both pending
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)
    s.dep_pop(G, S)
    s.dep_pop(G, S)
    s.dep_pop(G, L)
    s.dep_pop(G, L)
    s.store_2d(0, PAGE, x_size=1)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    assert _table(s) == [
        ("NOP.G", "pop_prev"),
        ("LOAD.ACC", "pop_prev+pop_next"),
        ("NOP.S", "pop_prev"),
        ("NOP.L", "pop_next"),
        ("STORE", "pop_prev"),
        ("LOAD.INP", "pop_next"),
    ]


def test_dep_push_sets_flag_on_last_instruction_or_emits_nop():
    s = CommandStream(SMALL)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)  # 0
    s.dep_push(L, G)  # flag on 0
    s.dep_push(L, G)  # flag taken: NOP.L 1
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)  # 2
    s.dep_push(L, G)  # last is compute: NOP.L 3
    s.dep_push(G, L)  # last is load: NOP.G 4
    s.dep_push(G, S)  # last is compute with push_next free: flag on 4
    s.dep_pop(G, L)  # pending on load
    s.dep_push(L, G)  # commits the pending pop as NOP.L 5, then sets push_next on it
    s.store_2d(0, PAGE, x_size=1)  # 6
    s.dep_push(S, G)  # flag on 6
    assert _table(s) == [
        ("LOAD.INP", "push_next"),
        ("NOP.L", "push_next"),
        ("LOAD.ACC", "-"),
        ("NOP.L", "push_next"),
        ("NOP.G", "push_prev+push_next"),
        ("NOP.L", "pop_next+push_next"),
        ("STORE", "push_prev"),
    ]


def test_finish_on_empty_stream_is_vta_synchronize():
    prog = CommandStream(SMALL).finish()
    assert flag_table(prog.instructions()) == [
        ("NOP.S", "push_prev"),
        ("NOP.L", "push_next"),
        ("NOP.G", "pop_prev+pop_next"),
        ("FINISH", "-"),
    ]
    assert Device("fsim:small").run(prog).warnings == []


def test_finish_after_store_and_pending_pop():
    s = CommandStream(SMALL)
    s.gemm(UopKernel.single(loops=(Loop(2, dst=1),), name="z"), reset=True)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, PAGE, x_size=2)
    s.dep_pop(L, G)  # left pending by the user: finish() must not put it on FINISH
    prog = s.finish()
    assert flag_table(prog.instructions()) == [
        ("LOAD.UOP", "-"),
        ("GEMM", "push_next"),
        ("STORE", "pop_prev+push_prev"),  # dep_push(S, G) finds the store's push_prev free
        ("NOP.L", "push_next"),
        # dep_pop(S, G) joins the user's pending pop_prev; dep_pop(L, G) then finds pop_prev
        # pending and commits both as a NOP before recording its own
        ("NOP.G", "pop_prev+pop_next"),
        ("NOP.G", "pop_prev"),
        ("FINISH", "-"),
    ]
    assert not any(i.pop_prev or i.pop_next for i in prog.instructions() if i.opcode == isa.Op.FINISH)
    with pytest.raises(TokenUnderflowError, match="l2g"):  # two pops, one push: the user's bug
        Device("fsim:small").run(prog)


def test_finish_program_runs_clean():
    s = CommandStream(SMALL)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    s.gemm(UopKernel.single(name="r"), reset=True)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, PAGE, x_size=1)
    report = Device("fsim:small").run(s.finish())
    assert report.warnings == []


@pytest.mark.parametrize(("a", "b"), [(L, S), (S, L), (G, G), (L, L)])
def test_no_queue_between_stages(a, b):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match="no token queue"):
        s.dep_pop(a, b)
    with pytest.raises(StreamError, match=rf"dep_push\({a.name}, {b.name}\)"):
        s.dep_push(a, b)


def test_stream_is_closed_after_finish():
    s = CommandStream(SMALL)
    s.finish()
    with pytest.raises(StreamError, match="finished"):
        s.load_2d(Mem.INP, 0, PAGE, x_size=1)


# =====================================================================================
# uop kernels and the uop cache
# =====================================================================================


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


def _ring_kernel(row0: int, name: str) -> UopKernel:
    return UopKernel(tuple((row0 + i % 4, 0, 0) for i in range(100)), name=name)


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


# =====================================================================================
# CommandStream argument errors
# =====================================================================================


def test_misaligned_buffer():
    s = CommandStream(DEFAULT)
    with pytest.raises(StreamError, match=r"load_2d\(WGT, sram=0\): address 0x1010 is not aligned to the WGT "
                                          r"element size \(256 bytes\)"):
        s.load_2d(Mem.WGT, 0, PAGE + 16, x_size=1)
    dram = np.zeros(1 << 16, np.uint8)
    odd = Buffer(dram, Allocator(1 << 16), PAGE + 8, 64, "odd")
    with pytest.raises(StreamError, match="odd is not aligned"):
        s.load_2d(Mem.INP, 0, odd, x_size=1)
    with pytest.raises(StreamError, match=r"store_2d\(sram=0\).*not aligned"):
        s.store_2d(0, odd, x_size=1)
    assert s.insns == []


@pytest.mark.parametrize("call", [
    lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=0),
    lambda s: s.load_2d(Mem.ACC, 0, PAGE, x_size=2, y_size=0),
    lambda s: s.store_2d(0, PAGE, x_size=0),
])
def test_zero_sizes(call):
    with pytest.raises(StreamError, match="must be positive"):
        call(CommandStream(SMALL))


def test_load_out_rejected():
    with pytest.raises(StreamError, match="OUT cannot be loaded"):
        CommandStream(SMALL).load_2d(Mem.OUT, 0, PAGE, x_size=1)


def test_rejected_call_keeps_pending_pop():
    s = CommandStream(SMALL)
    s.dep_pop(G, L)
    with pytest.raises(StreamError):
        s.load_2d(Mem.INP, 0, PAGE, x_size=70000)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    assert _table(s) == [("LOAD.INP", "pop_next")]


@pytest.mark.parametrize("imm", [32768, -32769, 1 << 20])
def test_immediate_out_of_range(imm):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match=rf"alu\(ADD, 'k'\): immediate {imm} does not fit in 16 bits "
                                          r"\(-32768..32767\)"):
        s.alu(UopKernel.single(name="k"), AluOp.ADD, imm)


def test_immediate_range_ends_ok():
    s = CommandStream(SMALL)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, 32767)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, -32768)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, 0)
    assert [(i.use_imm, i.imm) for i in s.insns[1:]] == [(1, 32767), (1, -32768), (1, 0)]


@pytest.mark.parametrize(("call", "what", "field"), [
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=70000), r"load_2d\(INP, sram=0\)", "x_size"),
    (lambda s: s.load_2d(Mem.INP, 70000, PAGE, x_size=1), r"load_2d\(INP, sram=70000\)", "sram_base"),
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=1, x_pad=(16, 0)), r"load_2d\(INP, sram=0\)", "x_pad_0"),
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=2, y_size=2, x_stride=1 << 16), r"load_2d", "x_stride"),
    (lambda s: s.store_2d(0, PAGE, x_size=1, y_size=70000), r"store_2d\(sram=0\)", "y_size"),
    (lambda s: s.gemm(UopKernel.single(loops=(Loop(1 << 14),), name="big")), r"gemm\('big'\)", "iter_out"),
    (lambda s: s.alu(UopKernel.single(loops=(Loop(2, dst=200),), name="f"), AluOp.MAX, 0), r"alu\(MAX, 'f'\)",
     "dst_factor_out"),
])
def test_field_overflow_names_the_call(call, what, field):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match=what) as ei:
        call(s)
    assert f"'{field}'" in str(ei.value)


# =====================================================================================
# Program files
# =====================================================================================


def _sample_program() -> Program:
    s = CommandStream(SMALL, "sample")
    s.load_2d(Mem.INP, 0, PAGE, x_size=2)
    s.dep_push(L, G)
    s.dep_pop(L, G)
    s.gemm(UopKernel(((0, 0, 0), (1, 1, 1)), (Loop(2, dst=2, src=1),), "k"))
    s.alu(UopKernel.single(loops=(Loop(4, dst=1),), name="r"), AluOp.SHR, 3)
    prog = s.finish()
    prog.data = ((PAGE, bytes(range(8))), (3 * PAGE, b"\xff" * 5))
    return prog


def test_program_round_trip(tmp_path):
    prog = _sample_program()
    path = tmp_path / "p.vdla"
    prog.save(path)
    back = Program.load(path)
    assert np.array_equal(back.insns, prog.insns) and back.insns.dtype == np.uint64
    assert np.array_equal(back.uops, prog.uops) and back.uops.dtype == np.uint32 and back.uops.size == 3
    assert back.uop_relocs == prog.uop_relocs == (1, 3)
    assert back.data == prog.data
    assert back.config == prog.config == SMALL
    assert back.name == "sample"
    assert back.to_bytes() == prog.to_bytes()


def _preamble(blob: bytes):
    return struct.unpack_from("<8sIII", blob)


def test_program_file_errors(tmp_path):
    blob = _sample_program().to_bytes()
    magic, version, head_len, crc = _preamble(blob)
    assert magic == b"VDLAPROG"
    payload_at = 20 + head_len

    def err(data: bytes) -> str:
        path = tmp_path / "bad.vdla"
        path.write_bytes(data)
        with pytest.raises(ProgramFileError) as ei:
            Program.load(path)
        assert str(path) in str(ei.value)
        return str(ei.value)

    assert "not a vdla program" in err(b"NOTVDLA!" + blob[8:])
    wrong = struct.pack("<8sIII", magic, 2, head_len, crc) + blob[20:]
    assert "version 2 is not supported" in err(wrong)
    for cut in (0, 10, 19):
        assert "truncated" in err(blob[:cut]) and "preamble" in err(blob[:cut])
    for cut in (20, 21, payload_at - 1):
        assert "truncated inside the header" in err(blob[:cut])
    for cut in (payload_at, payload_at + 17, len(blob) - 1):
        assert "truncated" in err(blob[:cut]) and "payload" in err(blob[:cut])
    for pos in (payload_at, payload_at + 40, len(blob) - 1):
        flipped = bytearray(blob)
        flipped[pos] ^= 0x10
        assert "checksum" in err(bytes(flipped))
    assert "2 unexpected bytes after the payload" in err(blob + b"\x00\x00")
    bad_head = bytearray(blob)
    bad_head[20] = ord("[")
    assert "corrupt header" in err(bytes(bad_head))


def test_program_header_corruption_detected():
    blob = _sample_program().to_bytes()
    head_len = _preamble(blob)[2]
    head = blob[20 : 20 + head_len]
    assert b'"uop_relocs": [1, 3]' in head
    bad = blob[:20] + head.replace(b'"uop_relocs": [1, 3]', b'"uop_relocs": [2, 3]') + blob[20 + head_len :]
    assert len(bad) == len(blob)
    with pytest.raises(ProgramFileError):
        Program.from_bytes(bad)


# =====================================================================================
# Devices
# =====================================================================================


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


# =====================================================================================
# End to end on Device("fsim"), checked against numpy
# =====================================================================================


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


# =====================================================================================
# The example, as a module and as the demo command
# =====================================================================================


def _example():
    spec = importlib.util.spec_from_file_location("blocked_matmul", REPO / "examples" / "blocked_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("args", [
    ["--m", "16", "--n", "32", "--k", "64"],
    ["--m", "16", "--n", "16", "--k", "32", "--config", "small"],
    ["--m", "32", "--n", "64", "--k", "128", "--config", "small", "--shift", "5", "--seed", "3"],
    ["--m", "8", "--n", "16", "--k", "16", "--config", "batch2"],
])
def test_blocked_matmul_main(args, capsys):
    assert _example().main(args) == 0
    out = capsys.readouterr().out
    assert "result: PASS" in out


def test_blocked_matmul_demo_command():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "blocked_matmul.py"), "--m", "32", "--n", "32", "--k", "64"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
    assert "GEMM utilisation" in proc.stdout
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("GEMM utilisation")]
    assert len(lines) == 1 and "%" in lines[0] and "GOPS" in lines[0]
