"""The report's text timeline shades each module by how busy it was."""

from __future__ import annotations

from vdla.config import Config
from vdla.simulator import ModuleStats, Report


def _report(trace, cycles=100):
    mods = {n: ModuleStats(n) for n in ("load", "compute", "store")}
    return Report(Config(), cycles, mods, {}, len(trace), trace)


def test_timeline_marks_busy_columns_only():
    r = _report([(0, "load", 0, 50), (1, "compute", 50, 100)])
    rows = r.timeline(width=10).splitlines()
    assert rows[0] == "load    |#####     |"
    assert rows[1] == "compute |     #####|"
    assert rows[2] == "store   |          |"
    assert rows[3].rstrip().endswith("100")


def test_timeline_partial_columns():
    r = _report([(0, "load", 0, 1), (1, "load", 4, 6), (2, "load", 8, 12)], cycles=40)
    load = r.timeline(width=10).splitlines()[0]
    assert load == "load    |.:#       |"  # 1/4, 2/4 and 4/4 of the first three columns


def test_timeline_of_an_empty_report_is_empty():
    assert _report([], cycles=0).timeline() == ""
