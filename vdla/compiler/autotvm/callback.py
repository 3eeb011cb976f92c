"""Tuner callbacks: :func:`log_to_file` (append each measurement as a JSON line) and
:func:`progress_bar` (tqdm: trials, best so far, trials/s, errors)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .record import encode

__all__ = ["log_to_file", "progress_bar", "format_score"]


def log_to_file(path: str | Path) -> Callable[..., None]:
    """Append every measured point to ``path`` (one JSON line each, flushed per batch)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def cb(tuner: Any, inputs: list[Any], results: list[Any]) -> None:
        with open(path, "a") as f:
            for inp, res in zip(inputs, results):
                f.write(encode(inp, res) + "\n")

    return cb


def format_score(task: Any, value: float) -> str:
    """A score in its unit: GFLOP/s (llvm) or FLOP/cycle (vdla)."""
    if task.kind == "vdla":
        return f"{value:.1f} FLOP/cycle"
    return f"{value / 1e9:.2f} GFLOP/s"


def progress_bar(total: int, prefix: str = "", file: Any = None) -> Callable[..., None]:
    """A tqdm bar of ``total`` trials showing the best so far, trials/s and errors."""
    from tqdm.auto import tqdm

    state: dict[str, Any] = {}

    def cb(tuner: Any, inputs: list[Any], results: list[Any]) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=total, desc=prefix or tuner.task.name, unit="trial", file=file,
                                      leave=True, dynamic_ncols=True)
        bar.update(len(inputs))
        rate = tuner.trials / max(1e-9, time.perf_counter() - tuner.started)
        bar.set_postfix_str(f"best {format_score(tuner.task, tuner.best_flops)}, {rate:.2f} trials/s, "
                            f"{tuner.errors} errors", refresh=True)
        if bar.n >= total:
            bar.close()

    return cb
