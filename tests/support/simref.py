"""An independent reference model of the VDLA ISA and builders of test programs, for the
golden simulator's tests (tests/simulator/).

`Ref` re-implements the ISA semantics of /work/shared/reference/vta.md §1 and
`vdla.isa.SEMANTIC_CHOICES` with plain Python loops over elements and uop-iterations
(numpy only for int64 element-wise arithmetic and one exact integer dot product per
uop-iteration). It shares no code with `vdla.simulator`: micro-ops are packed and
unpacked by hand (`support.sim.pack_uops`), element sizes come from `support.sim.Geometry`.
`Prog` builds instruction lists with their DRAM image; the ``rng_*`` helpers draw operands.
"""

from __future__ import annotations

import numpy as np
import pytest

from support.sim import DramImage, Geometry, dtype_of, pack_uops, place_insns
from vdla import isa
from vdla.config import PRESETS, Config
from vdla.isa import AluOp, Mem, Op
from vdla.simulator import (
    Machine,
    run,
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
        self.cfg = isa.cfg()  # CFG's state: all zero until a CFG sets it (SEMANTIC_CHOICES)

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
            elif op == Op.CFG:
                self.cfg = insn
            elif op == Op.FINISH:
                self.cfg = isa.cfg()

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

    def _out_of(self, acc_row: np.ndarray) -> np.ndarray:
        """A GEMM's OUT value: CFG's epilogue (shift, then clip to [clip_lo, clip_hi]) or the low bits."""
        cfg = self.cfg
        if cfg.epilogue:
            return np.array([min(max(int(v) >> cfg.shift, cfg.clip_lo), cfg.clip_hi) for v in acc_row.ravel()],
                            dtype=np.int64).reshape(acc_row.shape)
        return wrap(acc_row, self.c.out_width)

    def gemm(self, insn) -> None:
        aw = self.c.acc_width
        window = bool(self.cfg.window) and not insn.reset
        seen: list[np.ndarray] = []  # window mode: the INP rows this inner-loop pass has read, oldest first
        for n, (i, j, (d, s, w)) in enumerate(self._iterations(insn)):
            if window and n % (insn.iter_in * (insn.uop_end - insn.uop_bgn)) == 0:
                seen = []  # a new pass: rows before it count as zero
            a = d + i * insn.dst_factor_out + j * insn.dst_factor_in
            wi = w + i * insn.wgt_factor_out + j * insn.wgt_factor_in
            # init: the iteration starts from ACC[init_base + its WGT index], not ACC[a]
            start = self.acc[self.cfg.init_base + wi].copy() if insn.init else None
            if insn.reset:
                self.acc[a] = 0 if start is None else start
            else:
                x = s + i * insn.src_factor_out + j * insn.src_factor_in
                if window:
                    seen.append(self.inp[x])
                    if len(seen) <= self.cfg.warmup:
                        continue  # a warm-up position: it only feeds the window
                    # out[b][o] = sum_t wgt[w][o][t] * (the row read t positions back)[b][o]
                    dot = np.zeros((self.c.batch, self.c.block_out), dtype=np.int64)
                    for t in range(min(len(seen), self.c.block_in)):
                        for b in range(self.c.batch):
                            for o in range(self.c.block_out):
                                dot[b, o] += int(self.wgt[wi][o, t]) * int(seen[-1 - t][b, o])
                else:
                    # out[b][o] = sum_c inp[x][b][c] * wgt[w][o][c]   (exact in int64)
                    dot = self.inp[x] @ self.wgt[wi].T
                self.acc[a] = wrap((self.acc[a] if start is None else start) + dot, aw)
            self.out[a] = self._out_of(self.acc[a])

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
