"""Progress on the steps a person waits for: one module decides when and how it is shown.

Every long step (model compilation, Verilator builds, synthesis and place-and-route,
fuzz campaigns) reports through here, on tqdm bars written to stderr::

    from vdla import progress
    for item in progress.bar(items, desc="compiling", unit="kernel"):
        ...
    with progress.phase("verilator: building small"):   # a step of unknown length:
        subprocess.run(...)                              # the line shows the elapsed time
    status = progress.status()                           # one updating line of text
    status("running layer 3/19")

Nothing is shown when stderr is not a terminal (logs and CI stay clean), after
`set_quiet` (the CLI's ``-q``), or with ``VDLA_PROGRESS=0`` in the environment;
``VDLA_PROGRESS=1`` forces it on (for tests and for terminals that do not say so).
Bars disappear when their step ends (``leave=False``): the result lines that follow
are what remains on the screen. This module is a leaf: any layer may import it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm import tqdm

__all__ = ["enabled", "set_quiet", "is_quiet", "quiet", "bar", "phase", "status", "close"]

T = TypeVar("T")
_QUIET = [False]
#: Seconds between redraws of a `phase` line (its elapsed time ticks while the tool runs).
TICK = 0.5


def set_quiet(flag: bool = True) -> None:
    """Silence (or allow again) all progress output of this process."""
    _QUIET[0] = bool(flag)


def is_quiet() -> bool:
    """Whether `set_quiet` (or a `quiet` block) silences progress now."""
    return _QUIET[0]


@contextlib.contextmanager
def quiet(flag: bool = True) -> Iterator[None]:
    """`set_quiet` for the block, restored afterwards."""
    saved = _QUIET[0]
    _QUIET[0] = bool(flag)
    try:
        yield
    finally:
        _QUIET[0] = saved


def enabled() -> bool:
    """True when progress is shown: not quiet, and stderr is a terminal (or ``VDLA_PROGRESS=1``)."""
    if _QUIET[0]:
        return False
    env = os.environ.get("VDLA_PROGRESS", "")
    if env == "0":
        return False
    if env == "1":
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def bar(iterable: Iterable[T] | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
        leave: bool = False) -> tqdm:
    """A tqdm bar on stderr (disabled, and then free, when `enabled` is false)."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, disable=not enabled(), file=sys.stderr,
                dynamic_ncols=True)


@contextlib.contextmanager
def phase(desc: str) -> Iterator[tqdm]:
    """A step of unknown length (an external tool): one line, ``desc: elapsed``, redrawn every
    `TICK` seconds by a background thread until the block ends."""
    t = tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed}", leave=False, disable=not enabled(),
             file=sys.stderr, dynamic_ncols=True)
    if t.disable:
        try:
            yield t
        finally:
            t.close()
        return
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK):
            t.refresh()

    th = threading.Thread(target=tick, name="vdla-progress", daemon=True)
    th.start()
    try:
        yield t
    finally:
        stop.set()
        th.join()
        t.close()


class _Status:
    """One line of text that each call replaces (the ``progress`` callbacks of the compiler)."""

    def __init__(self) -> None:
        self._bar = tqdm(total=None, bar_format="{desc}", leave=False, file=sys.stderr, dynamic_ncols=True)

    def __call__(self, message: str) -> None:
        self._bar.set_description_str(message)

    def close(self) -> None:
        self._bar.close()


def status() -> Callable[[str], None] | None:
    """A callback showing each message on one updating line, or None when progress is off
    (the compiler's ``progress=`` arguments take either). Call ``.close()`` when done."""
    return _Status() if enabled() else None


def close(reporter: Any) -> None:
    """Close what `status` returned (None is fine)."""
    if reporter is not None and hasattr(reporter, "close"):
        reporter.close()
