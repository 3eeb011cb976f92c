"""vdla.plot: the roofline and the module timeline, checked against the numbers they draw."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from vdla import plot  # noqa: E402
from vdla.config import preset  # noqa: E402
from vdla.runtime import Device  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _matmul_report():
    """A real golden-simulator run with overlapping modules: the README's blocked matmul, small."""
    import importlib.util

    from support import REPO

    spec = importlib.util.spec_from_file_location("blocked_matmul", REPO / "examples" / "blocked_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = preset("small")
    dev = Device("fsim", config=c, dram_size=1 << 20)
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    ab, wb = dev.array(mod.pack(a, c.batch, c.block_in)), dev.array(mod.pack(w, c.block_out, c.block_in))
    cb = dev.alloc(32 * 32)
    prog, _ = mod.matmul_program(c, ab, wb, cb, 32, 32, 64, 8, -128, 127)
    return c, dev.run(prog)


def test_roofline_draws_each_point_where_it_belongs(tmp_path):
    c = preset("default")
    pts = [plot.Point("conv_a", 2e8, 1e6, 1e-2), plot.Point("conv_b", 4e8, 1e5, 1e-2, "other")]
    fig = plot.roofline_figure(pts, c)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "operations per DRAM byte" in ax.get_xlabel() and "GOPS" in ax.get_ylabel()
    xy = np.vstack([coll.get_offsets() for coll in ax.collections])
    assert np.allclose(xy, [[200.0, 20.0], [4000.0, 40.0]])  # ops/byte, ops/s/1e9 computed by hand
    assert {t.get_text() for t in ax.texts} >= {"conv_a", "conv_b"}
    roof = ax.lines[0].get_ydata()
    assert roof.max() == pytest.approx(c.peak_gops)
    path = plot.roofline(pts, c, tmp_path / "r.png")
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 10_000
    assert plot.roofline(pts, c, tmp_path / "again.png").read_bytes() == data  # reproducible file
    with pytest.raises(plot.PlotError, match="no kernel"):
        plot.roofline([plot.Point("idle", 0, 1, 1)], c, tmp_path / "x.png")


def test_timeline_bars_are_the_union_of_the_trace(tmp_path):
    c, rep = _matmul_report()
    assert rep.trace
    fig = plot.timeline_figure([("matmul", rep.trace, rep.cycles), ("again", rep.trace, rep.cycles)],
                               clock_mhz=c.clock_mhz)
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["store", "compute", "load"]  # bottom to top
    assert len(ax.collections) == 3
    for mod in ["store", "compute", "load"]:
        busy = np.zeros(2 * rep.cycles, bool)  # independent: a mask over every cycle of both runs
        for off in (0, rep.cycles):
            for _, m, s, e in rep.trace:
                if m == mod:
                    busy[off + s : off + e] = True
        text = next(t.get_text() for t in ax.texts if t.get_position()[1] == rows.index(mod))
        assert text == f"{100 * busy.sum() / busy.size:.0f}% busy", mod
    assert f"{2 * rep.cycles:,} cycles" in ax.get_xlabel()
    assert plot.timeline([("m", rep.trace, rep.cycles)], tmp_path / "t.png").read_bytes()[:8] == PNG
    with pytest.raises(plot.PlotError, match="no run"):
        plot.timeline([("empty", [], 0)], tmp_path / "e.png")


def test_merged_intervals():
    assert plot._merged([(5, 9), (0, 3), (3, 4), (8, 12), (20, 21)]) == [(0, 4), (5, 7), (20, 1)]


def test_tuning_curve_steps_through_the_best_so_far(tmp_path):
    fig = plot.tuning_curve_figure({"xgb": [1.0, 3.0, 2.0, 5.0, 4.0], "random": [2.0, 1.0]})
    ax = fig.axes[0]
    steps = [line.get_ydata().tolist() for line in ax.lines]
    assert steps == [[1.0, 3.0, 3.0, 5.0, 5.0], [2.0, 2.0]]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["xgb: best 5", "random: best 2"]
    assert plot.tuning_curve({"x": [1, 2]}, tmp_path / "c.png").read_bytes()[:8] == PNG
    with pytest.raises(plot.PlotError, match="no trials"):
        plot.tuning_curve({"x": []}, tmp_path / "e.png")
