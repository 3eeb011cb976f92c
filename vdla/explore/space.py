"""The design space of a sweep: Config variations from the command line or a file.

    --vary block_in=8,16 --vary batch=1,2 --vary timing.gemm_latency=6,8

Each ``--vary NAME=V1,V2,...`` names a `Config` parameter (GEMM geometry, operand and
accumulator widths, buffer sizes, bus width, queue depths) or a ``timing.NAME`` cycle-model
parameter (pipeline depths, initiation intervals); values are integers, numbers, true/false
(the pipeline options: ``--vary operand_read_register=false,true``) or words.
The space is the cartesian product of the lists. A file (``--space FILE``, JSON or TOML)
holds the same as a mapping ``{"vary": {NAME: [V1, ...]}, "points": [{NAME: V, ...}, ...]}``:
``vary`` is crossed, ``points`` are added as they are.

A point is a dict of overrides on a base Config; `apply` makes the Config (a `ConfigError`
names a bad value; the sweep records it as that point's error).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from ..config import Config, ConfigError, Timing

__all__ = ["SpaceError", "parse_vary", "load_space", "expand", "apply", "label", "short_label", "short_name", "short_value",
           "PARAMETERS"]

#: Names a point may vary: every Config field but the name (and the nested timing) plus timing.NAME.
PARAMETERS: tuple[str, ...] = tuple(
    [f.name for f in dataclasses.fields(Config) if f.name not in ("name", "timing")]
    + [f"timing.{f.name}" for f in dataclasses.fields(Timing)]
)


class SpaceError(ValueError):
    """A malformed --vary item or space file; the message names it."""


def _value(text: str) -> Any:
    text = text.strip()
    if text.lower() in ("true", "false"):  # the pipeline options (operand_read_register=false,true)
        return text.lower() == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _check_name(name: str, where: str) -> None:
    if name not in PARAMETERS:
        raise SpaceError(f"{where}: unknown parameter {name!r}; vary one of {', '.join(PARAMETERS)}")


def parse_vary(items: list[str]) -> dict[str, list[Any]]:
    """``["block_in=8,16", "batch=1,2"]`` -> ``{"block_in": [8, 16], "batch": [1, 2]}``."""
    out: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise SpaceError(f"--vary {item!r}: expected NAME=V1,V2,... (e.g. block_in=8,16)")
        _check_name(name, f"--vary {item!r}")
        if name in out:
            raise SpaceError(f"--vary {item!r}: {name} is varied twice")
        out[name] = [_value(v) for v in values.split(",") if v.strip()]
    return out


def load_space(path: str | Path) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """(vary, points) from a JSON or TOML file (see the module doc)."""
    p = Path(path)
    text = p.read_text()
    try:
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as e:
        raise SpaceError(f"{p}: not valid {'TOML' if p.suffix == '.toml' else 'JSON'}: {e}") from None
    if not isinstance(data, dict) or not set(data) <= {"vary", "points"}:
        raise SpaceError(f"{p}: expected a mapping with 'vary' and/or 'points'")
    vary = data.get("vary", {})
    points = data.get("points", [])
    if not isinstance(vary, dict) or not all(isinstance(v, list) and v for v in vary.values()):
        raise SpaceError(f"{p}: 'vary' must map each parameter to a non-empty list of values")
    if not isinstance(points, list) or not all(isinstance(q, dict) for q in points):
        raise SpaceError(f"{p}: 'points' must be a list of {{parameter: value}} mappings")
    for name in vary:
        _check_name(name, f"{p} vary")
    for i, q in enumerate(points):
        for name in q:
            _check_name(name, f"{p} points[{i}]")
    return vary, points


def expand(vary: dict[str, list[Any]], points: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The cartesian product of ``vary``, then ``points``; duplicates dropped, order kept."""
    names = list(vary)
    out = [dict(zip(names, combo)) for combo in itertools.product(*(vary[n] for n in names))] if names else []
    out += [dict(q) for q in points or []]
    if not out:
        out = [{}]
    seen, unique = set(), []
    for q in out:
        key = json.dumps(q, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


def label(overrides: dict[str, Any]) -> str:
    """A short name for a point: ``block_in=8 batch=2`` (``base`` for no overrides)."""
    return " ".join(f"{k}={v}" for k, v in overrides.items()) or "base"


_SHORT = {"batch": "b", "block_in": "bi", "block_out": "bo", "bus_width": "bus", "acc_width": "accw",
          "inp_width": "inpw", "wgt_width": "wgtw", "out_width": "outw", "cmd_queue_depth": "cmdq",
          "dep_queue_depth": "depq", "clock_mhz": "MHz"}


def short_name(name: str) -> str:
    """A column header for a parameter: ``bi`` for block_in, ``wgt`` for wgt_buff_size, ``gemm_latency``."""
    if name.endswith("_buff_size"):
        return name[: -len("_buff_size")]
    return _SHORT.get(name, name.split(".", 1)[-1])


def short_value(name: str, value: Any) -> str:
    """Buffer sizes in KiB (``64K``), everything else as it is."""
    if name.endswith("_buff_size") and isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        return f"{value // 1024}K"
    return str(value)


def short_label(overrides: dict[str, Any]) -> str:
    """``bi=8 bo=16 wgt=64K``: a point's name on a plot."""
    return " ".join(f"{short_name(k)}={short_value(k, v)}" for k, v in overrides.items()) or "base"


def apply(base: Config, overrides: dict[str, Any]) -> Config:
    """``base`` with ``overrides``; raises `ConfigError` naming the bad parameter."""
    top = {k: v for k, v in overrides.items() if not k.startswith("timing.")}
    timing = {k.split(".", 1)[1]: v for k, v in overrides.items() if k.startswith("timing.")}
    for k in top:
        if k not in PARAMETERS:
            raise ConfigError(f"unknown config parameter {k!r}")
    t = base.timing.replace(**timing) if timing else base.timing
    name = base.name if not overrides else f"{base.name}+{label(overrides).replace(' ', '+')}"
    return base.replace(name=name, timing=t, **top)
