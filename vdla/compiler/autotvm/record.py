"""Tuning logs: one JSON object per line, one measurement per line; and ``apply_history_best``.

A line::

    {"format": 1, "vdla": "0.1.0", "task": "conv2d_packed.vdla", "args": [...], "target": "vdla",
     "workload": [...], "config": {"index": 374, "knobs": {...}, "kinds": {...}},
     "result": {"costs": [575855.0], "unit": "cycles", "error_no": 0, "error": "", "all_cost": 0.4,
                "timestamp": 1790000000.0}}

A record of an ``llvm`` target also says which CPU measured it: ``"host": {"cpu": "znver3",
"features": ["+avx", "+avx2", "+fma", ...]}`` (:func:`host_record`: the CPU's name and its
enabled instruction-set features that change LLVM's code). Applying a log
(:func:`apply_history_best`) whose llvm records were measured on a CPU with other features
uses their schedules and says so once (a :class:`HostMismatchWarning` naming both CPUs and
the features that differ): their timings may not carry over. Another CPU name with the same
features says nothing; a record without ``"host"`` (an older log) is used silently.

Reading is forgiving and says what it skipped: a line that is not a record is a warning
naming the file and line (the rest is used); records of another target (when one is asked
for), of another log format or another vdla minor version, or of an unknown template are
skipped with one warning per reason naming the file. Appending to a log and reading it back
is how a tuning run resumes.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .dispatch import DispatchContext, workload_key
from .measure import MeasureInput, MeasureResult
from .space import ConfigEntity
from .task import Task, TaskError, backend_of, create, target_kind

__all__ = ["encode", "decode", "load_from_file", "save_to_file", "ApplyHistoryBest", "apply_history_best",
           "pick_best", "host_record", "host_mismatch", "HostMismatchWarning", "FORMAT"]

FORMAT = 1


class HostMismatchWarning(UserWarning):
    """A tuning log's llvm records were measured on a CPU with other instruction-set features."""


#: the CPU features a record keeps: the instruction sets LLVM generates code for (x86 vector, bit
#: and crypto extensions; AArch64/ARM NEON, SVE, SME, dot products; POWER VSX; RISC-V V)
_ISA = re.compile(r"\+(sse|ssse3|avx|fma|f16c|amx|evex512|bmi|popcnt|lzcnt|movbe|adx|aes|vaes|pclmul|vpclmulqdq|gfni"
                  r"|sha|xop|neon|sve|sme|dotprod|i8mm|bf16|fullfp16|fp16|fp-armv8|crypto|lse|mve|vfp|vsx|altivec"
                  r"|power\d|v$|zv)")


def _isa(features: Iterable[str]) -> list[str]:
    """The enabled features of ``features`` (``"+avx2"`` ...) that change code generation, sorted;
    every enabled one on an architecture none of whose features :data:`_ISA` knows."""
    on = {f.strip() for f in features if f.strip().startswith("+")}
    known = {f for f in on if _ISA.match(f)}
    return sorted(known or on)


@functools.cache
def _host() -> tuple[str, tuple[str, ...]]:
    from ..targets.llvm.jit import host_info

    info = host_info()
    return info["cpu"], tuple(_isa(info["features"].split(",")))


def host_record() -> dict[str, Any]:
    """This machine as an llvm record names it: ``{"cpu": NAME, "features": ["+avx2", ...]}``."""
    cpu, feats = _host()
    return {"cpu": cpu, "features": list(feats)}


def _version() -> str:
    from ... import __version__

    return __version__


def encode(inp: MeasureInput, res: MeasureResult) -> str:
    """One record as a JSON line (no newline)."""
    t = inp.task
    d = {
        "format": FORMAT, "vdla": _version(), "task": t.name, "args": t.args, "target": t.target,
        "workload": t.workload, "config": inp.config.to_json_dict(),
        "result": {"costs": list(res.costs), "unit": res.unit, "error_no": int(res.error_no), "error": res.error_msg,
                   "all_cost": res.all_cost, "timestamp": res.timestamp},
    }
    if backend_of(t.target) == "llvm":  # measured on this CPU
        d["host"] = host_record()
    return json.dumps(d)


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


def _host_of(d: dict[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(CPU name, ISA features) of an llvm record; None for another target or a record without
    a well-formed ``"host"`` (an older log's)."""
    h = d.get("host")
    if not isinstance(h, dict) or backend_of(d.get("target")) != "llvm":
        return None
    feats = h.get("features")
    if not isinstance(feats, list) or not all(isinstance(f, str) for f in feats):
        return None
    return str(h.get("cpu", "?")), tuple(_isa(feats))


def _names(features: Iterable[str], most: int = 8) -> str:
    names = [f.lstrip("+") for f in sorted(features)]
    more = f", and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def host_mismatch(records: Iterable[dict[str, Any]], source: str = "this tuning history") -> str | None:
    """What to say when ``records`` (raw records) include llvm ones measured on a CPU whose ISA
    features differ from this one's (:func:`host_record`), naming both CPUs and the features that
    differ; None when they all match (or say nothing: other targets, older records)."""
    hosts = Counter(h for h in map(_host_of, records) if h is not None)
    if not hosts:
        return None
    mine = host_record()
    my_feats = set(_isa(mine["features"]))
    other = [h for h, _ in hosts.most_common() if set(h[1]) != my_feats]  # the most records' CPU first
    if not other:
        return None
    cpu, feats = other[0]
    theirs, ours = set(feats) - my_feats, my_feats - set(feats)
    their_side = _names(theirs) if theirs else f"without {_names(ours)}"
    our_side = "; ".join(([f"lacks {_names(theirs)}"] if theirs else []) + ([f"has {_names(ours)}"] if ours else []))
    also = f" (and {len(other) - 1} other CPU(s))" if len(other) > 1 else ""
    return (f"{source} was measured on {cpu} ({their_side}){also} but this CPU is {mine['cpu']} ({our_side}): "
            "its schedules are used, their timings may not carry over")


class ApplyHistoryBest(DispatchContext):
    """The best (lowest cost) valid record of each workload, for the schedules that consult it."""

    def __init__(self, records: str | Path | Iterable[Any] | None, target: str | None = None) -> None:
        self.best: dict[str, tuple[float, ConfigEntity]] = {}
        if records is None:  # TVM's: no log yet (a tutorial run before tuning), so no tuned configs
            raws: Iterable[dict[str, Any]] = []
        elif isinstance(records, str | Path):
            raws = list(_raw_records(records, target))
        else:
            raws = [json.loads(encode(i, r)) for i, r in records]
        why = host_mismatch(raws, f"tuning log {str(records)!r}" if isinstance(records, str | Path) else
                            "this tuning history")
        if why is not None:
            warnings.warn(why, HostMismatchWarning, stacklevel=3)
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

    def cost(self, target: str, workload: Any) -> float | None:
        got = self.best.get(workload_key([backend_of(target), workload]))
        return got[0] if got is not None else None

    def __len__(self) -> int:
        return len(self.best)


def apply_history_best(log: str | Path | Iterable[Any] | None, target: str | None = None) -> ApplyHistoryBest:
    """``with autotvm.apply_history_best("tune.log"):`` builds use the best tuned configs (None: no
    log, so every template builds its fallback)."""
    return ApplyHistoryBest(log, target)
