"""Tests of vdla.isa: the field table against VTA's layout, encode/decode, asm/disasm.

The independent references are the literal bit tables below, copied from VTA's
`hw_spec.h` layout as documented in /work/shared/reference/vta.md §1.4-1.6 and §1.8
(default config), plus small/batch2 tables worked out by hand with the C bit-field
packing rule (fields in order; one that would straddle bit 64 starts word 1).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import REPO

from vdla import isa
from vdla.config import PRESETS, Config, ConfigError

DEFAULT = Config()
KiB = 1024

# ---------------------------------------------------------------------------------
# Literal reference tables: name -> (bit, width[, signed])
# ---------------------------------------------------------------------------------

COMMON = {"opcode": (0, 3), "pop_prev": (3, 1), "pop_next": (4, 1), "push_prev": (5, 1), "push_next": (6, 1)}

REF = {
    "default": {
        "mem": {
            **COMMON,
            "memory_type": (7, 3),
            "sram_base": (10, 16),
            "dram_base": (26, 32),
            "y_size": (64, 16),
            "x_size": (80, 16),
            "x_stride": (96, 16),
            "y_pad_0": (112, 4),
            "y_pad_1": (116, 4),
            "x_pad_0": (120, 4),
            "x_pad_1": (124, 4),
        },
        "gemm": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 13),
            "uop_end": (21, 14),
            "iter_out": (35, 14),
            "iter_in": (49, 14),
            "init": (63, 1),  # the first word's last free bit
            "dst_factor_out": (64, 11),
            "dst_factor_in": (75, 11),
            "src_factor_out": (86, 11),
            "src_factor_in": (97, 11),
            "wgt_factor_out": (108, 10),
            "wgt_factor_in": (118, 10),
        },
        "alu": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 13),
            "uop_end": (21, 14),
            "iter_out": (35, 14),
            "iter_in": (49, 14),
            "init": (63, 1),  # GEMM's bit, kept in ALU so the loop fields line up
            "dst_factor_out": (64, 11),
            "dst_factor_in": (75, 11),
            "src_factor_out": (86, 11),
            "src_factor_in": (97, 11),
            "alu_opcode": (108, 3),
            "use_imm": (111, 1),
            "imm": (112, 16, True),
        },
        "finish": dict(COMMON),
        # acc depth 2048 (11), 32-bit accumulators (shift 0..31: 5 bits), 8-bit outputs
        "cfg": {
            **COMMON,
            "init_base": (7, 11),
            "shift": (18, 5),
            "clip_lo": (23, 8, True),
            "clip_hi": (31, 8, True),
            "epilogue": (39, 1),
            "window": (40, 1),
            "warmup": (41, 4),  # block_in 16: 0 ... 15
        },
        "uop": {"dst_idx": (0, 11), "src_idx": (11, 11), "wgt_idx": (22, 10)},
    },
    # small: uop depth 256 (8), inp/wgt/acc depth 128 (7), loop 14.
    "small": {
        "gemm": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 8),
            "uop_end": (16, 9),
            "iter_out": (25, 14),
            "iter_in": (39, 14),
            "init": (53, 1),
            "dst_factor_out": (54, 7),
            "dst_factor_in": (64, 7),  # 61 + 7 > 64: starts word 1
            "src_factor_out": (71, 7),
            "src_factor_in": (78, 7),
            "wgt_factor_out": (85, 7),
            "wgt_factor_in": (92, 7),
        },
        "alu": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 8),
            "uop_end": (16, 9),
            "iter_out": (25, 14),
            "iter_in": (39, 14),
            "init": (53, 1),
            "dst_factor_out": (54, 7),
            "dst_factor_in": (64, 7),
            "src_factor_out": (71, 7),
            "src_factor_in": (78, 7),
            "alu_opcode": (85, 3),
            "use_imm": (88, 1),
            "imm": (89, 16, True),
        },
        "cfg": {**COMMON, "init_base": (7, 7), "shift": (14, 5), "clip_lo": (19, 8, True), "clip_hi": (27, 8, True),
                "epilogue": (35, 1), "window": (36, 1), "warmup": (37, 2)},
        "uop": {"dst_idx": (0, 7), "src_idx": (7, 7), "wgt_idx": (14, 7)},
    },
    # batch2: uop depth 2048 (11), inp 1024 (10), wgt 512 (9), acc 1024 (10).
    "batch2": {
        "gemm": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 11),
            "uop_end": (19, 12),
            "iter_out": (31, 14),
            "iter_in": (45, 14),
            "init": (59, 1),
            "dst_factor_out": (64, 10),  # 60 + 10 > 64
            "dst_factor_in": (74, 10),
            "src_factor_out": (84, 10),
            "src_factor_in": (94, 10),
            "wgt_factor_out": (104, 9),
            "wgt_factor_in": (113, 9),
        },
        "alu": {
            **COMMON,
            "reset": (7, 1),
            "uop_bgn": (8, 11),
            "uop_end": (19, 12),
            "iter_out": (31, 14),
            "iter_in": (45, 14),
            "init": (59, 1),
            "dst_factor_out": (64, 10),
            "dst_factor_in": (74, 10),
            "src_factor_out": (84, 10),
            "src_factor_in": (94, 10),
            "alu_opcode": (104, 3),
            "use_imm": (107, 1),
            "imm": (108, 16, True),
        },
        "cfg": {**COMMON, "init_base": (7, 10), "shift": (17, 5), "clip_lo": (22, 8, True), "clip_hi": (30, 8, True),
                "epilogue": (38, 1), "window": (39, 1), "warmup": (40, 3)},
        "uop": {"dst_idx": (0, 10), "src_idx": (10, 10), "wgt_idx": (20, 9)},
    },
}
# The mem and finish formats only have fixed-width fields (dram_addr_width is 32 in every preset).
for _p in ("small", "batch2"):
    REF[_p]["mem"] = REF["default"]["mem"]
    REF[_p]["finish"] = REF["default"]["finish"]

FORMAT_NAMES = ("mem", "gemm", "alu", "finish", "cfg")
PRESET_NAMES = ("default", "small", "batch2")


def _ref(preset: str, fmt: str) -> dict[str, tuple[int, int, bool]]:
    return {k: (v[0], v[1], len(v) == 3 and v[2]) for k, v in REF[preset][fmt].items()}


def _format(cfg: Config, fmt: str):
    lay = isa.layout(cfg)
    return lay.uop if fmt == "uop" else lay.formats[fmt]


# ---------------------------------------------------------------------------------
# Enumerations (vta.md §1.2, §1.9, §1.10)
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "values"),
    [
        (isa.Op, {"LOAD": 0, "STORE": 1, "GEMM": 2, "FINISH": 3, "ALU": 4, "CFG": 5}),
        (isa.Mem, {"UOP": 0, "WGT": 1, "INP": 2, "ACC": 3, "OUT": 4, "ACC_8BIT": 5}),
        (isa.AluOp, {"MIN": 0, "MAX": 1, "ADD": 2, "SHR": 3, "MUL": 4}),
        (isa.Stage, {"LOAD": 1, "COMPUTE": 2, "STORE": 3}),
    ],
)
def test_enum_values(enum, values):
    assert {m.name: m.value for m in enum} == values


def test_sizes():
    assert isa.INSN_BITS == 128
    assert isa.INSN_BYTES == 16


# ---------------------------------------------------------------------------------
# Bit positions
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES + ("uop",))
def test_layout_bit_positions(preset, fmt):
    f = _format(PRESETS[preset], fmt)
    ref = _ref(preset, fmt)
    assert [s.name for s in f.slots] == list(ref)  # table order
    got = {s.name: (s.bit, s.width, s.signed) for s in f.slots}
    assert got == ref
    assert f.total_bits == (32 if fmt == "uop" else 128)
    for s in f.slots:
        assert s.bit + s.width <= f.total_bits
        assert s.bit == s.word * 64 + s.lsb
        assert s.lsb + s.width <= min(64, f.total_bits)  # no field straddles a 64-bit word


def test_slot_ranges():
    f = _format(DEFAULT, "alu")
    assert (f.slot("imm").low, f.slot("imm").high) == (-32768, 32767)
    assert (f.slot("iter_out").low, f.slot("iter_out").high) == (0, 16383)
    assert (f.slot("use_imm").low, f.slot("use_imm").high) == (0, 1)
    with pytest.raises(KeyError):
        f.slot("x_size")


def test_of_op_routing():
    lay = isa.layout(DEFAULT)
    assert lay.of_op(isa.Op.LOAD).name == "mem"
    assert lay.of_op(isa.Op.STORE).name == "mem"
    assert lay.of_op(isa.Op.GEMM).name == "gemm"
    assert lay.of_op(isa.Op.ALU).name == "alu"
    assert lay.of_op(isa.Op.FINISH).name == "finish"


# ---------------------------------------------------------------------------------
# Independent hand encoder
# ---------------------------------------------------------------------------------


def hand_encode(preset: str, fmt: str, **values: int) -> int:
    table = _ref(preset, fmt)
    word = 0
    for name, v in values.items():
        bit, width, _signed = table[name]
        word |= (v & ((1 << width) - 1)) << bit
    return word


def _words(w: int) -> list[int]:
    return [w & (2**64 - 1), w >> 64]


def _as_int(row) -> int:
    return int(row[0]) | (int(row[1]) << 64)


HAND_CASES = [
    (
        "load_inp",
        "default",
        isa.load(
            isa.Mem.INP,
            push_next=1,
            sram_base=5,
            dram_base=0x12345678,
            y_size=3,
            x_size=4,
            x_stride=100,
            y_pad_0=1,
            y_pad_1=2,
            x_pad_0=3,
            x_pad_1=15,
        ),
        "mem",
        dict(
            opcode=0,
            push_next=1,
            memory_type=2,
            sram_base=5,
            dram_base=0x12345678,
            y_size=3,
            x_size=4,
            x_stride=100,
            y_pad_0=1,
            y_pad_1=2,
            x_pad_0=3,
            x_pad_1=15,
        ),
    ),
    (
        "store_max",
        "default",
        isa.store(
            pop_prev=1,
            push_prev=1,
            sram_base=0xFFFF,
            dram_base=0xFFFFFFFF,
            y_size=0xFFFF,
            x_size=0xFFFF,
            x_stride=0xFFFF,
        ),
        "mem",
        dict(
            opcode=1,
            pop_prev=1,
            push_prev=1,
            memory_type=4,
            sram_base=0xFFFF,
            dram_base=0xFFFFFFFF,
            y_size=0xFFFF,
            x_size=0xFFFF,
            x_stride=0xFFFF,
        ),
    ),
    (
        "gemm",
        "default",
        isa.gemm(
            reset=1,
            pop_next=1,
            uop_bgn=8191,
            uop_end=8192,
            iter_out=16383,
            iter_in=7,
            dst_factor_out=2047,
            dst_factor_in=1,
            src_factor_out=1000,
            src_factor_in=3,
            wgt_factor_out=1023,
            wgt_factor_in=512,
        ),
        "gemm",
        dict(
            opcode=2,
            reset=1,
            pop_next=1,
            uop_bgn=8191,
            uop_end=8192,
            iter_out=16383,
            iter_in=7,
            dst_factor_out=2047,
            dst_factor_in=1,
            src_factor_out=1000,
            src_factor_in=3,
            wgt_factor_out=1023,
            wgt_factor_in=512,
        ),
    ),
    (
        "alu_neg_imm",
        "default",
        isa.alu(
            isa.AluOp.SHR,
            uop_bgn=2,
            uop_end=3,
            iter_out=4,
            iter_in=5,
            dst_factor_out=6,
            dst_factor_in=7,
            src_factor_out=8,
            src_factor_in=9,
            use_imm=1,
            imm=-3,
        ),
        "alu",
        dict(
            opcode=4,
            alu_opcode=3,
            uop_bgn=2,
            uop_end=3,
            iter_out=4,
            iter_in=5,
            dst_factor_out=6,
            dst_factor_in=7,
            src_factor_out=8,
            src_factor_in=9,
            use_imm=1,
            imm=-3,
        ),
    ),
    (
        "alu_min_imm",
        "default",
        isa.alu(isa.AluOp.MAX, use_imm=1, imm=-32768, push_next=1),
        "alu",
        dict(opcode=4, alu_opcode=1, use_imm=1, imm=-32768, push_next=1),
    ),
    ("finish", "default", isa.finish(push_prev=1, pop_prev=1), "finish", dict(opcode=3, push_prev=1, pop_prev=1)),
    (
        "small_gemm",
        "small",
        isa.gemm(
            uop_bgn=255,
            uop_end=256,
            iter_out=2,
            iter_in=3,
            dst_factor_out=127,
            dst_factor_in=64,
            src_factor_out=5,
            src_factor_in=6,
            wgt_factor_out=7,
            wgt_factor_in=127,
        ),
        "gemm",
        dict(
            opcode=2,
            uop_bgn=255,
            uop_end=256,
            iter_out=2,
            iter_in=3,
            dst_factor_out=127,
            dst_factor_in=64,
            src_factor_out=5,
            src_factor_in=6,
            wgt_factor_out=7,
            wgt_factor_in=127,
        ),
    ),
    (
        "small_alu",
        "small",
        isa.alu(isa.AluOp.MUL, dst_factor_out=1, dst_factor_in=127, use_imm=1, imm=-1),
        "alu",
        dict(opcode=4, alu_opcode=4, dst_factor_out=1, dst_factor_in=127, use_imm=1, imm=-1),
    ),
    (
        "batch2_alu",
        "batch2",
        isa.alu(isa.AluOp.ADD, iter_in=9, dst_factor_out=1023, src_factor_in=512, imm=32767),
        "alu",
        dict(opcode=4, alu_opcode=2, iter_in=9, dst_factor_out=1023, src_factor_in=512, imm=32767),
    ),
    (
        "batch2_gemm",
        "batch2",
        isa.gemm(uop_bgn=2047, uop_end=2048, wgt_factor_out=1, wgt_factor_in=511),
        "gemm",
        dict(opcode=2, uop_bgn=2047, uop_end=2048, wgt_factor_out=1, wgt_factor_in=511),
    ),
]


@pytest.mark.parametrize(
    ("preset", "insn", "fmt", "values"), [c[1:] for c in HAND_CASES], ids=[c[0] for c in HAND_CASES]
)
def test_encode_matches_hand_encoder(preset, insn, fmt, values):
    cfg = PRESETS[preset]
    expected = hand_encode(preset, fmt, **values)
    words = isa.encode([insn], cfg)
    assert words.dtype == np.uint64
    assert words.shape == (1, 2)
    assert [int(w) for w in words[0]] == _words(expected)
    assert isa.decode(words, cfg) == [insn]


@pytest.mark.parametrize(
    ("insn", "w0", "w1"),
    [
        # Hand-computed constants, no table involved.
        (isa.finish(push_prev=1), 0x23, 0),
        (isa.store(x_size=1), 0x201, 0x10000),  # opcode 1 | OUT(4) << 7; x_size at bit 80
        (isa.load(isa.Mem.UOP, x_size=1, y_size=1), 0, 0x10001),
        (isa.alu(isa.AluOp.MIN, use_imm=1, imm=-1), 0x4, 0xFFFF_8000_0000_0000),
        (isa.alu(isa.AluOp.MIN, imm=-32768), 0x4, 0x8000_0000_0000_0000),
        (isa.gemm(reset=1, uop_end=1, iter_out=1, iter_in=1), 0x2 | 1 << 7 | 1 << 21 | 1 << 35 | 1 << 49, 0),
    ],
)
def test_encode_literal_words(insn, w0, w1):
    words = isa.encode([insn], DEFAULT)
    assert [int(w) for w in words[0]] == [w0, w1]


def test_uop_matches_hand_encoder():
    uops = [
        isa.Uop(dst_idx=1, src_idx=2, wgt_idx=3),
        isa.Uop(dst_idx=2047, src_idx=2047, wgt_idx=1023),
        isa.Uop(wgt_idx=512),
    ]
    words = isa.encode_uops(uops, DEFAULT)
    assert words.dtype == np.uint32
    assert [int(w) for w in words] == [1 | 2 << 11 | 3 << 22, 0xFFFF_FFFF, 1 << 31]
    assert [int(w) for w in isa.encode_uops([isa.Uop(dst_idx=5, src_idx=6, wgt_idx=7)], PRESETS["small"])] == [
        hand_encode("small", "uop", dst_idx=5, src_idx=6, wgt_idx=7)
    ]
    assert isa.decode_uops(words, DEFAULT) == uops


def test_decode_hand_encoded_words():
    w = hand_encode("default", "alu", opcode=4, alu_opcode=2, use_imm=1, imm=-100, iter_out=3, dst_factor_in=9)
    (insn,) = isa.decode(np.array([_words(w)], dtype=np.uint64), DEFAULT)
    assert isinstance(insn, isa.AluInsn)
    assert insn.op == isa.Op.ALU
    assert (insn.alu_opcode, insn.use_imm, insn.imm, insn.iter_out, insn.dst_factor_in) == (
        isa.AluOp.ADD,
        1,
        -100,
        3,
        9,
    )


def test_empty_streams():
    assert isa.encode([], DEFAULT).shape == (0, 2)
    assert isa.decode(np.zeros((0, 2), dtype=np.uint64), DEFAULT) == []
    assert isa.encode_uops([], DEFAULT).size == 0
    assert isa.decode_uops(np.zeros(0, dtype=np.uint32), DEFAULT) == []


# ---------------------------------------------------------------------------------
# Hypothesis round trips
# ---------------------------------------------------------------------------------

_CLASS = {"mem": isa.MemInsn, "gemm": isa.GemmInsn, "alu": isa.AluInsn, "finish": isa.FinishInsn, "cfg": isa.CfgInsn}


def _insn_strategy(cfg: Config):
    lay = isa.layout(cfg)

    def of(op):
        fmt = lay.of_op(op)
        kw = {s.name: st.integers(s.low, s.high) for s in fmt.slots if s.name != "opcode"}
        return st.builds(_CLASS[fmt.name], opcode=st.just(int(op)), **kw)

    return st.one_of([of(op) for op in isa.Op])


def _uop_strategy(cfg: Config):
    kw = {s.name: st.integers(s.low, s.high) for s in isa.layout(cfg).uop.slots}
    return st.builds(isa.Uop, **kw)


STRATEGIES = {
    p: (st.lists(_insn_strategy(PRESETS[p]), min_size=1, max_size=8), st.lists(_uop_strategy(PRESETS[p]), max_size=8))
    for p in PRESET_NAMES
}
HYP = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("preset", PRESET_NAMES)
@HYP
@given(data=st.data())
def test_encode_decode_round_trip(preset, data):
    cfg = PRESETS[preset]
    insns = data.draw(STRATEGIES[preset][0])
    words = isa.encode(insns, cfg)
    assert words.shape == (len(insns), 2)
    assert isa.decode(words, cfg) == insns
    # bytes and flat arrays
    assert np.array_equal(isa.as_words(words.tobytes()), words)
    assert np.array_equal(isa.as_words(words.reshape(-1)), words)
    assert isa.decode(words.tobytes(), cfg) == insns
    # each field lands where the slot says
    for insn, row in zip(insns, words, strict=True):
        w = _as_int(row)
        for s in isa.layout(cfg).of_op(insn.opcode).slots:
            raw = (w >> s.bit) & ((1 << s.width) - 1)
            assert raw == getattr(insn, s.name) & ((1 << s.width) - 1)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@HYP
@given(data=st.data())
def test_uop_round_trip(preset, data):
    cfg = PRESETS[preset]
    uops = data.draw(STRATEGIES[preset][1])
    words = isa.encode_uops(uops, cfg)
    assert words.dtype == np.uint32 and words.shape == (len(uops),)
    assert isa.decode_uops(words, cfg) == uops
    if uops:
        dst, src, wgt = isa.uop_fields(words, cfg)
        assert list(dst) == [u.dst_idx for u in uops]
        assert list(src) == [u.src_idx for u in uops]
        assert list(wgt) == [u.wgt_idx for u in uops]


@pytest.mark.parametrize("preset", PRESET_NAMES)
@HYP
@given(data=st.data())
def test_disassemble_assemble_round_trip(preset, data):
    cfg = PRESETS[preset]
    insns = data.draw(STRATEGIES[preset][0])
    uops = data.draw(STRATEGIES[preset][1])
    words = isa.encode(insns, cfg)
    uwords = isa.encode_uops(uops, cfg)
    text = isa.disassemble(words, cfg, uwords if uops else None)
    w2, u2 = isa.assemble(text, cfg)
    assert np.array_equal(w2, words), text
    assert np.array_equal(u2, uwords), text
    assert len(text.splitlines()) == len(insns) + len(uops)


@pytest.mark.parametrize("name", [m.name for m in isa.Mem])
def test_every_memory_type_name_assembles(name):
    # Enum names are what the disassembler prints; the assembler must read all of them.
    mem = isa.Mem[name]
    insn = isa.load(mem, x_size=1)
    assert f"memory_type={name}" in str(insn)
    words, _ = isa.assemble(str(insn), DEFAULT)
    assert isa.decode(words, DEFAULT) == [insn]


@pytest.mark.parametrize("name", [m.name for m in isa.AluOp])
def test_every_alu_opcode_name_assembles(name):
    insn = isa.alu(isa.AluOp[name], use_imm=1, imm=-2)
    words, _ = isa.assemble(f"ALU alu_opcode={name} use_imm imm=-2", DEFAULT)
    assert isa.decode(words, DEFAULT) == [insn]


def test_assembler_syntax():
    text = """
    # a comment line
    load memory_type=inp x_size=0x10 y_size=2 push_next   # lower case, hex, flag
    GEMM reset uop_end=1 iter_out=1 iter_in=1
    alu alu_opcode=3 use_imm imm=-0x10
    STORE memory_type=OUT x_size=16 y_size=2
    FINISH
    UOP dst_idx=1 src_idx=2 wgt_idx=3
    """
    words, uops = isa.assemble(text, DEFAULT)
    expected = [
        isa.load(isa.Mem.INP, x_size=16, y_size=2, push_next=1),
        isa.gemm(reset=1, uop_end=1, iter_out=1, iter_in=1),
        isa.alu(isa.AluOp.SHR, use_imm=1, imm=-16),
        isa.store(x_size=16, y_size=2),
        isa.finish(),
    ]
    assert isa.decode(words, DEFAULT) == expected
    assert np.array_equal(words, isa.encode(expected, DEFAULT))
    assert [int(u) for u in uops] == [1 | 2 << 11 | 3 << 22]


def test_format_insn():
    assert str(isa.finish()) == "FINISH"
    assert str(isa.gemm(reset=1, iter_out=3)) == "GEMM reset iter_out=3"
    assert str(isa.load(isa.Mem.UOP)) == "LOAD memory_type=UOP"
    assert str(isa.alu(isa.AluOp.MAX, use_imm=1, imm=-1)) == "ALU alu_opcode=MAX use_imm imm=-1"
    assert str(isa.Uop(dst_idx=4)) == "UOP dst_idx=4"


# ---------------------------------------------------------------------------------
# Range and decode errors
# ---------------------------------------------------------------------------------

RANGE_CASES = [
    ("iter_out", "default", isa.gemm(iter_out=1 << 14), ["iter_out", "16383"]),
    ("iter_in_negative", "default", isa.gemm(iter_in=-1), ["iter_in", "16383", "-1"]),
    ("imm_40000", "default", isa.alu(isa.AluOp.ADD, imm=40000), ["imm", "32767", "40000"]),
    ("imm_low", "default", isa.alu(isa.AluOp.ADD, imm=-32769), ["imm", "-32768"]),
    ("sram_base", "default", isa.load(isa.Mem.INP, sram_base=1 << 16), ["sram_base", "65535"]),
    ("dram_base", "default", isa.load(isa.Mem.INP, dram_base=1 << 32), ["dram_base", "4294967295"]),
    ("dram_base_negative", "default", isa.store(dram_base=-1), ["dram_base", "4294967295"]),
    ("y_pad_0", "default", isa.load(isa.Mem.ACC, y_pad_0=16), ["y_pad_0", "15"]),
    ("uop_bgn", "default", isa.gemm(uop_bgn=8192), ["uop_bgn", "8191"]),
    ("uop_end", "default", isa.gemm(uop_end=16384), ["uop_end", "16383"]),
    ("reset", "default", isa.gemm(reset=2), ["reset", "1"]),
    ("push_next", "default", isa.finish(push_next=2), ["push_next", "1"]),
    ("memory_type", "default", isa.MemInsn(opcode=0, memory_type=8), ["memory_type", "7"]),
    ("alu_opcode", "default", isa.alu(isa.AluOp.ADD).replace(alu_opcode=8), ["alu_opcode", "7"]),
    ("small_dst_factor", "small", isa.gemm(dst_factor_out=128), ["dst_factor_out", "127"]),
    ("small_uop_end", "small", isa.alu(isa.AluOp.MIN, uop_end=512), ["uop_end", "511"]),
    ("batch2_wgt_factor", "batch2", isa.gemm(wgt_factor_in=512), ["wgt_factor_in", "511"]),
]


@pytest.mark.parametrize(("preset", "insn", "needles"), [c[1:] for c in RANGE_CASES], ids=[c[0] for c in RANGE_CASES])
def test_field_range_errors(preset, insn, needles):
    with pytest.raises(isa.FieldRangeError) as exc:
        isa.encode([isa.finish(), insn], PRESETS[preset])
    msg = str(exc.value)
    for n in needles:
        assert n in msg
    assert "instruction 1" in msg


@pytest.mark.parametrize(
    ("preset", "uop", "needles"),
    [
        ("default", isa.Uop(dst_idx=2048), ["dst_idx", "2047"]),
        ("default", isa.Uop(wgt_idx=-1), ["wgt_idx", "1023"]),
        ("small", isa.Uop(src_idx=128), ["src_idx", "127"]),
        ("batch2", isa.Uop(wgt_idx=512), ["wgt_idx", "511"]),
    ],
)
def test_uop_range_errors(preset, uop, needles):
    with pytest.raises(isa.FieldRangeError) as exc:
        isa.encode_uops([uop], PRESETS[preset])
    for n in needles:
        assert n in str(exc.value)


def test_field_range_error_is_isa_error():
    assert issubclass(isa.FieldRangeError, isa.ISAError)
    assert issubclass(isa.ISAError, ValueError)


@pytest.mark.parametrize("value", [1.5, "3"])
def test_non_integer_field_rejected(value):
    # A float field value is currently truncated silently by int(): gemm(iter_out=1.5)
    # encodes as iter_out=1.
    with pytest.raises(isa.ISAError, match="iter_out"):
        isa.encode([isa.gemm(iter_out=value)], DEFAULT)


@pytest.mark.parametrize("opcode", [6, 7])
def test_decode_unknown_opcode(opcode):
    words = isa.encode([isa.finish(), isa.gemm(), isa.finish()], DEFAULT)
    words[2, 0] = np.uint64(opcode)
    with pytest.raises(isa.ISAError) as exc:
        isa.decode(words, DEFAULT)
    msg = str(exc.value)
    assert "opcode" in msg
    assert "instruction 2" in msg
    assert str(opcode) in msg


@pytest.mark.parametrize(
    ("insn", "needle"),
    [
        (isa.GemmInsn(opcode=0), "opcode"),  # LOAD with the GEMM format
        (isa.MemInsn(opcode=isa.Op.ALU), "opcode"),
        (isa.GemmInsn(opcode=7), "opcode"),
    ],
)
def test_encode_wrong_opcode_for_format(insn, needle):
    with pytest.raises(isa.ISAError, match=needle):
        isa.encode([insn], DEFAULT)


@pytest.mark.parametrize(
    "bad",
    [b"\x00" * 15, np.zeros(3, dtype=np.uint64), np.zeros((2, 3), dtype=np.uint64)],
    ids=["bytes15", "odd_words", "shape_2x3"],
)
def test_as_words_rejects_bad_shapes(bad):
    with pytest.raises(isa.ISAError):
        isa.as_words(bad)


# ---------------------------------------------------------------------------------
# Assembler errors name the line
# ---------------------------------------------------------------------------------

ASM_ERRORS = [
    ("unknown_mnemonic", "FOO x_size=1", ["line 1", "FOO"]),
    ("unknown_field", "FINISH\nGEMM bogus=1", ["line 2", "bogus"]),
    ("field_of_other_format", "GEMM imm=3", ["line 1", "imm"]),
    ("bad_integer", "GEMM iter_out=abc", ["line 1", "iter_out", "abc"]),
    ("bad_enum", "LOAD memory_type=FOO", ["line 1", "memory_type", "FOO"]),
    ("duplicate_field", "# c\nGEMM iter_out=1 iter_out=2", ["line 2", "iter_out"]),
    ("load_without_memory_type", "# comment\n\nLOAD x_size=1", ["line 3", "memory_type"]),
    ("opcode_field", "GEMM opcode=3", ["line 1", "opcode"]),
    ("unreadable_token", "GEMM iter_out==3", ["line 1", "iter_out==3"]),
    ("out_of_range", "GEMM\nGEMM\nGEMM iter_out=16384", ["line 3", "iter_out", "16383"]),
    ("uop_out_of_range", "UOP dst_idx=2048", ["line 1", "dst_idx", "2047"]),
    ("imm_out_of_range", "ALU imm=40000", ["line 1", "imm", "32767"]),
]


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in ASM_ERRORS], ids=[c[0] for c in ASM_ERRORS])
def test_assembler_errors(text, needles):
    with pytest.raises(isa.ISAError) as exc:
        isa.assemble(text, DEFAULT)
    msg = str(exc.value)
    for n in needles:
        assert n in msg


def test_assembler_range_error_keeps_type():
    with pytest.raises(isa.FieldRangeError, match="line 2"):
        isa.assemble("FINISH\nGEMM iter_in=16384", DEFAULT)


# ---------------------------------------------------------------------------------
# Stages and NOPs (vta.md §1.2, §1.7)
# ---------------------------------------------------------------------------------

STAGE_CASES = [
    ("load_inp", isa.load(isa.Mem.INP), isa.Stage.LOAD),
    ("load_wgt", isa.load(isa.Mem.WGT), isa.Stage.LOAD),
    ("load_uop", isa.load(isa.Mem.UOP), isa.Stage.COMPUTE),
    ("load_acc", isa.load(isa.Mem.ACC), isa.Stage.COMPUTE),
    ("load_acc8", isa.load(isa.Mem.ACC_8BIT), isa.Stage.COMPUTE),
    ("gemm", isa.gemm(), isa.Stage.COMPUTE),
    ("alu", isa.alu(isa.AluOp.ADD), isa.Stage.COMPUTE),
    ("finish", isa.finish(), isa.Stage.COMPUTE),
    ("store", isa.store(), isa.Stage.STORE),
]


@pytest.mark.parametrize(("insn", "stage"), [c[1:] for c in STAGE_CASES], ids=[c[0] for c in STAGE_CASES])
def test_stage_of(insn, stage):
    assert isa.stage_of(insn) == stage


@pytest.mark.parametrize(
    ("stage", "opcode", "memory_type"),
    [
        (isa.Stage.LOAD, isa.Op.LOAD, isa.Mem.INP),
        (isa.Stage.COMPUTE, isa.Op.LOAD, isa.Mem.UOP),
        (isa.Stage.STORE, isa.Op.STORE, isa.Mem.OUT),
    ],
)
def test_nop(stage, opcode, memory_type):
    n = isa.nop(stage)
    assert n.x_size == 0
    assert n.is_nop
    assert (n.opcode, n.memory_type) == (opcode, memory_type)
    assert isa.stage_of(n) == stage
    flagged = isa.nop(stage, pop_prev=1, push_next=1)
    assert (flagged.pop_prev, flagged.pop_next, flagged.push_prev, flagged.push_next) == (1, 0, 0, 1)
    assert isa.stage_of(flagged) == stage
    assert isa.decode(isa.encode([flagged], DEFAULT), DEFAULT) == [flagged]


def test_is_nop_only_for_empty_mem():
    assert not isa.load(isa.Mem.INP, x_size=1).is_nop
    assert not isa.gemm().is_nop
    assert not isa.finish().is_nop


# ---------------------------------------------------------------------------------
# Amaranth layouts
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES + ("uop",))
def test_amaranth_layout_matches_table(preset, fmt):
    lay = isa.amaranth_layout(PRESETS[preset], fmt)
    assert lay.size == (32 if fmt == "uop" else 128)
    ref = _ref(preset, fmt)
    assert {name for name, _ in lay} == set(ref)
    for name, (bit, width, signed) in ref.items():
        field = lay[name]
        assert field.offset == bit
        assert field.shape.width == width
        assert field.shape.signed == signed


@pytest.mark.parametrize("case", HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_amaranth_const_reads_encoded_fields(case):
    from amaranth.lib import data

    _, preset, insn, fmt, values = case
    cfg = PRESETS[preset]
    lay = isa.amaranth_layout(cfg, fmt)
    value = _as_int(isa.encode([insn], cfg)[0])
    const = data.Const(lay, value)
    for name, _ in lay:
        assert int(const[name]) == values.get(name, 0), name


# ---------------------------------------------------------------------------------
# Reference page
# ---------------------------------------------------------------------------------


def test_reference_markdown_lists_every_field():
    md = isa.reference_markdown()
    for fmt, specs in list(isa.FORMATS.items()) + [("uop", isa.UOP_FORMAT)]:
        assert f"## {fmt} " in md
        for spec in specs:
            assert f"| {spec.name} |" in md
    for names in (REF["default"][f] for f in FORMAT_NAMES + ("uop",)):
        for name in names:
            assert f"| {name} |" in md
    assert "## Semantics where VTA's implementations disagree" in md
    for topic in ("MUL", "SHR amount", "Narrowing", "NOP", "FINISH"):
        assert f"| {topic} |" in md
    # default bit ranges of a few fields, as vta.md writes them
    assert "| 127:112 | imm |" in md
    assert "| 57:26 | dram_base |" in md
    assert "| 7 | reset |" in md
    assert "| 31:22 | wgt_idx |" in md


def test_docs_isa_md_is_generated():
    path = REPO / "docs" / "isa.md"
    assert path.read_text() == isa.reference_markdown(), "regenerate docs/isa.md from isa.reference_markdown()"


# ---------------------------------------------------------------------------------
# Configs that Config accepts but the ISA cannot encode
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        # acc depth 8192: four 13-bit ALU factors + 3 + 1 leave no room for the 16-bit imm in word 1.
        ({"acc_buff_size": 512 * KiB, "wgt_buff_size": 16 * KiB}, ["alu", "imm"]),
        # uop depth 16384: iter_in moves to word 1, then the weight factors overflow it.
        ({"uop_buff_size": 64 * KiB}, ["gemm", "wgt_factor_out"]),
    ],
)
def test_layout_rejects_unencodable_config(kwargs, needles):
    cfg = Config(name="wide", **kwargs)  # accepted by Config
    with pytest.raises(isa.ISAError) as exc:
        isa.layout(cfg)
    for n in needles:
        assert n in str(exc.value)


def test_one_element_buffer_is_rejected_by_config():
    # Its index fields would have zero width: Config refuses it before the ISA sees it.
    with pytest.raises(ConfigError, match="acc_buff_size"):
        Config(acc_buff_size=64)


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("CFG init_base=1568 shift=7 clip_hi=96 epilogue", dict(init_base=1568, shift=7, clip_lo=0, clip_hi=96, epilogue=1)),
        ("CFG pop_next clip_lo=-128 clip_hi=127", dict(pop_next=1, clip_lo=-128, clip_hi=127, epilogue=0)),
        ("GEMM uop_end=4 iter_out=7 iter_in=28 init", dict(init=1, reset=0, uop_end=4, iter_out=7, iter_in=28)),
    ],
)
def test_cfg_and_gemm_init_round_trip_through_text(text, fields):
    words, _ = isa.assemble(text, DEFAULT)
    (insn,) = isa.decode(words, DEFAULT)
    assert {k: getattr(insn, k) for k in fields} == fields
    assert isa.stage_of(insn) == isa.Stage.COMPUTE
    assert isa.disassemble(words, DEFAULT).strip() == text


@pytest.mark.parametrize(("field", "value"), [("shift", 32), ("clip_lo", -129), ("clip_hi", 128), ("init_base", 2048)])
def test_cfg_fields_out_of_range_are_named(field, value):
    with pytest.raises(isa.FieldRangeError, match=field):
        isa.encode([isa.cfg(**{field: value})], DEFAULT)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("epilogue", [True, False])
def test_gemm_and_alu_share_the_loop_fields_bits(preset, epilogue):
    """The tensor pipeline reads the loop fields through GEMM's layout for ALU instructions too."""
    lay = isa.layout(PRESETS[preset].replace(gemm_epilogue=epilogue))
    for spec in isa._LOOPS:
        if spec.present(lay.config):
            assert lay.formats["gemm"].slot(spec.name) == lay.formats["alu"].slot(spec.name), spec.name
