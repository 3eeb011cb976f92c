"""The documentation site builds with no warning (``sphinx-build -W``, as ``nox -s docs`` does).

The build runs on a copy of docs/ (Sphinx writes the API stubs and the gallery's pages into
its source folder) and without executing the tutorials (``-D plot_gallery=0``): the tutorials
run in tests/test_docs_tutorials.py, and ``nox -s docs`` builds the site with their output.
A broken reference between pages or to an API object is a warning, so this is also the check
of the internal links."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest
from support import REPO

DOCS = REPO / "docs"
MISSING = [m for m in ("sphinx", "myst_parser", "sphinx_gallery", "furo") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"the docs extra is not installed ({', '.join(MISSING)} missing): pip install -e '.[docs]'")

#: what the build makes inside docs/ (ignored by git); a copy leaves them out
GENERATED = ("_build", "gallery", "generated", "__pycache__", "sg_execution_times.rst")


def test_site_builds_without_warnings(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns(*GENERATED))
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-D", "plot_gallery=0",
           "-d", str(tmp_path / "doctrees"), str(src), str(out)]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"sphinx-build failed:\n{run.stderr[-6000:]}"
    for page in ("index", "install", "guide/index", "guide/cocotb", "guide/models", "timing_closure", "isa",
                 "coming_from_tvm", "bench_cpu_models", "gallery/index", "gallery/tensorize", "api/index",
                 "api/generated/vdla.runtime", "api/generated/vdla.cocotb_kit", "api/generated/vdla.hardware.gemm"):
        assert (out / f"{page}.html").is_file(), page
    # the API pages hold the objects' descriptions, not just a title
    runtime = (out / "api" / "generated" / "vdla.runtime.html").read_text()
    assert 'id="vdla.runtime.CommandStream"' in runtime and 'id="vdla.runtime.Device"' in runtime


def test_every_page_is_markdown_or_generated():
    """docs/ holds Markdown pages, the tutorials and the two reST files Sphinx needs (the API
    index and the gallery's header): a stray .rst would be built but edited by nobody."""
    rst = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.rst")
                 if not set(p.relative_to(DOCS).parts) & set(GENERATED))
    assert rst == ["_templates/autosummary/module.rst", "api/index.rst", "tutorials/GALLERY_HEADER.rst"], rst
