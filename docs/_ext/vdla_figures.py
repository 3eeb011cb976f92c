"""The gallery's scraper for figures a tutorial holds in a variable (docs/conf.py names it)."""

from __future__ import annotations

from typing import Any


def scrape(block: Any, block_vars: dict[str, Any], gallery_conf: dict[str, Any]) -> str:
    """Figures a tutorial keeps in a variable: `vdla.plot` returns matplotlib Figures that pyplot
    does not track, so the matplotlib scraper would miss them. Each is shown once, after the
    block that made it."""
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    shown = block_vars.setdefault("_vdla_shown", set())
    paths = []
    for value in list(block_vars["example_globals"].values()):
        if isinstance(value, Figure) and id(value) not in shown:
            shown.add(id(value))
            path = next(block_vars["image_path_iterator"])
            value.savefig(path)
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
