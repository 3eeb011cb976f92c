"""Sphinx configuration of vdla's documentation site (``nox -s docs``; ``nox -s docs_full``).

The Markdown pages are read by myst-parser, the tutorials in ``tutorials/`` become the
gallery (sphinx-gallery executes them while the site builds) and ``api/`` is generated from
the docstrings (autodoc + autosummary).

By default every tutorial runs at its small size: the cocotb tutorial stops before the
Verilator build and the bitstream tutorial reads the committed report instead of running
place-and-route. ``VDLA_DOCS_FULL=1`` runs them in full (the RTL under cocotb, the larger
tuning, a real board build: minutes).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # the checkout's vdla, also when it is not installed
sys.path.insert(0, str(DOCS / "_ext"))  # this site's helpers (the gallery's figure scraper)

import vdla  # noqa: E402

FULL = os.environ.get("VDLA_DOCS_FULL", "") not in ("", "0")
if FULL:
    os.environ.pop("VDLA_TUTORIAL_QUICK", None)
    os.environ["VDLA_TUTORIAL_FULL"] = "1"
else:
    os.environ["VDLA_TUTORIAL_QUICK"] = "1"  # the cocotb tutorial: golden simulator only
    os.environ.pop("VDLA_TUTORIAL_FULL", None)
os.environ.setdefault("VDLA_PROGRESS", "0")  # no progress bars in the build log
os.environ.setdefault("MPLBACKEND", "agg")
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")  # the tuning tutorial's local cluster, quietly

project = "vdla"
author = "the vdla authors"
copyright = "the vdla authors, Apache-2.0"  # noqa: A001  (Sphinx's name)
release = version = vdla.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_templates", "tutorials/GALLERY_HEADER.rst", "gallery/*.md", "gallery/*.ipynb"]
# The docstrings write names in single backquotes: resolve them as Python objects where they
# exist (nitpicky stays off, so a name that is not documented is plain code, not a warning).
default_role = "py:obj"

# Markdown (the pages in docs/, unchanged in place: isa.md and hardware_interface.md are
# generated, bench_cpu_models.md is written by its benchmark).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# API reference: one page per module, written into api/generated/ when the site builds.
autosummary_generate = True
autosummary_imported_members = False
templates_path = ["_templates"]
# Names a module re-exports that another API page documents already (one description each).
autosummary_context = {"reexported": {"vdla.hardware.fetch": "ErrorCode"}}
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"

# The gallery: docs/tutorials/*.py, each run top to bottom with its printed output and
# figures on the page.
sphinx_gallery_conf = {
    "examples_dirs": ["tutorials"],
    "gallery_dirs": ["gallery"],
    "filename_pattern": r"\.py$",  # execute every tutorial (the slow parts are gated by the variables above)
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "image_scrapers": ("matplotlib", "vdla_figures.scrape"),  # docs/_ext/vdla_figures.py
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    # A full build reruns tutorials whose source did not change (their last run was the small one).
    "run_stale_examples": FULL,
    "promote_jupyter_magic": False,
    "line_numbers": False,
    "capture_repr": (),
}

html_theme = "furo"
html_title = f"vdla {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
