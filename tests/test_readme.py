"""The README's examples must keep working: its Python snippet runs, its text program assembles."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
from support import REPO

from vdla import isa
from vdla.config import Config
from vdla.runtime import Device, Program

README = (REPO / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_python_snippet_runs_and_shifts_right():
    (code,) = [b for b in _blocks("python") if "CommandStream" in b]
    env: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "README.md", "exec"), env)
    x = np.arange(4 * env["c"].block_out, dtype=np.int32)
    assert np.array_equal(env["y"].read(np.int8), (x >> 2).astype(np.int8))
    assert env["report"].cycles > 0


def test_assembly_snippet_assembles_and_adds_five():
    (text,) = re.findall(r"```\n(LOAD memory_type=UOP.*?)```", README, flags=re.S)
    c = Config()
    words, uops = isa.assemble(text, c)
    dev = Device("fsim", config=c)
    dev.allocator.reserve(4096, 4096)  # the snippet stores to address 4096 * out_elem_bytes
    dev.run(Program.from_words(c, words, uops))
    out = dev.dram[4096 * c.out_elem_bytes : 4096 * c.out_elem_bytes + 4 * c.out_elem_bytes]
    assert np.array_equal(out.view(np.int8), np.full(4 * c.block_out, 5, np.int8))
