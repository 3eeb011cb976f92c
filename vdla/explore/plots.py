"""Pareto plots of a sweep: latency against LUTs, DSPs and block RAMs, the front marked.

`pareto_png(result, path)` writes one PNG with a panel per resource (matplotlib, Agg: no
display needed). Points that overflow the part or fail are left out; the front (no other
point is both smaller and faster) is drawn as a step line through its points.
"""

from __future__ import annotations

from pathlib import Path

from .space import short_label
from .sweep import SweepResult, pareto

__all__ = ["pareto_png", "RESOURCES"]

RESOURCES = ("LUT", "DSP", "BRAM")


def pareto_png(result: SweepResult, path: str | Path) -> Path:
    """Write the plot to ``path``; returns it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [p for p in result.points if p.get("status") == "ok"]
    fig, axes = plt.subplots(1, len(RESOURCES), figsize=(5 * len(RESOURCES), 4.2), sharey=True)
    o = result.options
    for ax, res in zip(axes, RESOURCES):
        xs = [p["resources"]["used"][res] for p in ok]
        ys = [p["latency_ms"] for p in ok]
        ax.scatter(xs, ys, s=28, color="tab:blue", alpha=0.7, label="points")
        front = pareto(result.points, res)
        if front:
            fx = [p["resources"]["used"][res] for p in front]
            fy = [p["latency_ms"] for p in front]
            ax.step(fx, fy, where="post", color="tab:red", linewidth=1.2)
            ax.scatter(fx, fy, s=60, facecolors="none", edgecolors="tab:red", label="Pareto front")
            for p in front:
                ax.annotate(short_label(p["overrides"]), (p["resources"]["used"][res], p["latency_ms"]), fontsize=7,
                            xytext=(4, 4), textcoords="offset points")
        if ok:
            avail = ok[0]["resources"]["available"][res]
            ax.axvline(avail, color="grey", linestyle="--", linewidth=0.8, label=f"{res} on the part ({avail})")
        ax.set_xlabel(f"{res} used")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"{o.model}{' reduced' if o.reduced else ''} VDLA latency (ms)")
    src = "synthesis" if o.synth else "estimate"
    fig.suptitle(f"vdla sweep on {o.board}: latency vs resources ({src}), {len(ok)} of {len(result.points)} points")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
