"""Shared helpers for the simulator and runtime tests.

- `DramImage`: a zeroed DRAM byte array with a bump allocator to place data in it.
- `pack_uops`: micro-op words packed by hand (dst | src | wgt, low bits first), with the
  index widths worked out here from the buffer sizes (not from `vdla.isa`).
- `run_insns`: encode instruction objects, place them in DRAM and run the golden
  simulator on them (`vdla.simulator.run`), returning the report, DRAM and machine.
- `describe` / `flag_table`: a compact view of an instruction stream's dependency flags
  for literal expected tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla import isa
from vdla.config import Config
from vdla.simulator import Machine, run

PAGE = 4096
_DT = {8: "<i1", 16: "<i2", 32: "<i4"}


def _log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, n
    return n.bit_length() - 1


@dataclass(frozen=True)
class Geometry:
    """Element sizes and depths of a config, derived here independently of Config's properties."""

    inp_bytes: int
    wgt_bytes: int
    acc_bytes: int
    out_bytes: int
    acc8_bytes: int
    uop_depth: int
    inp_depth: int
    wgt_depth: int
    acc_depth: int
    dst_bits: int
    src_bits: int
    wgt_bits: int

    @classmethod
    def of(cls, c: Config) -> Geometry:
        inp_b = c.batch * c.block_in * c.inp_width // 8
        wgt_b = c.block_out * c.block_in * c.wgt_width // 8
        acc_b = c.batch * c.block_out * c.acc_width // 8
        out_b = c.batch * c.block_out * c.out_width // 8
        acc_d = c.acc_buff_size // acc_b
        inp_d = c.inp_buff_size // inp_b
        wgt_d = c.wgt_buff_size // wgt_b
        return cls(
            inp_b, wgt_b, acc_b, out_b, c.batch * c.block_out, c.uop_buff_size // 4, inp_d, wgt_d, acc_d,
            _log2(acc_d), max(_log2(acc_d), _log2(inp_d)), _log2(wgt_d),
        )


def dtype_of(width: int) -> np.dtype:
    return np.dtype(_DT[width])


def pack_uops(uops, config: Config) -> np.ndarray:
    """(dst, src, wgt) triples as 32-bit words: dst in the low bits, then src, then wgt."""
    g = Geometry.of(config)
    words = []
    for d, s, w in uops:
        assert 0 <= d < 1 << g.dst_bits and 0 <= s < 1 << g.src_bits and 0 <= w < 1 << g.wgt_bits, (d, s, w)
        words.append(d | (s << g.dst_bits) | (w << (g.dst_bits + g.src_bits)))
    return np.array(words, dtype="<u4")


class DramImage:
    """A zeroed DRAM byte array; `place` copies data in at the next aligned address."""

    def __init__(self, size: int = 1 << 20, start: int = PAGE) -> None:
        self.dram = np.zeros(size, dtype=np.uint8)
        self.top = start

    def reserve(self, nbytes: int, align: int = 256) -> int:
        addr = -(-self.top // align) * align
        assert addr + nbytes <= self.dram.size, "DramImage is full"
        self.top = addr + nbytes
        return addr

    def place(self, data, align: int = 256) -> int:
        raw = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray)) else (
            np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        )
        addr = self.reserve(raw.size, align)
        self.dram[addr : addr + raw.size] = raw
        return addr

    def fill(self, addr: int, nbytes: int, value: int) -> None:
        self.dram[addr : addr + nbytes] = value

    def copy(self) -> DramImage:
        other = DramImage(self.dram.size, self.top)
        other.dram[:] = self.dram
        return other


def place_insns(image: DramImage, insns, config: Config) -> tuple[int, int]:
    words = isa.encode(insns, config).astype("<u8")
    return image.place(words, 16), len(insns)


def run_insns(config: Config, insns, image: DramImage | None = None, *, machine: Machine | None = None,
              strict: bool = True):
    """Encode `insns`, place them after the data in `image` and run the golden simulator.

    Returns (report, image, machine); `image.dram` holds DRAM after the run."""
    image = image or DramImage()
    addr, n = place_insns(image, insns, config)
    machine = machine or Machine(config)
    report = run(config, image.dram, addr, n, machine=machine, strict=strict)
    return report, image, machine


# -- dependency flag tables --------------------------------------------------------------

_STAGE_LETTER = {isa.Stage.LOAD: "L", isa.Stage.COMPUTE: "G", isa.Stage.STORE: "S"}


def describe(insn) -> str:
    """'NOP.L' / 'NOP.G' / 'NOP.S', 'LOAD.INP', 'STORE', 'GEMM', 'ALU', 'FINISH'."""
    op = isa.Op(insn.opcode)
    if insn.FORMAT == "mem" and insn.x_size == 0:
        return "NOP." + _STAGE_LETTER[isa.stage_of(insn)]
    if op == isa.Op.LOAD:
        return "LOAD." + isa.Mem(insn.memory_type).name
    return op.name


def flag_table(insns) -> list[tuple[str, str]]:
    """[(describe(insn), flags)]: flags are the set flag names joined by '+', or '-' for none,
    e.g. ('GEMM', 'pop_prev+push_next')."""
    out = []
    for insn in insns:
        names = [f for f in ("pop_prev", "pop_next", "push_prev", "push_next") if getattr(insn, f)]
        out.append((describe(insn), "+".join(names) or "-"))
    return out
