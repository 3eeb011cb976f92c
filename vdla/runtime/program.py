"""Program: an instruction stream plus its micro-ops, ready to run on any Device.

LOAD UOP instructions in a Program address the program's own uop segment (in uops,
from 0); a Device places that segment in DRAM and relocates them at run time, so one
Program runs on any device. Data segments (optional) are initial DRAM contents at
fixed addresses, for stand-alone programs.

Programs save to one versioned binary file:

    magic "VDLAPROG" | u32 version | u32 header bytes | u32 CRC-32 of header+payload | JSON header | payload

The JSON header holds the Config and the sizes; the payload the instruction words,
the uop words and the data segments. Loading checks every part and says what is wrong
(the framing and its checks are shared with the other formats: see :mod:`.container`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import Config, ConfigError
from ..isa import INSN_BYTES, ISAError, Mem, Op, as_words, decode, disassemble
from . import container

__all__ = ["Program", "ProgramFileError", "FORMAT_VERSION"]

MAGIC = b"VDLAPROG"
FORMAT_VERSION = 1


class ProgramFileError(ValueError):
    """A program file is not a vdla program, is from another version, truncated or corrupt."""


@dataclass
class Program:
    config: Config
    insns: np.ndarray  # (n, 2) uint64
    uops: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    #: Indices of LOAD UOP instructions whose dram_base is relative to the uop segment.
    uop_relocs: tuple[int, ...] = ()
    #: (byte address, bytes) of initial DRAM contents.
    data: tuple[tuple[int, bytes], ...] = ()
    name: str = "program"

    def __post_init__(self) -> None:
        self.insns = as_words(self.insns)
        self.uops = np.asarray(self.uops, dtype=np.uint32)
        if self.uop_relocs is None:
            self.uop_relocs = self.find_uop_loads()

    def __len__(self) -> int:
        return len(self.insns)

    @classmethod
    def from_words(cls, config: Config, insns, uops=None, name: str = "program", **kw) -> Program:
        """A Program whose every LOAD UOP addresses the uop segment (as `assemble` produces)."""
        prog = cls(config, insns, np.zeros(0, np.uint32) if uops is None else uops, (), name=name, **kw)
        prog.uop_relocs = prog.find_uop_loads()
        return prog

    def find_uop_loads(self) -> tuple[int, ...]:
        return tuple(
            i for i, insn in enumerate(decode(self.insns, self.config))
            if insn.opcode == Op.LOAD and insn.memory_type == Mem.UOP and insn.x_size
        )

    def disassemble(self) -> str:
        return disassemble(self.insns, self.config, self.uops if self.uops.size else None)

    def instructions(self) -> list:
        return decode(self.insns, self.config)

    # -- file format ---------------------------------------------------------------
    def to_bytes(self) -> bytes:
        header = {
            "name": self.name,
            "config": self.config.to_dict(),
            "insns": int(len(self.insns)),
            "uops": int(self.uops.size),
            "uop_relocs": [int(i) for i in self.uop_relocs],
            "data": [[int(a), len(b)] for a, b in self.data],
        }
        payload = (
            self.insns.astype("<u8").tobytes() + self.uops.astype("<u4").tobytes() + b"".join(b for _, b in self.data)
        )
        return container.pack(MAGIC, FORMAT_VERSION, header, payload)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "program") -> Program:
        header, payload = container.unpack(
            blob, magic=MAGIC, version=FORMAT_VERSION, what="vdla program", source=source,
            error=ProgramFileError, payload_size=_payload_size,
        )
        # the sizes were checked by _payload_size and the checksum by unpack; this is the
        # format's own field validation (a header that frames right but says nonsense)
        try:
            config = Config.from_dict(header["config"])
            n_insns, n_uops = int(header["insns"]), int(header["uops"])
            relocs = tuple(int(i) for i in header["uop_relocs"])
            segs = [(int(a), int(n)) for a, n in header["data"]]
            name = str(header.get("name", "program"))
        except (ValueError, KeyError, TypeError, ConfigError) as e:
            raise ProgramFileError(f"{source}: corrupt header: {e}") from None
        if not isinstance(header.get("name", ""), str):
            raise ProgramFileError(f"{source}: corrupt header: name {header['name']!r} is not a string")
        insns = np.frombuffer(payload, dtype="<u8", count=2 * n_insns).reshape(-1, 2).astype(np.uint64)
        off = n_insns * INSN_BYTES
        uops = np.frombuffer(payload, dtype="<u4", count=n_uops, offset=off).astype(np.uint32)
        off += n_uops * 4
        data = []
        for addr, n in segs:
            data.append((addr, bytes(payload[off : off + n])))
            off += n
        try:
            decoded = decode(insns, config)
        except ISAError as e:
            raise ProgramFileError(f"{source}: {e}") from None
        _check_relocs(decoded, relocs, n_uops, source)
        return cls(config, insns, uops, relocs, tuple(data), name)

    @classmethod
    def load(cls, path: str | Path) -> Program:
        return cls.from_bytes(Path(path).read_bytes(), str(path))


def _field(header: dict, key: str, low: int = 0) -> int:
    v = header[key]
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        raise ValueError(f"field {key!r} = {v!r} must be an integer >= {low}")
    return v


def _payload_size(header: dict) -> int:
    """The payload bytes a program header promises: instruction words, uop words, data segments.

    Checks the header field by field first (a CRC only proves the file is what was written):
    counts are integers (at least one instruction, no negative sizes), ``uop_relocs`` a list
    of instruction indices, ``data`` a list of [address, bytes] pairs that do not overlap."""
    n_insns, n_uops = _field(header, "insns", 1), _field(header, "uops")
    relocs, data = header["uop_relocs"], header["data"]
    if not isinstance(relocs, list):
        raise ValueError(f"field 'uop_relocs' must be a list, got {type(relocs).__name__}")
    for k, i in enumerate(relocs):
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n_insns:
            raise ValueError(f"uop_relocs[{k}] = {i!r} is not an instruction index (0..{n_insns - 1})")
    if len(set(relocs)) != len(relocs):
        raise ValueError("uop_relocs lists an instruction twice (it would be relocated twice)")
    if not isinstance(data, list):
        raise ValueError(f"field 'data' must be a list, got {type(data).__name__}")
    for k, seg in enumerate(data):
        if not (isinstance(seg, list) and len(seg) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                and x >= 0 for x in seg)):
            raise ValueError(f"data[{k}] = {seg!r} is not an [address, bytes] pair of integers >= 0")
    spans = sorted((a, a + n, k) for k, (a, n) in enumerate(data) if n)
    for (_, end, j), (a, _, k) in zip(spans, spans[1:]):
        if a < end:
            raise ValueError(f"data[{k}] at {a:#x} overlaps data[{j}] (which ends at {end:#x})")
    return n_insns * INSN_BYTES + n_uops * 4 + sum(n for _, n in data)


def _check_relocs(insns: list, relocs: tuple[int, ...], n_uops: int, source: str) -> None:
    """Each relocated instruction is a LOAD UOP whose range lies inside the program's uop segment."""
    for k, i in enumerate(relocs):
        x = insns[i]
        if x.opcode != Op.LOAD or x.memory_type != Mem.UOP:
            raise ProgramFileError(f"{source}: corrupt header: uop_relocs[{k}] = {i} names instruction {i} "
                                   f"({Op(x.opcode).name}), not a LOAD UOP")
        if x.x_size and x.y_size:
            last = x.dram_base + (x.y_size - 1) * x.x_stride + x.x_size
            if last > n_uops:
                raise ProgramFileError(f"{source}: instruction {i} (LOAD UOP, uop_relocs[{k}]) reads uops "
                                       f"[{x.dram_base}, {last}) but the program has {n_uops}")
