"""Tests of the golden simulator (vdla.simulator) against an independent reference model.

`Ref` below re-implements the ISA semantics of /work/shared/reference/vta.md §1 and
`vdla.isa.SEMANTIC_CHOICES` with plain Python loops over elements and uop-iterations
(numpy only for int64 element-wise arithmetic and one exact integer dot product per
uop-iteration). It shares no code with `vdla.simulator`: micro-ops are packed and
unpacked by hand (`simhelpers.pack_uops`), element sizes come from `simhelpers.Geometry`.

The second half checks the scheduler: counters, the cycle model (formulas from
`vdla/simulator/timing.py`'s docstring, recomputed here), and that deadlocks, token
underflow, leftover tokens, races and bad programs are reported precisely and never hang.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from simhelpers import DramImage, Geometry, dtype_of, pack_uops, place_insns, run_insns

from vdla import isa
from vdla.config import PRESETS, Config
from vdla.isa import AluOp, Mem, Op
from vdla.simulator import (
    DeadlockError,
    ExecutionError,
    Machine,
    ProgramError,
    RaceError,
    SimulatorError,
    TokenError,
    TokenUnderflowError,
    run,
    simulate,
)

PRESET_NAMES = ["default", "small", "batch2"]
SMALL = PRESETS["small"]
DEFAULT = PRESETS["default"]


# =====================================================================================
# The independent reference model
# =====================================================================================


def wrap(v, bits: int):
    """Two's-complement wrap of Python ints or int64 arrays to `bits` bits."""
    half = 1 << (bits - 1)
    return ((v + half) % (1 << bits)) - half


def alu_ref(op: int, a: int, b: int, acc_width: int = 32) -> int:
    """One lane of the tensor ALU on Python ints (SEMANTIC_CHOICES: MUL, SHR amount)."""
    if op == AluOp.MIN:
        return min(a, b)
    if op == AluOp.MAX:
        return max(a, b)
    if op == AluOp.ADD:
        return wrap(a + b, acc_width)
    if op == AluOp.MUL:
        return wrap(a * b, acc_width)
    if op == AluOp.SHR:
        bits = acc_width.bit_length()  # log2(acc_width) + 1
        n = wrap(b, bits)  # the operand's low bits, read as signed
        return a >> n if n >= 0 else wrap(a << -n, acc_width)
    raise AssertionError(op)


class Ref:
    """Architectural state plus one-instruction-at-a-time semantics, in program order."""

    def __init__(self, c: Config) -> None:
        self.c, g = c, Geometry.of(c)
        self.g = g
        self.uop = np.zeros(g.uop_depth, dtype=np.int64)  # raw words
        self.inp = np.zeros((g.inp_depth, c.batch, c.block_in), dtype=np.int64)
        self.wgt = np.zeros((g.wgt_depth, c.block_out, c.block_in), dtype=np.int64)
        self.acc = np.zeros((g.acc_depth, c.batch, c.block_out), dtype=np.int64)
        self.out = np.zeros((g.acc_depth, c.batch, c.block_out), dtype=np.int64)

    def run(self, insns, dram: np.ndarray) -> None:
        for insn in insns:
            op = insn.opcode
            if op == Op.LOAD:
                self.load(insn, dram)
            elif op == Op.STORE:
                self.store(insn, dram)
            elif op == Op.GEMM:
                self.gemm(insn)
            elif op == Op.ALU:
                self.alu(insn)

    def _mem(self, mem: int):
        c, g = self.c, self.g
        return {
            Mem.UOP: (4, np.dtype("<u4"), self.uop, ()),
            Mem.INP: (g.inp_bytes, dtype_of(c.inp_width), self.inp, (c.batch, c.block_in)),
            Mem.WGT: (g.wgt_bytes, dtype_of(c.wgt_width), self.wgt, (c.block_out, c.block_in)),
            Mem.ACC: (g.acc_bytes, dtype_of(c.acc_width), self.acc, (c.batch, c.block_out)),
            Mem.ACC_8BIT: (g.acc8_bytes, np.dtype("<i1"), self.acc, (c.batch, c.block_out)),
        }[mem]

    def load(self, insn, dram) -> None:
        if insn.x_size == 0:
            return
        eb, dt, sram, shape = self._mem(insn.memory_type)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        height = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        for r in range(height):
            for x in range(width):
                y, xx = r - insn.y_pad_0, x - insn.x_pad_0
                idx = insn.sram_base + r * width + x
                if 0 <= y < insn.y_size and 0 <= xx < insn.x_size:
                    e = insn.dram_base + y * insn.x_stride + xx
                    val = np.frombuffer(dram[e * eb : (e + 1) * eb].tobytes(), dt).astype(np.int64)
                    sram[idx] = val.reshape(shape) if shape else val[0]
                else:
                    sram[idx] = 0

    def store(self, insn, dram) -> None:
        eb, dt = self.g.out_bytes, dtype_of(self.c.out_width)
        for y in range(insn.y_size):
            for x in range(insn.x_size):
                src = insn.sram_base + y * insn.x_size + x
                e = insn.dram_base + y * insn.x_stride + x
                dram[e * eb : (e + 1) * eb] = np.frombuffer(self.out[src].astype(dt).tobytes(), np.uint8)

    def decode_uop(self, k: int) -> tuple[int, int, int]:
        g, w = self.g, int(self.uop[k])
        return (
            w & ((1 << g.dst_bits) - 1),
            (w >> g.dst_bits) & ((1 << g.src_bits) - 1),
            (w >> (g.dst_bits + g.src_bits)) & ((1 << g.wgt_bits) - 1),
        )

    def _iterations(self, insn):
        for i in range(insn.iter_out):
            for j in range(insn.iter_in):
                for k in range(insn.uop_bgn, insn.uop_end):
                    yield i, j, self.decode_uop(k)

    def gemm(self, insn) -> None:
        aw, ow = self.c.acc_width, self.c.out_width
        for i, j, (d, s, w) in self._iterations(insn):
            a = d + i * insn.dst_factor_out + j * insn.dst_factor_in
            if insn.reset:
                self.acc[a] = 0
                self.out[a] = 0
                continue
            x = s + i * insn.src_factor_out + j * insn.src_factor_in
            wi = w + i * insn.wgt_factor_out + j * insn.wgt_factor_in
            # out[b][o] = sum_c inp[x][b][c] * wgt[w][o][c]   (exact in int64)
            self.acc[a] = wrap(self.acc[a] + self.inp[x] @ self.wgt[wi].T, aw)
            self.out[a] = wrap(self.acc[a], ow)

    def alu(self, insn) -> None:
        aw, ow = self.c.acc_width, self.c.out_width
        for i, j, (d, s, _) in self._iterations(insn):
            a = d + i * insn.dst_factor_out + j * insn.dst_factor_in
            lhs = self.acc[a].ravel().tolist()
            if insn.use_imm:
                rhs = [insn.imm] * len(lhs)
            else:
                rhs = self.acc[s + i * insn.src_factor_out + j * insn.src_factor_in].ravel().tolist()
            res = [alu_ref(int(insn.alu_opcode), x, y, aw) for x, y in zip(lhs, rhs)]
            self.acc[a] = np.array(res, dtype=np.int64).reshape(self.acc[a].shape)
            self.out[a] = wrap(self.acc[a], ow)


# =====================================================================================
# Building test programs
# =====================================================================================


class Prog:
    """Data placed in a DRAM image plus an instruction list, run on both the simulator and Ref."""

    def __init__(self, c: Config, dram_size: int = 1 << 20) -> None:
        self.c, self.g = c, Geometry.of(c)
        self.image = DramImage(dram_size)
        self.insns: list = []

    def elem_bytes(self, mem: Mem) -> int:
        g = self.g
        return {Mem.UOP: 4, Mem.INP: g.inp_bytes, Mem.WGT: g.wgt_bytes, Mem.ACC: g.acc_bytes,
                Mem.ACC_8BIT: g.acc8_bytes, Mem.OUT: g.out_bytes}[mem]

    def data(self, arr: np.ndarray, mem: Mem) -> int:
        """Place `arr` and return its dram_base in elements of `mem`."""
        eb = self.elem_bytes(mem)
        addr = self.image.place(arr, align=256)
        assert addr % eb == 0
        return addr // eb

    def space(self, n_elems: int, mem: Mem, fill: int = 0) -> int:
        eb = self.elem_bytes(mem)
        addr = self.image.reserve(n_elems * eb, align=256)
        self.image.fill(addr, n_elems * eb, fill)
        return addr // eb

    def load(self, mem: Mem, arr: np.ndarray | None = None, *, dram_base: int | None = None, x_size: int | None = None,
             y_size: int = 1, x_stride: int | None = None, **fields) -> None:
        if arr is not None:
            dram_base = self.data(arr, mem)
            if x_size is None:
                x_size = len(arr) // y_size
        self.insns.append(isa.load(mem, dram_base=dram_base, x_size=x_size, y_size=y_size,
                                   x_stride=x_size if x_stride is None else x_stride, **fields))

    def uops(self, uops, sram_base: int = 0, **flags) -> None:
        self.load(Mem.UOP, pack_uops(uops, self.c), sram_base=sram_base, **flags)

    def add(self, *insns) -> None:
        self.insns.extend(insns)

    def run(self, *, strict: bool = True, finish: bool = True):
        """Run on the golden simulator and on Ref; return (report, sim DRAM, machine, Ref, ref DRAM)."""
        insns = self.insns + ([isa.finish()] if finish else [])
        addr, n = place_insns(self.image, insns, self.c)
        ref_dram = self.image.dram.copy()
        machine = Machine(self.c)
        report = run(self.c, self.image.dram, addr, n, machine=machine, strict=strict)
        ref = Ref(self.c)
        ref.run(insns, ref_dram)
        return report, self.image.dram, machine, ref, ref_dram


def assert_same_state(machine: Machine, ref: Ref, what: str = "") -> None:
    for name in ("inp", "wgt", "acc", "out"):
        got, exp = getattr(machine, name).astype(np.int64), getattr(ref, name)
        if not np.array_equal(got, exp):
            bad = np.argwhere(got != exp)[0]
            pytest.fail(f"{what}: {name}{tuple(bad)} = {got[tuple(bad)]}, reference {exp[tuple(bad)]}")
    assert np.array_equal(machine.uop.astype(np.int64), ref.uop), f"{what}: uop buffer differs"


def rng_inp(rng, c: Config, n: int) -> np.ndarray:
    return rng.integers(-128, 128, (n, c.batch, c.block_in), dtype=np.int8)


def rng_wgt(rng, c: Config, n: int) -> np.ndarray:
    return rng.integers(-128, 128, (n, c.block_out, c.block_in), dtype=np.int8)


def rng_acc(rng, c: Config, n: int, lo: int = -(1 << 31), hi: int = 1 << 31) -> np.ndarray:
    return rng.integers(lo, hi, (n, c.batch, c.block_out), dtype=np.int64).astype("<i4")


def rng_fill(rng, c: Config, mem: Mem, n: int) -> np.ndarray:
    if mem == Mem.INP:
        return rng_inp(rng, c, n)
    if mem == Mem.WGT:
        return rng_wgt(rng, c, n)
    if mem == Mem.ACC:
        return rng_acc(rng, c, n)
    if mem == Mem.ACC_8BIT:
        return rng.integers(-128, 128, (n, c.batch, c.block_out), dtype=np.int8)
    if mem == Mem.UOP:  # valid uops for the config
        g = Geometry.of(c)
        return pack_uops([(int(d), int(s), int(w)) for d, s, w in zip(
            rng.integers(0, g.acc_depth, n), rng.integers(0, min(g.acc_depth, g.inp_depth), n),
            rng.integers(0, g.wgt_depth, n))], c)
    raise AssertionError(mem)


def depth_of(c: Config, mem: Mem) -> int:
    g = Geometry.of(c)
    return {Mem.UOP: g.uop_depth, Mem.INP: g.inp_depth, Mem.WGT: g.wgt_depth, Mem.ACC: g.acc_depth,
            Mem.ACC_8BIT: g.acc_depth}[mem]


def sync_load_to_compute(p: Prog) -> None:
    """Make the last load-module instruction push l2g and the next compute one pop it."""
    last = p.insns[-1]
    assert isa.stage_of(last) == isa.Stage.LOAD
    p.insns[-1] = last.replace(push_next=1)


def set_out_rows(p: Prog, rows: np.ndarray, sram_base: int = 0, uop_slot: int = 0) -> None:
    """Put int32 `rows` in ACC[sram_base:] and copy them to OUT with ALU SHR by 0."""
    n = len(rows)
    p.load(Mem.ACC, rows, sram_base=sram_base)
    p.uops([(sram_base, 0, 0)], sram_base=uop_slot)
    p.add(isa.alu(AluOp.SHR, uop_bgn=uop_slot, uop_end=uop_slot + 1, iter_out=n, iter_in=1, dst_factor_out=1,
                  use_imm=1, imm=0))


# =====================================================================================
# LOAD: 2D strides and padding, every memory type
# =====================================================================================

# (name, y_size, x_size, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1)
LOAD_SHAPES = [
    ("plain", 3, 2, 2, 0, 0, 0, 0),
    ("strided", 3, 2, 5, 0, 0, 0, 0),
    ("all-pads", 2, 3, 4, 1, 2, 3, 1),
    ("y1-pads", 1, 4, 4, 2, 1, 1, 2),
    ("stride>size", 4, 1, 7, 0, 1, 1, 0),
    ("overlap", 3, 4, 2, 1, 0, 0, 1),
    ("stride0", 3, 2, 0, 0, 0, 1, 0),
    ("pads15-y", 1, 2, 2, 15, 15, 0, 0),
    ("pads15-x", 2, 1, 1, 0, 0, 15, 15),
    ("pads15-all", 1, 1, 1, 15, 15, 15, 15),
]
LOAD_MEMS = [Mem.INP, Mem.WGT, Mem.ACC, Mem.ACC_8BIT, Mem.UOP]


def _load_cases():
    cases = []
    for name in PRESET_NAMES:
        c = PRESETS[name]
        for mem in LOAD_MEMS:
            for shape in LOAD_SHAPES:
                _, y, x, _, yp0, yp1, xp0, xp1 = shape
                if mem == Mem.UOP and (yp0 or yp1 or xp0 or xp1):
                    continue  # UOP loads take no padding (tested as an error below)
                span = (yp0 + y + yp1) * (xp0 + x + xp1)
                if 3 + span > depth_of(c, mem):
                    continue
                cases.append(pytest.param(name, mem, shape, id=f"{name}-{mem.name}-{shape[0]}"))
    return cases


@pytest.mark.parametrize(("preset", "mem", "shape"), _load_cases())
def test_load_2d(preset, mem, shape):
    c = PRESETS[preset]
    _, y, x, stride, yp0, yp1, xp0, xp1 = shape
    rng = np.random.default_rng(zlib.crc32(f"{preset}-{mem.name}-{shape[0]}".encode()))
    p = Prog(c)
    span = (yp0 + y + yp1) * (xp0 + x + xp1)
    # Fill the target region (and a little beyond) with non-zero data first, so pad zeros show.
    fill_n = min(span + 6, depth_of(c, mem))
    p.load(mem, rng_fill(rng, c, mem, fill_n))
    n_src = (y - 1) * stride + x + 2
    p.load(mem, rng_fill(rng, c, mem, n_src), x_size=x, y_size=y, x_stride=stride, sram_base=3,
           y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1)
    if isa.stage_of(p.insns[-1]) == isa.Stage.LOAD:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, machine, ref, _ = p.run()
    assert_same_state(machine, ref, f"{preset} {mem.name} {shape}")


def test_load_literal_padding_layout():
    """A hand-worked 2D padded load, independent of Ref: INP on the small config (4 lanes)."""
    c = SMALL
    src = np.arange(1, 1 + 6 * 4, dtype=np.int8).reshape(6, 1, 4)  # element e holds 4e+1..4e+4
    p = Prog(c)
    # rows of 2 elements with stride 3 -> elements (0,1) and (3,4); pads: 1 row before, 1 col each side
    p.load(Mem.INP, src, x_size=2, y_size=2, x_stride=3, sram_base=5, y_pad_0=1, x_pad_0=1, x_pad_1=1)
    sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, m, _, _ = p.run()
    got = m.inp[5 : 5 + 3 * 4, 0, 0].tolist()  # first lane of each written element
    assert got == [0, 0, 0, 0, 0, 1, 5, 0, 0, 13, 17, 0]
    assert not m.inp[:5].any() and not m.inp[17:].any()


@pytest.mark.parametrize("mem", [Mem.INP, Mem.ACC], ids=["INP", "ACC"])
def test_load_pad_only(mem):
    c = SMALL
    rng = np.random.default_rng(1)
    p = Prog(c)
    p.load(mem, rng_fill(rng, c, mem, 20))
    base = p.data(rng_fill(rng, c, mem, 4), mem)
    p.add(isa.load(mem, sram_base=2, dram_base=base, y_size=0, x_size=2, x_stride=2, y_pad_0=1, y_pad_1=1,
                   x_pad_0=1))
    if mem == Mem.INP:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    _, _, machine, ref, _ = p.run()
    assert_same_state(machine, ref, "pad-only")
    assert not getattr(machine, {Mem.INP: "inp", Mem.ACC: "acc"}[mem])[2:8].any()


def test_store_zero_rows():
    c = SMALL
    p = Prog(c)
    base = p.space(4, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=0, x_size=2, x_stride=2))
    _, dram, _, _, ref_dram = p.run()
    assert np.array_equal(dram, ref_dram)


def test_load_uop_2d():
    """UOP loads are 2D too (SEMANTIC_CHOICES 'UOP loads')."""
    c = DEFAULT
    words = pack_uops([(i, i + 1, i + 2) for i in range(12)], c)
    p = Prog(c)
    p.load(Mem.UOP, words, x_size=3, y_size=3, x_stride=4, sram_base=10)
    _, _, m, ref, _ = p.run()
    assert m.uop[10:19].tolist() == [int(words[k]) for k in (0, 1, 2, 4, 5, 6, 8, 9, 10)]
    assert_same_state(m, ref)


def test_load_acc_8bit_sign_extends():
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC_8BIT, np.array([[[-128, -1, 0, 127]], [[1, 2, -3, 4]]], dtype=np.int8), sram_base=1)
    _, _, m, ref, _ = p.run()
    assert m.acc[1:3].reshape(2, 4).tolist() == [[-128, -1, 0, 127], [1, 2, -3, 4]]
    assert_same_state(m, ref)


# =====================================================================================
# STORE
# =====================================================================================

STORE_SHAPES = [("plain", 1, 5, 5), ("strided", 3, 2, 5), ("y1", 1, 3, 9), ("overlap", 3, 4, 2), ("stride0", 2, 3, 0)]


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("shape", STORE_SHAPES, ids=[s[0] for s in STORE_SHAPES])
def test_store_2d(preset, shape):
    c = PRESETS[preset]
    _, y, x, stride = shape
    rng = np.random.default_rng(7)
    p = Prog(c)
    set_out_rows(p, rng_acc(rng, c, 16), sram_base=0)
    p.insns[-1] = p.insns[-1].replace(push_next=1)  # compute -> store
    base = p.space((y - 1) * stride + x + 8, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=2, dram_base=base + 1, y_size=y, x_size=x, x_stride=stride, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, dram, m, ref, ref_dram = p.run()
    assert np.array_equal(dram, ref_dram), f"{preset} {shape}: DRAM after STORE differs from the reference"
    assert_same_state(m, ref)
    assert report.counters["out_store_nbytes"] == x * y * Geometry.of(c).out_bytes


# =====================================================================================
# GEMM
# =====================================================================================


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_gemm_two_level_loops_all_factors(preset):
    c = PRESETS[preset]
    rng = np.random.default_rng(11)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 40))
    p.load(Mem.WGT, rng_wgt(rng, c, 40))
    sync_load_to_compute(p)
    p.load(Mem.ACC, rng_acc(rng, c, 48, -1000, 1000), pop_prev=1)
    p.uops([(0, 1, 2), (3, 0, 5), (1, 4, 0)], sram_base=7)
    loops = dict(iter_out=3, iter_in=4, dst_factor_out=11, dst_factor_in=2, src_factor_out=7, src_factor_in=3,
                 wgt_factor_out=5, wgt_factor_in=6)
    p.add(isa.gemm(uop_bgn=7, uop_end=10, **loops))
    # reset over a strided subset, then accumulate again on top
    p.add(isa.gemm(reset=1, uop_bgn=8, uop_end=9, iter_out=2, iter_in=3, dst_factor_out=10, dst_factor_in=1))
    p.add(isa.gemm(uop_bgn=7, uop_end=9, **loops))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, preset)
    assert report.counters["gemm_counter"] == 3 * 12 + 2 * 12  # reset iterations are not counted


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("group", ["few-weights", "few-inputs", "repeated-dst"])
def test_gemm_many_iterations(preset, group):
    """Enough uop-iterations (>= 64) to take the simulator's grouped-BLAS and scatter-add paths."""
    c = PRESETS[preset]
    rng = np.random.default_rng(5)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 72))
    p.load(Mem.WGT, rng_wgt(rng, c, 72))
    sync_load_to_compute(p)
    p.uops([(0, 0, 0), (1, 1, 1)], pop_prev=1)
    if group == "few-weights":
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=16, dst_factor_in=2, src_factor_out=8, src_factor_in=1)
    elif group == "few-inputs":
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=16, dst_factor_in=2, wgt_factor_out=8, wgt_factor_in=1)
    else:
        loops = dict(iter_out=8, iter_in=8, dst_factor_out=2, src_factor_out=8, src_factor_in=1, wgt_factor_in=3)
    p.add(isa.gemm(uop_bgn=0, uop_end=2, **loops))
    _, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"{preset} {group}")


def test_gemm_accumulator_wraps_at_32_bits():
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.full((1, 1, 16), 127, np.int8))
    p.load(Mem.WGT, np.full((1, 16, 16), 127, np.int8))
    sync_load_to_compute(p)
    start = (1 << 31) - 100
    p.load(Mem.ACC, np.full((1, 1, 16), start, "<i4"), pop_prev=1)
    p.uops([(0, 0, 0)])
    p.add(isa.gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=2))  # adds 2 * 16 * 127 * 127
    _, _, m, ref, _ = p.run()
    expect = start + 2 * 16 * 127 * 127 - (1 << 32)
    assert expect < 0
    assert m.acc[0].ravel().tolist() == [expect] * 16
    assert m.out[0].ravel().tolist() == [((expect + 128) & 0xFF) - 128] * 16
    assert_same_state(m, ref)


def test_gemm_reset_does_not_read_inputs():
    """reset=1 zeroes ACC and OUT and reads neither INP nor WGT, so out-of-range src/wgt are fine."""
    c = SMALL
    p = Prog(c)
    set_out_rows(p, np.full((4, 1, 4), 9, "<i4"))
    p.uops([(1, 127, 127)], sram_base=1)
    p.add(isa.gemm(reset=1, uop_bgn=1, uop_end=2, iter_out=2, iter_in=1, dst_factor_out=1, src_factor_out=100,
                   wgt_factor_out=100))
    report, _, m, ref, _ = p.run()
    assert m.acc[:4, 0, 0].tolist() == [9, 0, 0, 9] and m.out[:4, 0, 0].tolist() == [9, 0, 0, 9]
    assert report.counters["gemm_counter"] == 0
    assert_same_state(m, ref)


# =====================================================================================
# ALU
# =====================================================================================

ALU_OPS = [AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL]


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("op", ALU_OPS, ids=[o.name for o in ALU_OPS])
@pytest.mark.parametrize("use_imm", [0, 1], ids=["tensor", "imm"])
def test_alu_ops(preset, op, use_imm):
    c = PRESETS[preset]
    rng = np.random.default_rng(int(op) * 2 + use_imm)
    p = Prog(c)
    acc = rng_acc(rng, c, 40)
    if op == AluOp.SHR and not use_imm:
        # amounts across -40..40 plus raw full-range values (only the low 6 bits count)
        acc[20:30] = rng.integers(-40, 41, acc[20:30].shape)
    p.load(Mem.ACC, acc)
    p.uops([(0, 20, 0), (1, 21, 0), (5, 33, 0)])
    imm = {AluOp.SHR: -7, AluOp.MUL: -30001, AluOp.ADD: 32767, AluOp.MIN: -5, AluOp.MAX: 12345}[op]
    p.add(isa.alu(op, uop_bgn=0, uop_end=3, iter_out=2, iter_in=3, dst_factor_out=8, dst_factor_in=2,
                  src_factor_out=1, src_factor_in=2, use_imm=use_imm, imm=imm if use_imm else 0))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"{preset} {op.name} imm={use_imm}")
    assert report.counters["alu_counter"] == 18


# (a, shift operand, expected) — SEMANTIC_CHOICES "SHR amount": low 6 bits as signed, -32..31.
SHIFT_CASES = [
    (-(1 << 31), 31, -1),
    ((1 << 31) - 1, 31, 0),
    (-5, 1, -3),  # arithmetic shift rounds toward -inf
    (-1, 31, -1),
    (3, -1, 6),
    (0x40000001, -1, -0x7FFFFFFE),  # left shift wraps
    (1, -31, -(1 << 31)),
    (123456, -32, 0),  # left by 32: everything shifted out
    (-123456, -32, 0),
    (7, 32, 0),  # 32 = 0b100000 -> -32
    (7, 63, 14),  # 63 -> -1: left by one
    (7, 64, 7),  # 64 -> 0
    (1 << 20, -33, 0),  # -33 -> 31: right by 31
    (-(1 << 20), -33, -1),
    (1 << 20, 0x7FFF, (1 << 20) << 1),  # 32767 -> low bits 0b111111 -> -1
    (100, -32768, 100),  # -32768 -> low bits 0 -> no shift
]


@pytest.mark.parametrize("use_imm", [1, 0], ids=["imm", "tensor"])
def test_shr_amount_range_ends(use_imm):
    c = SMALL
    p = Prog(c)
    rows = np.zeros((2 * len(SHIFT_CASES), 1, 4), "<i4")
    for n, (a, b, _) in enumerate(SHIFT_CASES):
        rows[2 * n] = a
        rows[2 * n + 1] = b
    p.load(Mem.ACC, rows)
    for n, (_, b, _) in enumerate(SHIFT_CASES):
        p.uops([(2 * n, 2 * n + 1, 0)], sram_base=n)
        p.add(isa.alu(AluOp.SHR, uop_bgn=n, uop_end=n + 1, iter_out=1, iter_in=1, use_imm=use_imm,
                      imm=b if use_imm else 0))
    _, _, m, ref, _ = p.run()
    got = [int(m.acc[2 * n, 0, 0]) for n in range(len(SHIFT_CASES))]
    assert got == [e for _, _, e in SHIFT_CASES]
    assert_same_state(m, ref)


# (op, a, b, expected)
WRAP_CASES = [
    (AluOp.ADD, (1 << 31) - 1, 1, -(1 << 31)),
    (AluOp.ADD, -(1 << 31), -1, (1 << 31) - 1),
    (AluOp.ADD, -(1 << 31), -(1 << 31), 0),
    (AluOp.MUL, 65536, 65536, 0),
    (AluOp.MUL, (1 << 31) - 1, 3, (1 << 31) - 3),
    (AluOp.MUL, -(1 << 31), -1, -(1 << 31)),
    (AluOp.MUL, 46341, 46341, 46341 * 46341 - (1 << 32)),
    (AluOp.MIN, -(1 << 31), (1 << 31) - 1, -(1 << 31)),
    (AluOp.MAX, -(1 << 31), (1 << 31) - 1, (1 << 31) - 1),
]


@pytest.mark.parametrize(("op", "a", "b", "expected"), WRAP_CASES)
def test_alu_wraparound_literal(op, a, b, expected):
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.array([[[a] * 4], [[b] * 4]], "<i4"))
    p.uops([(0, 1, 0)])
    p.add(isa.alu(op, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
    _, _, m, _, _ = p.run()
    assert m.acc[0].ravel().tolist() == [expected] * 4
    assert m.out[0].ravel().tolist() == [wrap(expected, 8)] * 4


def test_alu_immediate_sign_extension():
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.full((1, 1, 4), 1000, "<i4"))
    p.uops([(0, 99, 0)])  # src is ignored with use_imm, even when the loop takes it past the buffer (199)
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, src_factor_out=100, use_imm=1,
                  imm=-32768))
    _, _, m, _, _ = p.run()
    assert m.acc[0].ravel().tolist() == [1000 - 2 * 32768] * 4


def test_narrowing_truncates_and_store_writes_low_bits():
    c = SMALL
    vals = [0x12345680, 0x7F, 0x80, -129, 255, -1, 0x100, (1 << 31) - 1]
    p = Prog(c)
    set_out_rows(p, np.array(vals, "<i4").reshape(2, 1, 4))
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(2, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2, x_stride=2, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    _, dram, m, _, ref_dram = p.run()
    stored = dram[base * 4 : base * 4 + 8].view(np.int8).tolist()
    assert stored == [-128, 127, -128, 127, -1, -1, 0, -1]
    assert np.array_equal(dram, ref_dram)
    assert m.acc[:2].ravel().tolist() == vals


def test_load_acc_does_not_write_out():
    c = SMALL
    p = Prog(c)
    set_out_rows(p, np.full((1, 1, 4), 5, "<i4"))
    p.load(Mem.ACC, np.full((1, 1, 4), 7, "<i4"))
    p.load(Mem.ACC_8BIT, np.full((1, 1, 4), 9, np.int8), sram_base=1)
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(2, Mem.OUT, fill=0x55)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2, x_stride=2, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    _, dram, m, ref, _ = p.run()
    assert m.acc[:2, 0, 0].tolist() == [7, 9]
    assert m.out[:2, 0, 0].tolist() == [5, 0]
    assert dram[base * 4 : base * 4 + 8].view(np.int8).tolist() == [5] * 4 + [0] * 4
    assert_same_state(m, ref)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_alu_sequential_prefix_sum_and_running_max(preset):
    """Iteration t reads the row iteration t-1 wrote: sequential semantics, not vectorised."""
    c = PRESETS[preset]
    rng = np.random.default_rng(3)
    rows = rng_acc(rng, c, 8, -1000, 1000)
    p = Prog(c)
    p.load(Mem.ACC, rows)
    p.load(Mem.ACC, rows, sram_base=8)
    p.uops([(1, 0, 0)])  # ACC[r+1] = op(ACC[r+1], ACC[r])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=7, iter_in=1, dst_factor_out=1, src_factor_out=1))
    p.uops([(9, 8, 0)], sram_base=1)
    p.add(isa.alu(AluOp.MAX, uop_bgn=1, uop_end=2, iter_out=1, iter_in=7, dst_factor_in=1, src_factor_in=1))
    _, _, m, ref, _ = p.run()
    r64 = rows.astype(np.int64)
    assert np.array_equal(m.acc[:8], np.cumsum(r64, axis=0))
    assert np.array_equal(m.acc[8:16], np.maximum.accumulate(r64, axis=0))
    assert_same_state(m, ref, preset)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("op", [AluOp.MAX, AluOp.MIN, AluOp.ADD], ids=["MAX", "MIN", "ADD"])
def test_alu_repeated_destination_pooling(preset, op):
    """Pooling: 2 outputs, each reducing 4 rows into one destination row written 4 times."""
    c = PRESETS[preset]
    rng = np.random.default_rng(4)
    rows = rng_acc(rng, c, 8, -10**6, 10**6)
    init = {AluOp.MAX: -(1 << 31), AluOp.MIN: (1 << 31) - 1, AluOp.ADD: 0}[op]
    p = Prog(c)
    p.load(Mem.ACC, rows)
    p.load(Mem.ACC, np.full((2, c.batch, c.block_out), init, "<i4"), sram_base=16)
    p.uops([(16, 0, 0)])
    p.add(isa.alu(op, uop_bgn=0, uop_end=1, iter_out=2, iter_in=4, dst_factor_out=1, src_factor_out=4,
                  src_factor_in=1))
    # and with an immediate on a repeated destination (idempotent for MIN/MAX, not for ADD)
    p.uops([(20, 0, 0), (21, 0, 0)], sram_base=1)
    p.add(isa.alu(op, uop_bgn=1, uop_end=3, iter_out=3, iter_in=1, use_imm=1, imm=-3))
    _, _, m, ref, _ = p.run()
    r = rows.astype(np.int64).reshape(2, 4, c.batch, c.block_out)
    red = {AluOp.MAX: r.max(axis=1), AluOp.MIN: r.min(axis=1), AluOp.ADD: r.sum(axis=1)}[op]
    assert np.array_equal(m.acc[16:18], red)
    imm_res = {AluOp.MAX: 0, AluOp.MIN: -3, AluOp.ADD: -9}[op]
    assert m.acc[20:22].ravel().tolist() == [imm_res] * (2 * c.batch * c.block_out)
    assert_same_state(m, ref, f"{preset} {op.name}")


def test_alu_hazards_within_one_instruction():
    """WAR then RAW inside one ALU instruction: uop 0 reads row 1 before uop 1 writes it,
    uop 2 reads row 1 after."""
    c = SMALL
    p = Prog(c)
    p.load(Mem.ACC, np.arange(4, dtype="<i4").repeat(4).reshape(4, 1, 4) + 1)  # rows 1,2,3,4
    p.uops([(0, 1, 0), (1, 2, 0)])  # ACC[0] += ACC[1]; ACC[1] += ACC[2]  (dst 0 reads row 1 before it changes)
    p.uops([(2, 1, 0)], sram_base=2)  # then ACC[2] += ACC[1] (row 1 already updated)
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=3, iter_out=1, iter_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[:3, 0, 0].tolist() == [3, 5, 8]
    assert_same_state(m, ref)


# =====================================================================================
# Hypothesis: random GEMM / ALU programs against Ref
# =====================================================================================

ROWS = 40  # rows of INP/WGT/ACC loaded; uop indices < 16 and loop offsets <= 18 stay inside


@st.composite
def compute_programs(draw):
    preset = draw(st.sampled_from(PRESET_NAMES))
    n_uops = draw(st.integers(1, 10))
    uops = [tuple(draw(st.integers(0, 15)) for _ in range(3)) for _ in range(n_uops)]
    uop_base = draw(st.integers(0, 20))
    insns = []
    for _ in range(draw(st.integers(1, 3))):
        bgn = draw(st.integers(0, n_uops))
        end = draw(st.integers(bgn, n_uops))
        loops = dict(
            uop_bgn=uop_base + bgn, uop_end=uop_base + end,
            iter_out=draw(st.integers(0, 4)), iter_in=draw(st.integers(0, 4)),
            dst_factor_out=draw(st.integers(0, 3)), dst_factor_in=draw(st.integers(0, 3)),
            src_factor_out=draw(st.integers(0, 3)), src_factor_in=draw(st.integers(0, 3)),
        )
        if draw(st.booleans()):
            insns.append(isa.gemm(reset=int(draw(st.integers(0, 5)) == 0), wgt_factor_out=draw(st.integers(0, 3)),
                                  wgt_factor_in=draw(st.integers(0, 3)), **loops))
        else:
            use_imm = draw(st.booleans())
            imm = draw(st.one_of(st.integers(-40, 40), st.integers(-(1 << 15), (1 << 15) - 1))) if use_imm else 0
            insns.append(isa.alu(draw(st.sampled_from(ALU_OPS)), use_imm=int(use_imm), imm=imm, **loops))
    acc_range = draw(st.sampled_from(["full", "small"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return preset, uops, uop_base, insns, acc_range, seed


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(compute_programs())
def test_random_compute_programs_match_reference(prog):
    preset, uops, uop_base, insns, acc_range, seed = prog
    c = PRESETS[preset]
    rng = np.random.default_rng(seed)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, ROWS))
    p.load(Mem.WGT, rng_wgt(rng, c, ROWS))
    sync_load_to_compute(p)
    p.uops(uops, sram_base=uop_base, pop_prev=1)
    p.load(Mem.ACC, rng_acc(rng, c, ROWS) if acc_range == "full" else rng_acc(rng, c, ROWS, -300, 300))
    p.add(*insns)
    note(f"preset={preset} seed={seed} uops={uops}\n" + "\n".join(map(str, p.insns)))
    report, _, m, ref, _ = p.run()
    assert_same_state(m, ref, f"preset={preset} seed={seed}")
    n = [(i.uop_end - i.uop_bgn) * i.iter_out * i.iter_in for i in insns]
    assert report.counters["gemm_counter"] == sum(k for k, i in zip(n, insns) if i.opcode == Op.GEMM and not i.reset)
    assert report.counters["alu_counter"] == sum(k for k, i in zip(n, insns) if i.opcode == Op.ALU)


@st.composite
def dma_programs(draw):
    preset = draw(st.sampled_from(PRESET_NAMES))
    mem = draw(st.sampled_from(LOAD_MEMS))
    # y_size >= 1: y_size = 0 is the known pad-only bug (test_load_pad_only)
    load = dict(y_size=draw(st.integers(1, 4)), x_size=draw(st.integers(1, 5)), x_stride=draw(st.integers(0, 8)),
                sram_base=draw(st.integers(0, 10)))
    if mem != Mem.UOP:
        load.update({k: draw(st.integers(0, 3)) for k in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")})
    store = dict(y_size=draw(st.integers(1, 3)), x_size=draw(st.integers(1, 4)), x_stride=draw(st.integers(0, 6)),
                 sram_base=draw(st.integers(0, 4)))
    return preset, mem, load, store, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(dma_programs())
def test_random_dma_programs_match_reference(prog):
    preset, mem, load, store, seed = prog
    c = PRESETS[preset]
    rng = np.random.default_rng(seed)
    p = Prog(c)
    set_out_rows(p, rng_acc(rng, c, 16))
    p.load(mem, rng_fill(rng, c, mem, min(130, depth_of(c, mem))))  # non-zero background
    n_src = (load["y_size"] - 1) * load["x_stride"] + load["x_size"] + 1
    p.load(mem, rng_fill(rng, c, mem, n_src), **load)
    on_load = isa.stage_of(p.insns[-1]) == isa.Stage.LOAD
    if on_load:
        sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=int(on_load), push_next=1))
    base = p.space((store["y_size"] - 1) * store["x_stride"] + store["x_size"] + 4, Mem.OUT, fill=0x55)
    p.add(isa.store(dram_base=base + 1, pop_prev=1, push_prev=1, **store))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    note(f"preset={preset} seed={seed}\n" + "\n".join(map(str, p.insns)))
    _, dram, m, ref, ref_dram = p.run()
    assert_same_state(m, ref, f"preset={preset} seed={seed}")
    assert np.array_equal(dram, ref_dram), "DRAM after STORE differs from the reference"


# =====================================================================================
# Counters
# =====================================================================================


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_counters(preset):
    c = PRESETS[preset]
    g = Geometry.of(c)
    rng = np.random.default_rng(0)
    p = Prog(c)
    p.load(Mem.INP, rng_inp(rng, c, 12), x_size=3, y_size=2, x_stride=5, y_pad_0=1, x_pad_1=2)  # 6 elements moved
    p.load(Mem.WGT, rng_wgt(rng, c, 4), x_size=4)
    sync_load_to_compute(p)
    p.load(Mem.ACC, rng_acc(rng, c, 5), x_size=5, pop_prev=1)
    p.load(Mem.ACC_8BIT, rng.integers(-5, 5, (3, c.batch, c.block_out), dtype=np.int8), sram_base=8)
    p.uops([(0, 0, 0), (1, 1, 1), (2, 2, 2)])
    p.add(isa.gemm(uop_bgn=0, uop_end=3, iter_out=2, iter_in=1, dst_factor_out=3, src_factor_out=1))  # 6
    p.add(isa.gemm(reset=1, uop_bgn=0, uop_end=3, iter_out=1, iter_in=1))  # not counted
    p.add(isa.alu(AluOp.MAX, uop_bgn=0, uop_end=2, iter_out=2, iter_in=2, dst_factor_in=4, use_imm=1))  # 8
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    base = p.space(20, Mem.OUT)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=3, x_size=2, x_stride=4, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, _, _, _, _ = p.run()
    assert report.counters == {
        "inp_load_nbytes": 6 * g.inp_bytes,
        "wgt_load_nbytes": 4 * g.wgt_bytes,
        "acc_load_nbytes": 5 * g.acc_bytes + 3 * g.acc_bytes,  # ACC_8BIT counts full ACC elements (fsim)
        "uop_load_nbytes": 3 * 4,
        "out_store_nbytes": 6 * g.out_bytes,
        "gemm_counter": 6,
        "alu_counter": 8,
    }


def test_counters_are_per_run():
    c = SMALL
    p = Prog(c)
    p.uops([(0, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, use_imm=1, imm=1))
    insns = p.insns + [isa.finish()]
    addr, n = place_insns(p.image, insns, c)
    m = Machine(c)
    r1 = run(c, p.image.dram, addr, n, machine=m)
    r2 = run(c, p.image.dram, addr, n, machine=m)
    assert r1.counters == r2.counters and r1.counters["alu_counter"] == 3
    assert m.acc[0, 0, 0] == 6  # SRAM persists across runs on one machine


# =====================================================================================
# Cycle model
# =====================================================================================


def _span(report, k):
    (entry,) = [t for t in report.trace if t[0] == k]
    return entry


def dma_formula(c: Config, rows: int, row_bytes: int, pad_elems: int, write: bool = False) -> int:
    """timing.py's docstring, written out:
    overhead + pads + (read or write) latency + rows*(beats + bursts*gap) + tail."""
    t = c.timing
    beats = -(-row_bytes // (c.bus_width // 8))
    bursts = -(-beats // t.max_burst_beats)
    latency = t.dram_write_latency if write else t.dram_latency
    return t.insn_overhead + pad_elems + latency + rows * (beats + bursts * t.burst_gap) + t.dma_tail


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("n_iters", [(1, 1, 1), (5, 3, 2), (1, 17, 4)])
def test_gemm_and_alu_cycles(preset, n_iters):
    c = PRESETS[preset]
    t = c.timing
    uops, io, ii = n_iters
    p = Prog(c)
    p.uops([(k, k, k) for k in range(uops)])
    p.add(isa.gemm(uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops))
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops, use_imm=1))
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=uops, iter_out=io, iter_in=ii, dst_factor_out=uops))
    p.add(isa.gemm(uop_bgn=0, uop_end=0, iter_out=io, iter_in=ii))  # no iterations
    report, *_ = p.run()
    n = uops * io * ii
    _, kind, s, e = _span(report, 1)
    assert kind == "compute" and e - s == t.insn_overhead + n + t.gemm_latency
    _, _, s, e = _span(report, 2)
    assert e - s == t.insn_overhead + n * t.alu_ii_imm + t.alu_latency
    _, _, s, e = _span(report, 3)
    assert e - s == t.insn_overhead + n * t.alu_ii_tensor + t.alu_latency
    _, _, s, e = _span(report, 4)
    assert e - s == t.insn_overhead
    _, _, s, e = _span(report, 5)  # FINISH
    assert e - s == t.insn_overhead
    # compute runs its instructions back to back once they are fetched
    assert report.modules["compute"].insns == 6
    assert report.cycles == report.trace[-1][3]


def test_gemm_cycles_literal_default():
    """Default timing (overhead 2, gemm_latency 6): 3 uops x 4 x 5 iterations = 60 -> 68 cycles."""
    p = Prog(DEFAULT)
    p.uops([(0, 0, 0), (1, 0, 0), (2, 0, 0)])
    p.add(isa.gemm(uop_bgn=0, uop_end=3, iter_out=4, iter_in=5))
    report, *_ = p.run()
    _, _, s, e = _span(report, 1)
    assert e - s == 68


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize(("mem", "y", "x", "pads"), [
    (Mem.INP, 3, 40, (1, 1, 2, 2)),
    (Mem.INP, 1, 1, (0, 0, 0, 0)),
    (Mem.WGT, 2, 3, (0, 0, 0, 0)),
    (Mem.ACC, 2, 9, (0, 1, 0, 0)),
    (Mem.ACC_8BIT, 1, 7, (0, 0, 0, 3)),
    (Mem.UOP, 1, 100, (0, 0, 0, 0)),
])
def test_dma_cycles(preset, mem, y, x, pads):
    c = PRESETS[preset]
    p = Prog(c)
    rng = np.random.default_rng(0)
    yp0, yp1, xp0, xp1 = pads
    while (yp0 + y + yp1) * (xp0 + x + xp1) > depth_of(c, mem):
        x //= 2
    p.load(mem, rng_fill(rng, c, mem, y * x), x_size=x, y_size=y, y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1)
    if isa.stage_of(p.insns[-1]) == isa.Stage.LOAD:
        sync_load_to_compute(p)
        p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    report, *_ = p.run()
    _, _, s, e = _span(report, 0)
    pad = (yp0 + y + yp1) * (xp0 + x + xp1) - x * y
    assert e - s == dma_formula(c, y, x * p.elem_bytes(mem), pad)


def test_dma_cycles_literal_small():
    """small: 4-byte bus. INP 3 rows x 20 elements of 4 B = 20 beats per row, no burst gap,
    pads (1,1,2,2): 5 x 24 - 60 = 60 pad elements -> 2 + 60 + 32 + 3 * 20 + 1 (tail) = 155."""
    p = Prog(SMALL)
    p.load(Mem.INP, np.zeros((60, 1, 4), np.int8), x_size=20, y_size=3, y_pad_0=1, y_pad_1=1, x_pad_0=2, x_pad_1=2)
    sync_load_to_compute(p)
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))
    report, *_ = p.run()
    _, kind, s, e = _span(report, 0)
    assert kind == "load" and e - s == 155


def test_store_and_nop_cycles():
    c = DEFAULT
    p = Prog(c)
    p.add(isa.nop(isa.Stage.COMPUTE, push_next=1))
    base = p.space(64, Mem.OUT)
    p.add(isa.store(sram_base=0, dram_base=base, y_size=4, x_size=8, x_stride=16, pop_prev=1, push_prev=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_next=1))
    report, *_ = p.run()
    _, _, s, e = _span(report, 0)
    assert e - s == c.timing.insn_overhead
    _, kind, s, e = _span(report, 1)
    assert kind == "store" and e - s == dma_formula(c, 4, 8 * 16, 0, write=True)
    # the store waited for the compute NOP's token; the final NOP for the store's
    assert s >= _span(report, 0)[3] and _span(report, 2)[2] >= e


@pytest.mark.parametrize("gaps", [False, True], ids=["no-gap", "gap"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_fetch_streams_the_instructions(preset, gaps):
    """Fetch starts launch_latency after start and reads the stream as one DMA: instruction k
    arrives after dram_latency + its bus beats (+ burst_gap per finished burst); it dispatches
    at most one instruction per cycle and the NOPs then run back to back (insn_overhead each)."""
    c = PRESETS[preset]
    if gaps:
        c = c.replace(timing=c.timing.replace(burst_gap=3, max_burst_beats=4))
    t = c.timing
    n = 20
    bus = c.bus_width // 8

    def arrive(k: int) -> int:
        beats = -(-(k + 1) * 16 // bus)
        return t.launch_latency + t.dram_latency + beats + (beats - 1) // t.max_burst_beats * t.burst_gap

    report = run_flags(c, [isa.nop(G) for _ in range(n)])
    starts = {k: s for k, _, s, _ in report.trace}
    expect, free, fetch = [], 0, 0
    for k in range(n + 1):
        dispatch = max(fetch, arrive(k))
        fetch = dispatch + 1
        expect.append(max(free, dispatch))
        free = expect[-1] + t.insn_overhead
    assert [starts[k] for k in range(n + 1)] == expect
    assert starts[0] == arrive(0)


def test_load_and_compute_overlap():
    """Independent load and compute work runs concurrently: total < sum of busy times."""
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.zeros((1024, 1, 16), np.int8), x_size=1024)
    p.insns[-1] = p.insns[-1].replace(push_next=1)
    p.uops([(0, 0, 0), (1, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=2, iter_out=600, iter_in=1, dst_factor_out=2, use_imm=1, imm=1))
    p.add(isa.nop(isa.Stage.COMPUTE, pop_prev=1))  # join before FINISH
    report, *_ = p.run()
    busy_l, busy_g = report.modules["load"].busy, report.modules["compute"].busy
    assert busy_l > 1000 and busy_g > 1000
    assert report.cycles < busy_l + busy_g
    assert report.cycles >= max(busy_l, busy_g)
    # the ALU did not wait for the load
    assert _span(report, 2)[2] < _span(report, 0)[3]


def test_dependency_orders_execution():
    """With a token, compute starts only after the load has completed."""
    c = DEFAULT
    p = Prog(c)
    p.load(Mem.INP, np.zeros((256, 1, 16), np.int8), x_size=256)
    sync_load_to_compute(p)
    p.uops([(0, 0, 0)], pop_prev=1)
    p.add(isa.gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1))
    report, *_ = p.run()
    assert _span(report, 1)[2] >= _span(report, 0)[3]
    assert report.modules["compute"].stall > 0


# =====================================================================================
# Deadlock, underflow, leftover tokens, races, full queues
# =====================================================================================

L, G, S = isa.Stage.LOAD, isa.Stage.COMPUTE, isa.Stage.STORE


def run_flags(c: Config, insns, strict: bool = True):
    return run_insns(c, insns + [isa.finish()], DramImage(1 << 16), strict=strict)[0]


def test_token_underflow():
    insns = [isa.nop(G), isa.nop(G, pop_prev=1)]
    with pytest.raises(TokenUnderflowError) as ei:
        run_flags(SMALL, insns)
    msg = str(ei.value)
    assert "instruction 1" in msg and "compute" in msg and "l2g" in msg and "underflow" in msg
    assert ei.value.index == 1
    assert ei.value.waits[0]["module"] == "compute" and ei.value.waits[0]["queue"] == "l2g"


@pytest.mark.parametrize(("stage", "flag", "queue"), [
    (L, "pop_next", "g2l"), (G, "pop_next", "s2g"), (S, "pop_prev", "g2s"), (G, "pop_prev", "l2g"),
])
def test_token_underflow_every_queue(stage, flag, queue):
    with pytest.raises(TokenUnderflowError, match=queue) as ei:
        run_flags(SMALL, [isa.nop(stage, **{flag: 1})])
    assert ei.value.index == 0 and ei.value.waits[0]["queue"] == queue


def test_cyclic_wait_is_a_deadlock_naming_both_modules():
    insns = [
        isa.nop(L, pop_next=1),  # 0: load waits g2l
        isa.nop(L, push_next=1),  # 1: ... and would then push l2g
        isa.nop(G, pop_prev=1),  # 2: compute waits l2g
        isa.nop(G, push_prev=1),  # 3: ... and would then push g2l
    ]
    with pytest.raises(DeadlockError) as ei:
        run_flags(SMALL, insns)
    e = ei.value
    assert type(e) is DeadlockError  # not an underflow: pushes exist, queued behind blocked instructions
    msg = str(e)
    assert "deadlock" in msg and "load" in msg and "compute" in msg
    assert "instruction 0" in msg and "instruction 2" in msg and "g2l" in msg and "l2g" in msg
    assert {(w["module"], w["index"]) for w in e.waits} == {("load", 0), ("compute", 2)}


def test_leftover_tokens():
    insns = [isa.nop(L), isa.nop(L, push_next=1), isa.nop(G, push_next=1), isa.nop(S, pop_prev=1, push_prev=1)]
    with pytest.raises(TokenError) as ei:
        run_flags(SMALL, insns)
    e = ei.value
    assert e.leftover == {"l2g": [1], "s2g": [3]}
    msg = str(e)
    assert "l2g" in msg and "s2g" in msg and "instruction(s) 1" in msg and "instruction(s) 3" in msg


def test_leftover_tokens_non_strict_are_warnings():
    report = run_flags(SMALL, [isa.nop(L, push_next=1)], strict=False)
    assert len(report.warnings) == 1 and "l2g" in report.warnings[0]
    assert "warning" in report.table()


def test_unsynchronised_store_is_a_race():
    c = DEFAULT
    image = DramImage()
    base = image.reserve(2048 * 16) // 16
    insns = [isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2048, x_stride=2048), isa.finish()]
    with pytest.raises(RaceError) as ei:
        run_insns(c, insns, image)
    msg = str(ei.value)
    assert ei.value.index == 0 and "instruction 0" in msg and "store" in msg and "FINISH" in msg
    report, *_ = run_insns(c, insns, image, strict=False)
    assert any("FINISH" in w for w in report.warnings)


def test_synchronised_store_is_not_a_race():
    c = DEFAULT
    image = DramImage()
    base = image.reserve(2048 * 16) // 16
    insns = [isa.nop(G, push_next=1),
             isa.store(sram_base=0, dram_base=base, y_size=1, x_size=2048, x_stride=2048, pop_prev=1, push_prev=1),
             isa.nop(G, pop_next=1), isa.finish()]
    report, *_ = run_insns(c, insns, image)
    assert report.warnings == [] and report.cycles >= _span(report, 1)[3]


def test_full_dependency_queue_deadlocks():
    c = SMALL  # dep_queue_depth 16
    assert c.dep_queue_depth == 16
    insns = [isa.nop(L, push_next=1) for _ in range(17)]
    with pytest.raises(DeadlockError) as ei:
        run_flags(c, insns)
    msg = str(ei.value)
    assert "full" in msg and "l2g" in msg and "instruction 16" in msg


def test_full_dependency_queue_drains_with_pops():
    """17 pushes are fine when compute pops them: the 17th push waits for the first pop."""
    c = SMALL
    insns = [isa.nop(L, push_next=1) for _ in range(17)] + [isa.nop(G, pop_prev=1) for _ in range(17)]
    report = run_flags(c, insns)
    assert report.warnings == []


def test_full_command_queue_deadlocks():
    c = SMALL  # cmd_queue_depth 16
    insns = [isa.nop(G, pop_prev=1)] + [isa.nop(G) for _ in range(16)] + [isa.nop(L, push_next=1)]
    with pytest.raises(DeadlockError) as ei:
        run_flags(c, insns)
    msg = str(ei.value)
    assert "full" in msg and "compute command queue is full (16 instructions)" in msg
    assert "instruction 16" in msg and "instruction 0" in msg
    assert any(w["module"] == "fetch" for w in ei.value.waits)


def test_command_queue_depth_alone_is_not_a_deadlock():
    c = SMALL
    insns = [isa.nop(G) for _ in range(40)] + [isa.nop(L, push_next=1), isa.nop(G, pop_prev=1)]
    report = run_flags(c, insns)
    assert report.instructions == 43


# =====================================================================================
# Bad programs
# =====================================================================================


def _bad(c: Config, insns, exc=ProgramError, dram_size: int = 1 << 16):
    with pytest.raises(exc) as ei:
        run_insns(c, insns, DramImage(dram_size))
    assert isinstance(ei.value, SimulatorError)
    return ei.value


@pytest.mark.parametrize("opcode", [5, 6, 7])
def test_unknown_opcode(opcode):
    c = SMALL
    words = isa.encode([isa.nop(G), isa.nop(G), isa.finish()], c)
    words[1, 0] = (int(words[1, 0]) & ~7) | opcode
    with pytest.raises(ProgramError) as ei:
        simulate(c, words)
    msg = str(ei.value)
    assert "instruction 1" in msg and f"opcode {opcode}" in msg
    image = DramImage(1 << 16)
    addr = image.place(words.astype("<u8"), 16)
    with pytest.raises(ProgramError, match=f"instruction 1: unknown opcode {opcode}"):
        run(c, image.dram, addr, 3)


def test_unknown_opcode_error_index():
    c = SMALL
    words = isa.encode([isa.nop(G), isa.nop(G), isa.finish()], c)
    words[1, 0] = (int(words[1, 0]) & ~7) | 5
    with pytest.raises(ProgramError) as ei:
        simulate(c, words)
    assert ei.value.index == 1


def _mem_insn(**f):
    return isa.MemInsn(**f)


BAD_PROGRAMS = [
    ("unknown memory_type on LOAD", [_mem_insn(opcode=Op.LOAD, memory_type=7, x_size=1, y_size=1, x_stride=1)],
     0, "unknown memory_type 7"),
    ("unknown memory_type on STORE", [isa.nop(G), _mem_insn(opcode=Op.STORE, memory_type=6, x_size=1, y_size=1)],
     1, "unknown memory_type 6"),
    ("LOAD into OUT", [isa.load(Mem.OUT, x_size=1, y_size=1, x_stride=1, dram_base=1)], 0, "cannot LOAD into memory_type OUT"),
    ("STORE from INP", [isa.store(memory_type=Mem.INP, x_size=1, y_size=1, x_stride=1, dram_base=1)],
     0, "STORE reads only memory_type OUT, not INP"),
    ("padding on STORE", [isa.store(x_size=1, y_size=1, x_stride=1, dram_base=1, x_pad_1=1)], 0, "no padding"),
    ("padding on NOP STORE", [isa.store(y_pad_0=2)], 0, "no padding"),
    ("padding on UOP", [isa.load(Mem.UOP, x_size=1, y_size=1, x_stride=1, dram_base=1, y_pad_0=1)], 0,
     "UOP transfers take no padding"),
    ("DMA outside DRAM", [isa.nop(G), isa.load(Mem.ACC, x_size=2, y_size=2, x_stride=4, dram_base=(1 << 16) // 16 - 5)],
     1, "outside DRAM"),
    ("STORE outside DRAM", [isa.store(x_size=1, y_size=1, x_stride=1, dram_base=(1 << 16) // 4)], 0, "outside DRAM"),
    ("SRAM past depth", [isa.load(Mem.INP, sram_base=127, x_size=2, y_size=1, x_stride=2, dram_base=1)], 0,
     "INP SRAM range [127, 129) is past the buffer (depth 128)"),
    ("SRAM past depth via padding", [isa.load(Mem.ACC, sram_base=100, x_size=1, y_size=1, x_stride=1, dram_base=1,
                                              y_pad_1=15, x_pad_1=1)], 0, "past the buffer (depth 128)"),
    ("STORE SRAM past depth", [isa.store(sram_base=120, x_size=3, y_size=3, x_stride=3, dram_base=1)], 0,
     "OUT SRAM range [120, 129)"),
    ("uop_end past the uop buffer", [isa.gemm(uop_bgn=0, uop_end=257, iter_out=1, iter_in=1)], 0,
     "uop_end 257 is past the uop buffer (depth 256)"),
    ("uop_bgn > uop_end", [isa.nop(L), isa.alu(AluOp.ADD, uop_bgn=5, uop_end=3, iter_out=1, iter_in=1)], 1,
     "uop_bgn 5 is after uop_end 3"),
    ("unknown ALU opcode", [isa.AluInsn(opcode=Op.ALU, alu_opcode=5, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)],
     0, "unknown alu_opcode 5"),
    ("LOAD INP with pop_prev", [isa.load(Mem.INP, pop_prev=1)], 0, "load module has no queue for pop_prev"),
    ("LOAD WGT with push_prev", [isa.load(Mem.WGT, push_prev=1)], 0, "load module has no queue for push_prev"),
    ("STORE with pop_next", [isa.store(pop_next=1)], 0, "store module has no queue for pop_next"),
    ("STORE with push_next", [isa.nop(L), isa.store(push_next=1)], 1, "store module has no queue for push_next"),
]


@pytest.mark.parametrize(("insns", "index", "text"), [pytest.param(i, k, t, id=n) for n, i, k, t in BAD_PROGRAMS])
def test_bad_instruction(insns, index, text):
    e = _bad(SMALL, insns + [isa.finish()])
    msg = str(e)
    assert f"instruction {index}" in msg and text in msg, msg
    assert e.index == index


def test_ranges_ending_exactly_at_the_limits_are_accepted():
    """Off-by-one guard for the bounds checks: SRAM, DRAM and uop ranges that end exactly at the end."""
    c = SMALL
    size = 1 << 16
    image = DramImage(size)
    insns = [
        isa.load(Mem.INP, sram_base=126, x_size=2, y_size=1, x_stride=2, dram_base=size // 4 - 2, push_next=1),
        isa.load(Mem.ACC, sram_base=0, x_size=1, y_size=2, x_stride=3, dram_base=size // 16 - 4, y_pad_1=1,
                 x_pad_1=15, pop_prev=1),  # (2 + 1) x 16 = 48 elements
        isa.gemm(uop_bgn=255, uop_end=256, iter_out=1, iter_in=1, dst_factor_out=127, push_next=1),
        isa.store(sram_base=127, x_size=1, y_size=1, x_stride=1, dram_base=size // 4 - 1, pop_prev=1, push_prev=1),
        isa.nop(G, pop_next=1),
        isa.finish(),
    ]
    image.dram[-64:] = 7  # last INP elements / ACC rows
    report, image, m = run_insns(c, insns, image)
    assert report.instructions == 6
    assert (m.inp[126:] == 7).all()
    assert (m.acc[[0, 16]] == 0x07070707).all() and not m.acc[1:16].any() and not m.acc[17:48].any()


def test_uop_index_past_buffer_names_iteration():
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([(100, 0, 0), (120, 0, 0)])
    p.add(isa.alu(AluOp.ADD, uop_bgn=0, uop_end=2, iter_out=2, iter_in=3, dst_factor_out=5, dst_factor_in=2,
                  use_imm=1, imm=1))
    # (i, j, uop) -> dst: (0,0,*) 100,120 (0,1,*) 102,122 (0,2,*) 104,124 (1,0,*) 105,125 (1,1,*) 107,127
    # (1,2,0) 109, (1,2,1) 129 -> first out of range
    with pytest.raises(ExecutionError) as ei:
        p.run()
    msg = str(ei.value)
    assert ei.value.index == 1
    assert "instruction 1 (ALU)" in msg and "index 129" in msg and "depth 128" in msg
    assert "i=1, j=2, uop 1" in msg


@pytest.mark.parametrize(("what", "uop", "loops"), [
    ("INP (src)", (0, 127, 0), dict(iter_out=1, iter_in=2, src_factor_in=1)),
    ("WGT", (0, 0, 126), dict(iter_out=2, iter_in=1, wgt_factor_out=3)),
    ("ACC (dst)", (127, 0, 0), dict(iter_out=1, iter_in=2, dst_factor_in=1)),
])
def test_gemm_index_past_buffer_at_runtime(what, uop, loops):
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([uop])
    p.add(isa.gemm(uop_bgn=0, uop_end=1, **loops))
    with pytest.raises(ExecutionError) as ei:
        p.run()
    assert what in str(ei.value) and "instruction 1 (GEMM)" in str(ei.value) and ei.value.index == 1


def test_alu_tensor_src_past_buffer():
    c = SMALL
    p = Prog(c, 1 << 16)
    p.uops([(0, 127, 0)])
    p.add(isa.alu(AluOp.MIN, uop_bgn=0, uop_end=1, iter_out=1, iter_in=2, src_factor_in=1, dst_factor_in=1))
    with pytest.raises(ExecutionError, match=r"ACC \(src\) index 128"):
        p.run()


def test_finish_missing():
    e = _bad(SMALL, [isa.nop(G), isa.nop(L)])
    assert "instruction 1" in str(e) and "must end with FINISH" in str(e) and e.index == 1


def test_finish_not_last():
    e = _bad(SMALL, [isa.nop(G), isa.finish(), isa.nop(G), isa.finish()])
    assert "instruction 1" in str(e) and "FINISH before the end" in str(e) and e.index == 1


def test_empty_program():
    with pytest.raises(ProgramError, match="empty program"):
        simulate(SMALL, np.zeros((0, 2), np.uint64))
    with pytest.raises(ProgramError, match="empty program"):
        run(SMALL, np.zeros(1 << 16, np.uint8), 0, 0)


def test_instruction_stream_outside_dram():
    with pytest.raises(ProgramError, match="inside DRAM"):
        run(SMALL, np.zeros(1 << 12, np.uint8), (1 << 12) - 16, 2)
    with pytest.raises(ProgramError, match="aligned"):
        run(SMALL, np.zeros(1 << 12, np.uint8), 8, 1)


def test_finish_may_push():
    """FINISH may push (SEMANTIC_CHOICES 'FINISH'); its token is then a leftover."""
    with pytest.raises(TokenError, match="g2l"):
        run_insns(SMALL, [isa.finish(push_prev=1)], DramImage(1 << 16))
