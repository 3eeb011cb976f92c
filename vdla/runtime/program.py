"""Program: an instruction stream plus its micro-ops, ready to run on any Device.

LOAD UOP instructions in a Program address the program's own uop segment (in uops,
from 0); a Device places that segment in DRAM and relocates them at run time, so one
Program runs on any device. Data segments (optional) are initial DRAM contents at
fixed addresses, for stand-alone programs.

Programs save to one versioned binary file:

    magic "VDLAPROG" | u32 version | u32 header bytes | u32 CRC-32 of header+payload | JSON header | payload

The JSON header holds the Config and the sizes; the payload the instruction words,
the uop words and the data segments. Loading checks every part and says what is wrong.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import Config, ConfigError
from ..isa import INSN_BYTES, ISAError, Mem, Op, as_words, decode, disassemble

__all__ = ["Program", "ProgramFileError", "FORMAT_VERSION"]

MAGIC = b"VDLAPROG"
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct("<8sIII")


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
        head = json.dumps(header, sort_keys=True).encode()
        payload = (
            self.insns.astype("<u8").tobytes() + self.uops.astype("<u4").tobytes() + b"".join(b for _, b in self.data)
        )
        return _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(head), zlib.crc32(head + payload)) + head + payload

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "program") -> Program:
        if len(blob) < _PREAMBLE.size:
            raise ProgramFileError(f"{source}: truncated: {len(blob)} bytes, shorter than the {_PREAMBLE.size}-byte preamble")
        magic, version, head_len, crc = _PREAMBLE.unpack_from(blob)
        if magic != MAGIC:
            raise ProgramFileError(f"{source}: not a vdla program (starts with {magic!r}, expected {MAGIC!r})")
        if version != FORMAT_VERSION:
            raise ProgramFileError(
                f"{source}: program format version {version} is not supported (this vdla reads version {FORMAT_VERSION})"
            )
        start = _PREAMBLE.size + head_len
        if len(blob) < start:
            raise ProgramFileError(f"{source}: truncated inside the header ({len(blob)} of at least {start} bytes)")
        try:
            header = json.loads(blob[_PREAMBLE.size : start])
            config = Config.from_dict(header["config"])
            n_insns, n_uops = int(header["insns"]), int(header["uops"])
            relocs = tuple(int(i) for i in header["uop_relocs"])
            segs = [(int(a), int(n)) for a, n in header["data"]]
            name = str(header.get("name", "program"))
        except (ValueError, KeyError, TypeError, ConfigError) as e:
            raise ProgramFileError(f"{source}: corrupt header: {e}") from None
        expected = n_insns * INSN_BYTES + n_uops * 4 + sum(n for _, n in segs)
        payload = blob[start:]
        if len(payload) < expected:
            raise ProgramFileError(f"{source}: truncated: the header promises {expected} payload bytes, the file has {len(payload)}")
        if len(payload) > expected:
            raise ProgramFileError(f"{source}: {len(payload) - expected} unexpected bytes after the payload")
        if zlib.crc32(blob[_PREAMBLE.size :]) != crc:
            raise ProgramFileError(f"{source}: checksum mismatch: the header or payload is corrupt")
        insns = np.frombuffer(payload, dtype="<u8", count=2 * n_insns).reshape(-1, 2).astype(np.uint64)
        off = n_insns * INSN_BYTES
        uops = np.frombuffer(payload, dtype="<u4", count=n_uops, offset=off).astype(np.uint32)
        off += n_uops * 4
        data = []
        for addr, n in segs:
            data.append((addr, bytes(payload[off : off + n])))
            off += n
        try:
            decode(insns, config)
        except ISAError as e:
            raise ProgramFileError(f"{source}: {e}") from None
        return cls(config, insns, uops, relocs, tuple(data), name)

    @classmethod
    def load(cls, path: str | Path) -> Program:
        return cls.from_bytes(Path(path).read_bytes(), str(path))
