"""The VDLA instruction set: ONE field table, and everything derived from it.

VDLA executes 128-bit task instructions (LOAD, STORE, GEMM, ALU, FINISH, and VDLA's CFG) and 32-bit
micro-ops, with VTA's field order. `FORMATS` below is the only description of the
encoding; field widths that depend on buffer depths are expressions over a
`vdla.config.Config`. From the table this module derives, per Config:

- the bit layout (`layout(config)`), packed like VTA's C bit-fields: fields are placed
  in order into two little-endian 64-bit words and a field that would straddle the
  word boundary starts the next word (so the default Config reproduces VTA exactly);
- encode/decode between instruction objects and numpy words (`encode`, `decode`);
- a text assembler and disassembler that round-trip (`assemble`, `disassemble`);
- the Amaranth `data` layouts the hardware decoder uses (`amaranth_layout`);
- the ISA reference page (`reference_markdown`), including the semantic choices made
  where VTA's four implementations disagree.

Instruction objects are frozen dataclasses generated from the table (`MemInsn`,
`GemmInsn`, `AluInsn`, `FinishInsn`, `Uop`); build them with `load`, `store`, `gemm`,
`alu`, `finish` and `nop`.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from .config import Config

__all__ = [
    "Op", "Mem", "AluOp", "Stage", "ISAError", "FieldRangeError", "FieldSpec", "Slot", "Format",
    "FORMATS", "UOP_FORMAT", "MemInsn", "GemmInsn", "AluInsn", "FinishInsn", "Uop", "Insn",
    "layout", "encode", "decode", "encode_uops", "decode_uops", "assemble", "disassemble",
    "format_insn", "load", "store", "gemm", "alu", "finish", "nop", "stage_of", "amaranth_layout",
    "elem_bytes", "buffer_depth",
    "reference_markdown", "INSN_BITS", "INSN_BYTES",
]

INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8
WORD_BITS = 64


class Op(IntEnum):
    """Instruction opcodes (3 bits)."""

    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4
    CFG = 5


class Mem(IntEnum):
    """Memory types of LOAD/STORE (3 bits)."""

    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(IntEnum):
    """Tensor ALU opcodes (3 bits). SHR by a negative amount shifts left."""

    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


class Stage(IntEnum):
    """Pipeline stages in dependency order; "prev"/"next" flags are relative to it."""

    LOAD = 1
    COMPUTE = 2
    STORE = 3


class ISAError(ValueError):
    """Malformed instruction, micro-op or assembly text."""


class FieldRangeError(ISAError):
    """A field value does not fit its width; the message names the field and its limit."""


# --------------------------------------------------------------------------------------
# The field table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """One field: a fixed width, or `width_of` a Config attribute plus `extra` bits."""

    name: str
    width: int = 0
    width_of: str = ""
    extra: int = 0
    signed: bool = False
    doc: str = ""
    #: a Config flag the field exists under (absent, the format is as if it were not in the table)
    when: str = ""

    def present(self, config: Config) -> bool:
        return not self.when or bool(getattr(config, self.when))

    def bits(self, config: Config) -> int:
        if self.width_of:
            return getattr(config, self.width_of) + self.extra
        return self.width

    def width_text(self) -> str:
        if not self.width_of:
            return str(self.width)
        return self.width_of + (f" + {self.extra}" if self.extra else "")


def _f(name: str, width: int | str, doc: str, *, extra: int = 0, signed: bool = False, when: str = "") -> FieldSpec:
    if isinstance(width, str):
        return FieldSpec(name, width_of=width, extra=extra, signed=signed, doc=doc, when=when)
    return FieldSpec(name, width=width, signed=signed, doc=doc, when=when)


_COMMON = (
    _f("opcode", 3, "instruction opcode (Op)"),
    _f("pop_prev", 1, "wait for and pop a token from the previous stage"),
    _f("pop_next", 1, "wait for and pop a token from the next stage"),
    _f("push_prev", 1, "push a token to the previous stage when done"),
    _f("push_next", 1, "push a token to the next stage when done"),
)
_LOOPS = (
    _f("reset", 1, "GEMM: write zeros to the destination rows instead of accumulating"),
    _f("uop_bgn", "log_uop_depth", "first micro-op of the kernel"),
    _f("uop_end", "log_uop_depth", "one past the last micro-op", extra=1),
    _f("iter_out", "loop_iter_width", "outer loop trip count"),
    _f("iter_in", "loop_iter_width", "inner loop trip count"),
    # init sits in the first word's last bit, which the loop counts leave free on the default
    # config (both formats' second words are full there); ALU has it too, as it has reset, so
    # the two formats keep every loop field at the same bits. A Config without the epilogue
    # has VTA's layout exactly.
    _f("init", 1, "GEMM: start from ACC[init_base + WGT index] (CFG's init_base) instead of ACC[dst]: "
                  "the accumulation, or with reset a copy, begins at a bias row, no reset pass needed "
                  "(only where Config.gemm_epilogue is on)", when="gemm_epilogue"),
    _f("dst_factor_out", "log_acc_depth", "ACC index step per outer iteration"),
    _f("dst_factor_in", "log_acc_depth", "ACC index step per inner iteration"),
)

#: The single description of the instruction encoding, keyed by format name.
FORMATS: dict[str, tuple[FieldSpec, ...]] = {
    "mem": _COMMON + (
        _f("memory_type", 3, "buffer loaded or stored (Mem)"),
        _f("sram_base", 16, "first SRAM element written (LOAD) or read (STORE)"),
        _f("dram_base", "dram_addr_width", "DRAM address in elements of the memory type"),
        _f("y_size", 16, "rows"),
        _f("x_size", 16, "elements per row; 0 makes the instruction a NOP that only carries flags"),
        _f("x_stride", 16, "DRAM elements between row starts"),
        _f("y_pad_0", 4, "zero rows before"),
        _f("y_pad_1", 4, "zero rows after"),
        _f("x_pad_0", 4, "zero elements before each row"),
        _f("x_pad_1", 4, "zero elements after each row"),
    ),
    "gemm": _COMMON + _LOOPS + (
        _f("src_factor_out", "log_inp_depth", "INP index step per outer iteration"),
        _f("src_factor_in", "log_inp_depth", "INP index step per inner iteration"),
        _f("wgt_factor_out", "log_wgt_depth", "WGT index step per outer iteration"),
        _f("wgt_factor_in", "log_wgt_depth", "WGT index step per inner iteration"),
    ),
    "alu": _COMMON + _LOOPS + (
        _f("src_factor_out", "log_acc_depth", "ACC source index step per outer iteration"),
        _f("src_factor_in", "log_acc_depth", "ACC source index step per inner iteration"),
        _f("alu_opcode", 3, "ALU operation (AluOp)"),
        _f("use_imm", 1, "use the immediate instead of ACC[src] as the second operand"),
        _f("imm", "alu_imm_width", "immediate operand, sign-extended", signed=True),
    ),
    "finish": _COMMON,
    "cfg": _COMMON + (
        _f("init_base", "log_acc_depth", "ACC row a GEMM with init adds to its WGT index for its starting row"),
        _f("shift", "epilogue_shift_bits", "epilogue: arithmetic right shift of the ACC value written to OUT"),
        _f("clip_lo", "out_width", "epilogue: lower bound of the shifted value", signed=True),
        _f("clip_hi", "out_width", "epilogue: upper bound of the shifted value", signed=True),
        _f("epilogue", 1, "GEMM writes OUT[dst] = min(max(ACC[dst] >> shift, clip_lo), clip_hi) instead of "
                          "the low out_width bits (0: VTA's narrowing)"),
        _f("window", 1, "window mode: a GEMM's lane (b, o) multiplies WGT[wgt][o][t] by INP element (b, o) of the "
                        "row read t iterations before, within the inner-loop pass (earlier rows count as zero): "
                        "a depthwise conv's taps (only where Config.gemm_window is on)", when="gemm_window"),
        _f("warmup", "window_warmup_bits", "window mode: the first warmup uop-iterations of every inner-loop pass "
                                           "only feed the window (no ACC or OUT write)", when="gemm_window"),
    ),
}

UOP_FORMAT: tuple[FieldSpec, ...] = (
    _f("dst_idx", "uop_dst_bits", "ACC index written"),
    _f("src_idx", "uop_src_bits", "INP index (GEMM) or ACC source index (ALU)"),
    _f("wgt_idx", "uop_wgt_bits", "WGT index (GEMM); unused by ALU"),
)

FORMAT_OF_OP = {Op.LOAD: "mem", Op.STORE: "mem", Op.GEMM: "gemm", Op.ALU: "alu", Op.FINISH: "finish", Op.CFG: "cfg"}
_ENUM_FIELDS: dict[str, type[IntEnum]] = {"opcode": Op, "memory_type": Mem, "alu_opcode": AluOp}


# --------------------------------------------------------------------------------------
# Layouts derived from the table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """Where one field lives for a given Config."""

    name: str
    word: int
    lsb: int
    width: int
    signed: bool

    @property
    def bit(self) -> int:
        """Position of the field's lowest bit in the whole instruction (or uop)."""
        return self.word * WORD_BITS + self.lsb

    @property
    def low(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def high(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


@dataclass(frozen=True)
class Format:
    name: str
    slots: tuple[Slot, ...]
    total_bits: int
    #: fields of the table this Config does not have (`FieldSpec.when`), and the flag each needs
    absent: tuple[tuple[str, str], ...] = ()

    def slot(self, name: str) -> Slot:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(name)


def _place(name: str, specs: Sequence[FieldSpec], config: Config, total_bits: int) -> Format:
    word_bits = min(WORD_BITS, total_bits)
    slots, word, lsb = [], 0, 0
    absent = tuple((spec.name, spec.when) for spec in specs if not spec.present(config))
    for spec in specs:
        if not spec.present(config):
            continue
        width = spec.bits(config)
        if width < 1:
            raise ISAError(f"{name} field {spec.name!r} has width {width} for config {config.name!r}")
        if lsb + width > word_bits:  # would straddle: start the next word, as C bit-fields do
            word, lsb = word + 1, 0
        if word * word_bits + width > total_bits or width > word_bits:
            raise ISAError(
                f"config {config.name!r}: {name} field {spec.name!r} ({width} bits) does not fit "
                f"in {total_bits} bits; reduce the buffer depths or widths it is derived from "
                f"({spec.width_text()})"
            )
        slots.append(Slot(spec.name, word, lsb, width, spec.signed))
        lsb += width
    return Format(name, tuple(slots), total_bits, absent)


@dataclass(frozen=True)
class Layout:
    """All formats for one Config."""

    config: Config
    formats: dict[str, Format]
    uop: Format

    def of_op(self, op: int) -> Format:
        return self.formats[FORMAT_OF_OP[Op(op)]]


@functools.lru_cache(maxsize=64)
def layout(config: Config) -> Layout:
    """The bit layout of every format for `config` (cached; Config is hashable)."""
    fmts = {name: _place(name, specs, config, INSN_BITS) for name, specs in FORMATS.items()}
    return Layout(config, fmts, _place("uop", UOP_FORMAT, config, 32))


# --------------------------------------------------------------------------------------
# Instruction objects, generated from the table
# --------------------------------------------------------------------------------------


class _InsnBase:
    """Behaviour shared by the generated instruction dataclasses."""

    FORMAT: str = ""

    def replace(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    @property
    def op(self) -> Op:
        return Op(self.opcode)  # type: ignore[attr-defined]

    @property
    def is_nop(self) -> bool:
        return self.FORMAT == "mem" and self.x_size == 0  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return format_insn(self)  # type: ignore[arg-type]


def _make_class(cls_name: str, fmt: str, specs: Sequence[FieldSpec], doc: str) -> type:
    fields = [(s.name, int, dataclasses.field(default=0)) for s in specs]
    cls = dataclasses.make_dataclass(cls_name, fields, bases=(_InsnBase,), frozen=True, namespace={"FORMAT": fmt})
    cls.__doc__ = doc
    cls.__module__ = __name__
    return cls


MemInsn = _make_class("MemInsn", "mem", FORMATS["mem"], "LOAD or STORE: a 2D strided DMA with zero padding.")
GemmInsn = _make_class("GemmInsn", "gemm", FORMATS["gemm"], "GEMM over a micro-op kernel in a 2-level loop.")
AluInsn = _make_class("AluInsn", "alu", FORMATS["alu"], "Tensor ALU over a micro-op kernel in a 2-level loop.")
FinishInsn = _make_class("FinishInsn", "finish", FORMATS["finish"], "FINISH: raises done once compute reaches it.")
CfgInsn = _make_class("CfgInsn", "cfg", FORMATS["cfg"],
                      "CFG: sets the compute module's GEMM epilogue and init base until the next CFG or FINISH.")
Uop = _make_class("Uop", "uop", UOP_FORMAT, "A micro-op: the ACC, INP/ACC and WGT indices of one operation.")
Insn = Any  # MemInsn | GemmInsn | AluInsn | FinishInsn | CfgInsn (generated classes)

_CLASS_OF_FORMAT = {"mem": MemInsn, "gemm": GemmInsn, "alu": AluInsn, "finish": FinishInsn, "cfg": CfgInsn}


def load(memory_type: Mem, **fields: int) -> Any:
    return MemInsn(opcode=Op.LOAD, memory_type=Mem(memory_type), **fields)


def store(**fields: int) -> Any:
    fields.setdefault("memory_type", Mem.OUT)
    return MemInsn(opcode=Op.STORE, **fields)


def gemm(**fields: int) -> Any:
    return GemmInsn(opcode=Op.GEMM, **fields)


def alu(alu_opcode: AluOp, **fields: int) -> Any:
    return AluInsn(opcode=Op.ALU, alu_opcode=AluOp(alu_opcode), **fields)


def finish(**fields: int) -> Any:
    return FinishInsn(opcode=Op.FINISH, **fields)


def cfg(**fields: int) -> Any:
    return CfgInsn(opcode=Op.CFG, **fields)


def nop(stage: Stage, **flags: int) -> Any:
    """A flag-carrying no-op for `stage` (x_size = 0), as VTA's runtime emits."""
    if stage == Stage.LOAD:
        return load(Mem.INP, **flags)
    if stage == Stage.COMPUTE:
        return load(Mem.UOP, **flags)
    return store(**flags)


def elem_bytes(config: Config, mem: Mem) -> int:
    """Bytes of one element of memory type `mem` in DRAM (the unit of dram_base and x_stride)."""
    return {
        Mem.UOP: config.uop_elem_bytes, Mem.WGT: config.wgt_elem_bytes, Mem.INP: config.inp_elem_bytes,
        Mem.ACC: config.acc_elem_bytes, Mem.ACC_8BIT: config.acc8_elem_bytes, Mem.OUT: config.out_elem_bytes,
    }[Mem(mem)]


def buffer_depth(config: Config, mem: Mem) -> int:
    """Elements in the on-chip buffer that memory type `mem` loads into or stores from."""
    return {
        Mem.UOP: config.uop_depth, Mem.WGT: config.wgt_depth, Mem.INP: config.inp_depth,
        Mem.ACC: config.acc_depth, Mem.ACC_8BIT: config.acc_depth, Mem.OUT: config.out_depth,
    }[Mem(mem)]


def stage_of(insn: Any) -> Stage:
    """Which module executes `insn`: fetch's routing rule (VTA's)."""
    op = insn.opcode
    if op == Op.STORE:
        return Stage.STORE
    if op == Op.LOAD and insn.memory_type in (Mem.INP, Mem.WGT):
        return Stage.LOAD
    return Stage.COMPUTE


# --------------------------------------------------------------------------------------
# Encode / decode
# --------------------------------------------------------------------------------------


def _pack(fmt: Format, values: dict[str, int], what: str) -> int:
    word = 0
    for s in fmt.slots:
        raw = values.get(s.name, 0)
        try:
            v = operator.index(raw)  # ints, bools, IntEnums, numpy integers; never a silent float cut
        except TypeError:
            raise FieldRangeError(f"{what}: field '{s.name}' = {raw!r} is not an integer") from None
        if not s.low <= v <= s.high:
            raise FieldRangeError(
                f"{what}: field '{s.name}' = {v} does not fit in {s.width} "
                f"{'signed ' if s.signed else ''}bits (allowed {s.low}..{s.high})"
            )
        word |= (v & ((1 << s.width) - 1)) << s.bit
    for name, flag in fmt.absent:
        if values.get(name, 0):
            raise FieldRangeError(f"{what}: field '{name}' = {values[name]} does not exist on this config "
                                  f"(Config.{flag} is off)")
    return word


def _unpack(fmt: Format, word: int) -> dict[str, int]:
    out = {}
    for s in fmt.slots:
        v = (word >> s.bit) & ((1 << s.width) - 1)
        if s.signed and v >> (s.width - 1):
            v -= 1 << s.width
        out[s.name] = v
    return out


def _enum_or_int(name: str, v: int) -> int:
    enum = _ENUM_FIELDS.get(name)
    if enum is None:
        return v
    try:
        return enum(v)
    except ValueError:
        return v  # kept raw: the executor reports the unknown value with its instruction index


def _opcode_of(insn: Any, where: str) -> Op:
    try:
        op = Op(insn.opcode)
    except (ValueError, AttributeError):
        raise ISAError(f"{where}: unknown opcode {getattr(insn, 'opcode', insn)!r}") from None
    if insn.FORMAT != FORMAT_OF_OP[op]:
        raise ISAError(f"{where}: opcode {op.name} cannot use the {insn.FORMAT} format")
    return op


def encode_one(insn: Any, config: Config, index: int | None = None) -> int:
    """One instruction as a 128-bit integer."""
    where = "instruction" if index is None else f"instruction {index}"
    op = _opcode_of(insn, where)
    fmt = layout(config).of_op(op)
    # the fields as they are (dataclasses.asdict deep-copies: 4.8 s of ResNet-50's 27 s build)
    return _pack(fmt, {name: getattr(insn, name) for name in _field_names(type(insn))}, f"{where} ({op.name})")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def encode(insns: Iterable[Any], config: Config) -> np.ndarray:
    """Instructions as a (n, 2) uint64 array: word 0 holds bits 0-63 (VTA's layout)."""
    rows = [encode_one(insn, config, i) for i, insn in enumerate(insns)]
    out = np.zeros((len(rows), 2), dtype=np.uint64)
    for i, w in enumerate(rows):
        out[i, 0] = w & 0xFFFF_FFFF_FFFF_FFFF
        out[i, 1] = w >> 64
    return out


def decode_one(word: int, config: Config, index: int | None = None) -> Any:
    where = "instruction" if index is None else f"instruction {index}"
    opcode = word & 0b111
    try:
        op = Op(opcode)
    except ValueError:
        err = ISAError(f"{where}: unknown opcode {opcode} (valid: {', '.join(o.name for o in Op)})")
        err.index = index  # type: ignore[attr-defined]
        raise err from None
    fmt = layout(config).of_op(op)
    fields = {k: _enum_or_int(k, v) for k, v in _unpack(fmt, word).items()}
    return _CLASS_OF_FORMAT[fmt.name](**fields)


def as_words(words: np.ndarray | bytes | Sequence[int]) -> np.ndarray:
    """Accept (n, 2) uint64 words, a flat uint64 array or little-endian bytes."""
    if isinstance(words, (bytes, bytearray, memoryview)):
        if len(words) % INSN_BYTES:
            raise ISAError(f"instruction stream of {len(words)} bytes is not a multiple of {INSN_BYTES}")
        return np.frombuffer(bytes(words), dtype="<u8").reshape(-1, 2)
    arr = np.asarray(words, dtype=np.uint64)
    if arr.ndim == 1:
        if arr.size % 2:
            raise ISAError(f"instruction stream of {arr.size} 64-bit words is not a whole number of instructions")
        arr = arr.reshape(-1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ISAError(f"instruction words must have shape (n, 2), got {arr.shape}")
    return arr


def decode(words: np.ndarray | bytes | Sequence[int], config: Config) -> list[Any]:
    arr = as_words(words)
    return [decode_one(int(w0) | (int(w1) << 64), config, i) for i, (w0, w1) in enumerate(arr)]


def encode_uops(uops: Iterable[Any], config: Config) -> np.ndarray:
    fmt = layout(config).uop
    return np.array(
        [_pack(fmt, dataclasses.asdict(u), f"uop {i}") for i, u in enumerate(uops)], dtype=np.uint32
    )


def decode_uops(words: np.ndarray | Sequence[int], config: Config) -> list[Any]:
    fmt = layout(config).uop
    return [Uop(**_unpack(fmt, int(w))) for w in np.asarray(words, dtype=np.uint32)]


def uop_fields(words: np.ndarray, config: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised uop decode: (dst, src, wgt) index arrays, for executors."""
    fmt = layout(config).uop
    w = np.asarray(words, dtype=np.uint32).astype(np.int64)
    return tuple((w >> s.lsb) & ((1 << s.width) - 1) for s in fmt.slots)  # type: ignore[return-value]


# --------------------------------------------------------------------------------------
# Text assembler and disassembler
# --------------------------------------------------------------------------------------


def _specs_of(fmt: str) -> tuple[FieldSpec, ...]:
    return UOP_FORMAT if fmt == "uop" else FORMATS[fmt]


def format_insn(insn: Any) -> str:
    """One line of assembly: the mnemonic, then every non-zero field in table order.

    One-bit fields print as bare flags; enum fields print by name."""
    mnemonic = "UOP" if insn.FORMAT == "uop" else _name(Op, insn.opcode)
    parts = [mnemonic]
    for spec in _specs_of(insn.FORMAT):
        if spec.name == "opcode":
            continue
        v = getattr(insn, spec.name)
        if v == 0 and not (spec.name == "memory_type" and insn.FORMAT == "mem"):
            continue
        if spec.name in _ENUM_FIELDS:
            parts.append(f"{spec.name}={_name(_ENUM_FIELDS[spec.name], v)}")
        elif spec.width == 1 and not spec.width_of:
            parts.append(spec.name)
        else:
            parts.append(f"{spec.name}={v}")
    return " ".join(parts)


def _name(enum: type[IntEnum], v: int) -> str:
    try:
        return enum(v).name
    except ValueError:
        return str(int(v))


def disassemble(words: np.ndarray | bytes, config: Config, uops: np.ndarray | None = None) -> str:
    """Text for an instruction stream (and optionally its uops) that `assemble` reads back."""
    lines = [format_insn(insn) for insn in decode(words, config)]
    if uops is not None:
        lines += [format_insn(u) for u in decode_uops(uops, config)]
    return "\n".join(lines) + "\n"


_TOKEN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=(\S+))?$")


def _parse_value(name: str, text: str, where: str) -> int:
    enum = _ENUM_FIELDS.get(name)
    if enum is not None and text.upper() in enum.__members__:
        return enum[text.upper()]
    try:
        return int(text, 0)
    except ValueError:
        names = f" or one of {', '.join(enum.__members__)}" if enum is not None else ""
        raise ISAError(f"{where}: {name}={text} is not an integer{names}") from None


def assemble(text: str, config: Config) -> tuple[np.ndarray, np.ndarray]:
    """Read assembly text into (instruction words (n, 2) uint64, uop words uint32).

    Each line is `MNEMONIC field=value ... flag ...`; '#' starts a comment. Mnemonics are
    the opcodes (LOAD, STORE, GEMM, ALU, FINISH, CFG) and UOP for micro-op words. Omitted
    fields are 0. Errors name the line."""
    insns: list[Any] = []
    uops: list[Any] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"line {lineno}"
        head, *tokens = line.split()
        head = head.upper()
        if head == "UOP":
            fmt, specs = "uop", UOP_FORMAT
        else:
            try:
                op = Op[head]
            except KeyError:
                raise ISAError(
                    f"{where}: unknown mnemonic {head!r} (expected {', '.join(o.name for o in Op)} or UOP)"
                ) from None
            fmt, specs = FORMAT_OF_OP[op], FORMATS[FORMAT_OF_OP[op]]
        names = {s.name: s for s in specs}
        values: dict[str, int] = {} if fmt == "uop" else {"opcode": op}
        for tok in tokens:
            m = _TOKEN.match(tok)
            if not m:
                raise ISAError(f"{where}: cannot read {tok!r} (expected name=value or a flag name)")
            name, val = m.group(1), m.group(2)
            if name not in names or name == "opcode":
                raise ISAError(f"{where}: {head} has no field {name!r} (fields: {', '.join(n for n in names if n != 'opcode')})")
            if name in values:
                raise ISAError(f"{where}: field {name!r} given twice")
            values[name] = 1 if val is None else _parse_value(name, val, where)
        if fmt == "mem" and "memory_type" not in values:
            raise ISAError(f"{where}: {head} needs memory_type=")
        cls = Uop if fmt == "uop" else _CLASS_OF_FORMAT[fmt]
        obj = cls(**values)
        try:
            if fmt == "uop":
                encode_uops([obj], config)
            else:
                encode_one(obj, config)
        except ISAError as e:
            raise type(e)(f"{where}: {e}") from None
        (uops if fmt == "uop" else insns).append(obj)
    return encode(insns, config), encode_uops(uops, config)


# --------------------------------------------------------------------------------------
# Hardware layouts
# --------------------------------------------------------------------------------------


def amaranth_layout(config: Config, fmt: str) -> Any:
    """An `amaranth.lib.data.FlexibleLayout` of one format (`"mem"`, `"gemm"`, `"alu"`,
    `"finish"` or `"uop"`) for `config`, so the decoder has no second copy of the table."""
    from amaranth.lib import data

    lay = layout(config)
    f = lay.uop if fmt == "uop" else lay.formats[fmt]
    fields = {
        s.name: data.Field((data.signed if s.signed else data.unsigned)(s.width), s.bit) for s in f.slots
    }
    return data.FlexibleLayout(f.total_bits, fields)


# --------------------------------------------------------------------------------------
# The reference page
# --------------------------------------------------------------------------------------

#: Where VTA's implementations disagree, what VDLA does (tested in tests/test_semantics.py).
SEMANTIC_CHOICES: tuple[tuple[str, str], ...] = (
    ("MUL", "Implemented in every executor: the low acc_width bits of the signed product "
            "(fsim and OpenCL do this; HLS and Chisel lack MUL)."),
    ("SHR amount", "The second operand's low log2(acc_width)+1 bits read as a signed number "
                   "(-32..31 for 32-bit accumulators): >= 0 is an arithmetic right shift, < 0 a left "
                   "shift by its magnitude with wrap-around (a 6-bit two's-complement amount; HLS uses 5 "
                   "bits, Chisel keys the direction on the immediate's sign, fsim shifts by the full value)."),
    ("Narrowing", "Every GEMM and ALU write to ACC[i] also writes OUT[i] = the low out_width bits of "
                  "the new value (truncation, as HLS/Chisel). LOAD ACC does not write OUT; STORE reads OUT."),
    ("Accumulation", "GEMM products are exact; the sum wraps to acc_width bits. Back-to-back writes to "
                     "the same ACC row see each other (the hardware forwards); the runtime still rejects "
                     "a kernel whose micro-op writes a row one of the two before it wrote, as VTA's does."),
    ("GEMM reset", "reset=1 writes zeros to ACC[dst] and OUT[dst] for every iteration; INP/WGT are not read."),
    ("CFG and the GEMM epilogue (VDLA's own)", "CFG sets init_base, shift, clip_lo, clip_hi and epilogue (and, "
     "where Config.gemm_window, window and warmup) for the GEMMs after it, until the next CFG; reset and FINISH "
     "restore them all to 0. With epilogue=1 every GEMM write "
     "(reset included) puts min(max(new ACC >> shift, clip_lo), clip_hi) into OUT[dst]: a requantisation's shift and "
     "clip cost no ALU pass. ALU writes are never affected."),
    ("GEMM init (VDLA's own)", "init=1: each iteration starts from ACC[init_base + its WGT index] instead of "
     "ACC[dst] (reset=1 with init=1 copies that row into ACC[dst]), so a layer's first reduction step adds "
     "its bias, stored at the row its weights' index names, with no reset pass; a row written twice by one "
     "init GEMM keeps its last iteration. That row must lie inside ACC; with reset, WGT is still not read."),
    ("GEMM window (VDLA's own)", "CFG's window=1 (only where Config.gemm_window): a non-reset GEMM's lane (b, o) "
     "computes sum_t WGT[wgt][o][t] * h[p - t][b][o], where p counts the uop-iterations of the current inner-loop "
     "pass (0 at its first, again for every outer iteration and every GEMM), h[q] is the INP row the iteration at "
     "position q read, and h[q < 0] is zero: channel o's last block_in input rows are its taps, newest first. The "
     "iterations with p < warmup write nothing (they only feed the window); every index is still checked. "
     "Reset GEMMs and the ALU are unaffected; one iteration a cycle as ever. window and warmup are 0 after reset "
     "and FINISH, as CFG's other fields."),
    ("ALU immediate", "alu_imm_width bits, sign-extended; with use_imm=1 the uop's src_idx is ignored."),
    ("ACC_8BIT", "LOAD ACC_8BIT reads batch*block_out signed bytes per element and sign-extends them into ACC "
                 "(as fsim/OpenCL); dram_base counts such 8-bit elements."),
    ("UOP loads", "2D like every LOAD (y_size rows of x_size uops), but padding is rejected."),
    ("STORE", "Only memory_type OUT; any padding is rejected."),
    ("NOP", "A LOAD or STORE with x_size = 0 moves no data but pops and pushes its flags."),
    ("FINISH", "Executed by compute; may push but must not pop (VTA's runtime rule, checked by the "
               "runtime builder, accepted by executors). The program ends at FINISH; work still in flight "
               "then is reported as a race."),
    ("Bounds", "Any SRAM index at or past a buffer's depth, any DRAM access outside DRAM, and uop_end past "
               "the uop buffer are errors naming the instruction (VTA's hardware would wrap silently)."),
)


def reference_markdown(config: Config | None = None) -> str:
    """The ISA reference page, generated from the field table (docs/isa.md)."""
    config = config or Config()
    lay = layout(config)
    out = [
        "# VDLA instruction set reference",
        "",
        "Generated from `vdla/isa.py` by `vdla info --isa`; do not edit by hand.",
        f"Bit positions are for the `{config.name}` config; widths given as expressions follow the Config.",
        "An instruction is 128 bits, stored as two little-endian 64-bit words; a field that would",
        "straddle the words starts word 1 (as VTA's C bit-fields). Micro-ops are 32 bits.",
        "",
        "Opcodes: " + ", ".join(f"{o.name}={o.value}" for o in Op) + ".",
        "Memory types: " + ", ".join(f"{m.name}={m.value}" for m in Mem) + ".",
        "ALU opcodes: " + ", ".join(f"{a.name}={a.value}" for a in AluOp) + ".",
        "",
    ]
    for fmt_name, specs in list(FORMATS.items()) + [("uop", UOP_FORMAT)]:
        f = lay.uop if fmt_name == "uop" else lay.formats[fmt_name]
        ops = [o.name for o, n in FORMAT_OF_OP.items() if n == fmt_name] or ["micro-op"]
        out += [f"## {fmt_name} ({', '.join(ops)})", "", "| bits | field | width | meaning |", "|---|---|---|---|"]
        for spec, s in zip([sp for sp in specs if sp.present(config)], f.slots):
            bits = f"{s.bit + s.width - 1}:{s.bit}" if s.width > 1 else f"{s.bit}"
            sign = ", signed" if s.signed else ""
            out.append(f"| {bits} | {s.name} | {spec.width_text()} = {s.width}{sign} | {spec.doc} |")
        out.append("")
    out += [
        "## Dependency flags",
        "",
        "Stages in order: load (LOAD INP/WGT), compute (LOAD UOP/ACC/ACC_8BIT, GEMM, ALU, CFG, FINISH), store.",
        "Four token queues: l2g (load->compute), g2l (compute->load), g2s (compute->store), s2g (store->compute).",
        "Pops happen before an instruction executes, pushes after it completes. Load's pop_prev/push_prev",
        "and store's pop_next/push_next have no queue and must be 0.",
        "",
        "## Semantics where VTA's implementations disagree",
        "",
        "| topic | VDLA |",
        "|---|---|",
    ]
    out += [f"| {topic} | {text} |" for topic, text in SEMANTIC_CHOICES]
    return "\n".join(out) + "\n"
