"""Pictures of a run, drawn with matplotlib (the ``plot`` extra): a roofline and a module timeline.

    from vdla import plot
    plot.job_plots(result, "plots/")        # a `vdla run MODEL` result -> roofline.png, timeline.png
    plot.roofline([plot.Point("conv1", ops, nbytes, seconds)], config, "roofline.png")
    plot.timeline([("my program", report.trace, report.cycles)], "timeline.png", clock_mhz=100)

`roofline`: operational intensity (int8 operations per DRAM byte) against performance
(GOPS), log-log, under the Config's two roofs: peak compute (``Config.peak_gops``) and
memory bandwidth (one bus word per cycle at the clock); one labelled marker per layer.
`tuning_curve`: each trial's score and the best so far, per tuner or sweep.
`timeline`: a Gantt chart of the load, compute and store modules, one bar per
instruction from the golden simulator's cycle-model trace (``Report.trace``: instruction,
module, start, end), runs laid end to end with their names; where the load bar overlaps
the compute bar, latency is hidden. ``vdla run MODEL --plot DIR`` writes both.

Figures are made with matplotlib's object API on the Agg canvas (no pyplot, no global
backend change), so plotting works headless and leaves a user's own matplotlib alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config

__all__ = ["Point", "PlotError", "roofline", "roofline_figure", "timeline", "timeline_figure", "tuning_curve",
           "tuning_curve_figure", "job_plots", "MODULE_COLOURS"]

#: One colour per module, the same in every figure.
MODULE_COLOURS = {"load": "#1f77b4", "compute": "#ff7f0e", "store": "#2ca02c"}


class PlotError(RuntimeError):
    """Nothing to plot, or matplotlib is missing (the message says which)."""


@dataclass(frozen=True)
class Point:
    """One kernel on the roofline: `ops` operations (2 per MAC) moving `nbytes` DRAM bytes in `seconds`."""

    label: str
    ops: float
    nbytes: float
    seconds: float
    group: str = ""  # points of a group share a marker and a legend entry

    @property
    def intensity(self) -> float:
        return self.ops / max(self.nbytes, 1.0)

    @property
    def gops(self) -> float:
        return self.ops / self.seconds / 1e9 if self.seconds > 0 else 0.0


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("plots need matplotlib: pip install 'vdla[plot]'") from None
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Software": None})  # no matplotlib version stamp: same inputs, same file
    return out


def roofline(points: Sequence[Point], config: Config, path: str | Path, *, title: str | None = None) -> Path:
    """The roofline of `points` under `config`'s compute and bandwidth roofs, written to `path` (PNG)."""
    return _save(roofline_figure(points, config, title=title), path)


def roofline_figure(points: Sequence[Point], config: Config, *, title: str | None = None) -> Any:
    """`roofline`'s matplotlib Figure (one Axes), for callers that add to it or save it their way."""
    pts = [p for p in points if p.ops > 0 and p.seconds > 0]
    if not pts:
        raise PlotError("roofline: no kernel with operations and a run time to plot")
    import numpy as np

    fig = _figure(8, 5.5)
    ax = fig.add_subplot()
    peak = config.peak_gops
    bw = config.bus_bytes * config.clock_mhz * 1e6 / 1e9  # GB/s: one bus word per cycle
    lo = min(min(p.intensity for p in pts) / 2, peak / bw / 4)
    hi = max(max(p.intensity for p in pts) * 2, peak / bw * 4)
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.plot(x, np.minimum(peak, bw * x), color="0.3", lw=2, label="roof")
    ax.axhline(peak, color="0.6", ls=":", lw=1)
    ax.text(hi, peak * 1.06, f"peak {peak:.3g} GOPS ({config.macs_per_cycle} MAC/cycle at {config.clock_mhz:g} MHz)",
            ha="right", va="bottom", fontsize=8, color="0.3")
    ax.text(lo * 1.15, bw * lo * 1.3, f"{bw:.3g} GB/s ({config.bus_width}-bit bus)", rotation=0, fontsize=8,
            color="0.3", va="bottom")
    groups = list(dict.fromkeys(p.group for p in pts))
    markers = "o^sDv<>"
    for gi, g in enumerate(groups):
        sel = [p for p in pts if p.group == g]
        ax.scatter([p.intensity for p in sel], [p.gops for p in sel], marker=markers[gi % len(markers)], s=36,
                   zorder=3, label=g or "kernels")
    label_all = len(pts) <= 40
    for p in pts:
        if label_all:
            ax.annotate(p.label, (p.intensity, p.gops), xytext=(4, 3), textcoords="offset points", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (int8 operations per DRAM byte)")
    ax.set_ylabel("performance (GOPS)")
    ax.set_title(title or f"roofline, config {config.name}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(start, width) bars, touching or overlapping intervals merged (fewer rectangles, same picture)."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e - s) for s, e in out]


def timeline(runs: Sequence[tuple[str, Sequence[tuple[int, str, int, int]], int]], path: str | Path, *,
             clock_mhz: float | None = None, title: str | None = None,
             modules: Sequence[str] = ("load", "compute", "store")) -> Path:
    """A Gantt chart of `runs` (name, trace, cycles) laid end to end: one row per module, one
    bar per instruction (``[start, end)`` in cycles), run boundaries marked and named."""
    return _save(timeline_figure(runs, clock_mhz=clock_mhz, title=title, modules=modules), path)


def timeline_figure(runs: Sequence[tuple[str, Sequence[tuple[int, str, int, int]], int]], *,
                    clock_mhz: float | None = None, title: str | None = None,
                    modules: Sequence[str] = ("load", "compute", "store")) -> Any:
    """`timeline`'s matplotlib Figure: one Axes, a BrokenBarHCollection per module (top row first)."""
    runs = [r for r in runs if r[2] > 0]
    if not runs:
        raise PlotError("timeline: no run with cycles to plot")
    fig = _figure(11, 3.2)
    ax = fig.add_subplot()
    offset = 0
    bars: dict[str, list[tuple[int, int]]] = {m: [] for m in modules}
    bounds = []
    for name, trace, cycles in runs:
        for _, mod, start, end in trace:
            if mod in bars and end > start:
                bars[mod].append((offset + start, offset + end))
        bounds.append((offset, name))
        offset += cycles
    for row, mod in enumerate(reversed(modules)):
        busy = _merged(bars[mod])
        ax.broken_barh(busy, (row - 0.38, 0.76), facecolors=MODULE_COLOURS.get(mod, "0.5"), linewidth=0)
        total = sum(w for _, w in busy)
        ax.text(offset * 1.005, row, f"{100 * total / offset:.0f}% busy", va="center", fontsize=8)
    ax.set_yticks(range(len(modules)), list(reversed(modules)))
    ax.set_ylim(-0.6, len(modules) - 0.4)
    ax.set_xlim(0, offset * 1.09)
    if len(runs) > 1:
        for x0, _name in bounds[1:]:
            ax.axvline(x0, color="0.5", lw=0.6, ls="--")
        if len(runs) <= 40:
            top = ax.secondary_xaxis("top")
            top.set_xticks([x0 + c / 2 for (x0, _), (_, _, c) in zip(bounds, runs)], [n for _, n in bounds],
                           rotation=60, fontsize=6, ha="left")
            top.tick_params(length=0)
    xlabel = "cycles"
    if clock_mhz:
        xlabel += f" ({offset:,} cycles = {offset / clock_mhz / 1e3:.3g} ms at {clock_mhz:g} MHz)"
    ax.set_xlabel(xlabel)
    ax.set_title(title or "module timeline (golden simulator cycle model)", fontsize=10)
    return fig


def tuning_curve_figure(series: dict[str, Sequence[float]], *, ylabel: str = "GOPS", title: str | None = None) -> Any:
    """Per series (a tuner, a design point ...): every trial's score as a dot and the best so far
    as a line, against the trial number (for auto-tuning logs and design-space sweeps)."""
    import numpy as np

    data = {k: np.asarray(v, float) for k, v in series.items() if len(v)}
    if not data:
        raise PlotError("tuning curve: no trials to plot")
    fig = _figure(8, 4.5)
    ax = fig.add_subplot()
    for name, ys in data.items():
        xs = np.arange(1, ys.size + 1)
        dots = ax.scatter(xs, ys, s=8, alpha=0.35)
        ax.step(xs, np.maximum.accumulate(ys), where="post", color=dots.get_facecolor()[0], alpha=1.0,
                label=f"{name}: best {ys.max():.3g}")
    ax.set_xlabel("trial")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "best found so far")
    ax.grid(True, alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def tuning_curve(series: dict[str, Sequence[float]], path: str | Path, *, ylabel: str = "GOPS",
                 title: str | None = None) -> Path:
    """`tuning_curve_figure` written to `path` (PNG)."""
    return _save(tuning_curve_figure(series, ylabel=ylabel, title=title), path)


def job_plots(result: Any, directory: str | Path) -> dict[str, Path]:
    """roofline.png and timeline.png of a `vdla run MODEL` result (`vdla.compiler.graph.report.JobResult`):
    one point and one timeline segment per VDLA layer."""
    d = Path(directory)
    layers = [r for r in result.layers if r.target == "vdla" and r.cycles]
    if not layers:
        raise PlotError(f"{result.model}: no layer ran on VDLA, nothing to plot")
    cfg = result.config
    pts = [Point(r.node, 2.0 * r.macs, r.bytes_moved, r.seconds, "VDLA layers") for r in layers]
    out = {"roofline": roofline(pts, cfg, d / "roofline.png", title=f"{result.description}: roofline on {result.device}")}
    runs = [(r.node, result.traces.get(r.node, []), int(r.cycles)) for r in layers]
    if any(t for _, t, _ in runs):
        out["timeline"] = timeline(runs, d / "timeline.png", clock_mhz=cfg.clock_mhz,
                                   title=f"{result.description}: load / compute / store per layer on {result.device}")
    return out
