"""Tuning logs: one JSON object per line, one measurement per line; and ``apply_history_best``.

A line::

    {"format": 1, "vdla": "0.1.0", "task": "conv2d_packed.vdla", "args": [...], "target": "vdla",
     "workload": [...], "config": {"index": 374, "knobs": {...}, "kinds": {...}},
     "result": {"costs": [575855.0], "unit": "cycles", "error_no": 0, "error": "", "all_cost": 0.4,
                "timestamp": 1790000000.0}}

Reading is forgiving and says what it skipped: a line that is not a record is a warning
naming the file and line (the rest is used); records of another target (when one is asked
for), of another log format or another vdla minor version, or of an unknown template are
skipped with one warning per reason naming the file. Appending to a log and reading it back
is how a tuning run resumes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .dispatch import DispatchContext, workload_key
from .measure import MeasureInput, MeasureResult
from .space import ConfigEntity
from .task import Task, TaskError, backend_of, create, target_kind

__all__ = ["encode", "decode", "load_from_file", "save_to_file", "ApplyHistoryBest", "apply_history_best",
           "pick_best", "FORMAT"]

FORMAT = 1


def _version() -> str:
    from ... import __version__

    return __version__


def encode(inp: MeasureInput, res: MeasureResult) -> str:
    """One record as a JSON line (no newline)."""
    t = inp.task
    return json.dumps({
        "format": FORMAT, "vdla": _version(), "task": t.name, "args": t.args, "target": t.target,
        "workload": t.workload, "config": inp.config.to_json_dict(),
        "result": {"costs": list(res.costs), "unit": res.unit, "error_no": int(res.error_no), "error": res.error_msg,
                   "all_cost": res.all_cost, "timestamp": res.timestamp},
    })


def decode_raw(line: str) -> dict[str, Any]:
    """The record's fields, checked; ValueError says what is wrong."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    for k in ("task", "args", "target", "config", "result"):
        if k not in d:
            raise ValueError(f"no {k!r} field")
    if not isinstance(d["config"], dict) or "knobs" not in d["config"]:
        raise ValueError("'config' has no 'knobs'")
    if not isinstance(d["result"], dict) or "error_no" not in d["result"]:
        raise ValueError("'result' has no 'error_no'")
    return d


def _result(d: dict[str, Any]) -> MeasureResult:
    r = d["result"]
    return MeasureResult([float(c) for c in r.get("costs", [])], int(r["error_no"]), float(r.get("all_cost", 0.0)),
                         float(r.get("timestamp", 0.0)), str(r.get("error", "")), str(r.get("unit", "s")))


_TASKS: dict[str, Task] = {}


def decode(d: dict[str, Any]) -> tuple[MeasureInput, MeasureResult]:
    """A raw record -> (MeasureInput with its Task, MeasureResult)."""
    key = json.dumps([d["task"], d["args"], d["target"]])
    task = _TASKS.get(key)
    if task is None:
        task = _TASKS[key] = create(d["task"], d["args"], d["target"])
    cfg = ConfigEntity.from_json_dict(d["config"], task.config_space)
    return MeasureInput(task, cfg), _result(d)


def _compatible(d: dict[str, Any]) -> str | None:
    if d.get("format") != FORMAT:
        return f"log format {d.get('format')!r} (this vdla reads {FORMAT})"
    mine, theirs = _version().split(".")[:2], str(d.get("vdla", "")).split(".")[:2]
    if mine != theirs:
        return f"vdla {d.get('vdla')!r} (this is {_version()})"
    return None


def _raw_records(path: str | Path, target: str | None = None) -> Iterator[dict[str, Any]]:
    """The usable raw records of a log, warning once per reason what it skips."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"tuning log {str(path)!r} does not exist")
    skipped: dict[str, int] = {}
    kind = target_kind(target) if target is not None else None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = decode_raw(line)
            except ValueError as e:
                warnings.warn(f"{path}:{n}: skipped a corrupted record: {e}", stacklevel=3)
                continue
            why = _compatible(d)
            if why is None and kind is not None and backend_of(d["target"]) != kind:
                why = f"target {d['target']!r} (not {kind!r})"
            if why is not None:
                skipped[why] = skipped.get(why, 0) + 1
                continue
            yield d
    for why, count in skipped.items():
        warnings.warn(f"{path}: skipped {count} record(s) of {why}", stacklevel=3)


def load_from_file(path: str | Path, target: str | None = None) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """(MeasureInput, MeasureResult) of every usable record (see the module doc for what is skipped)."""
    unknown: dict[str, int] = {}
    for d in _raw_records(path, target):
        try:
            yield decode(d)
        except (TaskError, KeyError, ValueError, IndexError) as e:
            unknown[str(e)] = unknown.get(str(e), 0) + 1
    for why, count in unknown.items():
        warnings.warn(f"{path}: skipped {count} record(s): {why}", stacklevel=2)


def save_to_file(records: Iterable[tuple[MeasureInput, MeasureResult]], path: str | Path) -> None:
    with open(path, "a") as f:
        for inp, res in records:
            f.write(encode(inp, res) + "\n")


def pick_best(path: str | Path, out: str | Path) -> int:
    """Write the best record of each workload to ``out``; returns how many."""
    best: dict[str, tuple[float, str]] = {}
    for d in _raw_records(path):
        r = _result(d)
        if r.ok and r.costs:
            k = workload_key([backend_of(d["target"]), d.get("workload")])
            if k not in best or r.cost < best[k][0]:
                best[k] = (r.cost, json.dumps(d))
    Path(out).write_text("".join(line + "\n" for _, line in best.values()))
    return len(best)


class ApplyHistoryBest(DispatchContext):
    """The best (lowest cost) valid record of each workload, for the schedules that consult it."""

    def __init__(self, records: str | Path | Iterable[Any], target: str | None = None) -> None:
        self.best: dict[str, tuple[float, ConfigEntity]] = {}
        if isinstance(records, str | Path):
            raws: Iterable[dict[str, Any]] = list(_raw_records(records, target))
        else:
            raws = [json.loads(encode(i, r)) for i, r in records]
        for d in raws:
            r = _result(d)
            if not r.ok or not r.costs:
                continue
            k = workload_key([backend_of(d["target"]), d.get("workload")])
            if k not in self.best or r.cost < self.best[k][0]:
                cfg = ConfigEntity.from_json_dict(d["config"])
                self.best[k] = (r.cost, cfg)

    def query(self, target: str, workload: Any) -> ConfigEntity | None:
        got = self.best.get(workload_key([backend_of(target), workload]))
        return got[1] if got is not None else None

    def __len__(self) -> int:
        return len(self.best)


def apply_history_best(log: str | Path | Iterable[Any], target: str | None = None) -> ApplyHistoryBest:
    """``with autotvm.apply_history_best("tune.log"):`` builds use the best tuned configs."""
    return ApplyHistoryBest(log, target)
