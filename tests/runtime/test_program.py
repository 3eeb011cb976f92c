"""Program files (vdla.runtime.program): round trip and corruption detected."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from vdla.config import PRESETS
from vdla.runtime import (
    AluOp,
    CommandStream,
    Loop,
    Mem,
    Program,
    ProgramFileError,
    Stage,
    UopKernel,
)

SMALL = PRESETS["small"]


L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


PAGE = 4096


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


def _preamble(blob: bytes):
    return struct.unpack_from("<8sIII", blob)


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
