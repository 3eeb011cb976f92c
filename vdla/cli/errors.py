"""How the `vdla` command reports errors: one line on stderr and exit status 2.

Every command's errors take this one path: `vdla.cli.main` catches what a command raises
and hands it to `report`; a command that finds a usage error itself raises `CommandError`.

`Parser` is an ArgumentParser whose usage errors are one line (``vdla run: error: argument
--size: must be >= 1, got -3``); `count(option, low)` is the argparse type of sizes and
counts, naming the option. `report(cmd, err, debug)` prints an exception as one line
``vdla CMD: error: ...`` (a multi-line message, such as a deadlock's per-module list, is
joined with "; "); errors the package raises on purpose print their message, anything
else also its class, with a hint to rerun with ``--debug``, which prints the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

__all__ = ["Parser", "CommandError", "count", "report", "EXIT_ERROR"]

EXIT_ERROR = 2


class CommandError(Exception):
    """An error a command finds in its arguments or inputs; `report` prints its message as
    ``vdla CMD: error: MESSAGE`` (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``prog: error: message``, exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def count(option: str, low: int = 0) -> Callable[[str], int]:
    """An argparse ``type`` for an integer option that must be >= ``low``; errors name the option."""

    def parse(text: str) -> int:
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} takes an integer, got {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{option} must be >= {low}, got {v}")
        return v

    parse.__name__ = option
    return parse


def _is_ours(err: BaseException) -> bool:
    """An error vdla raises on purpose, whose message says what to fix."""
    mod = type(err).__module__ or ""
    return mod.startswith("vdla.") or isinstance(err, OSError | MemoryError)


def report(cmd: str, err: BaseException, debug: bool = False) -> int:
    """Print ``err`` for ``vdla CMD`` (one line; the traceback with ``debug``) and return the exit status."""
    if debug:
        traceback.print_exception(err)
    if isinstance(err, KeyboardInterrupt):
        print(f"vdla {cmd}: interrupted", file=sys.stderr)
        return 130
    text = "; ".join(line.strip() for line in str(err).splitlines() if line.strip()) or "(no message)"
    if isinstance(err, UnicodeDecodeError):
        text = f"not a text file ({err.reason} at byte {err.start})"
    elif not _is_ours(err):
        text = f"{type(err).__name__}: {text}" + ("" if debug else " (rerun with --debug for the traceback)")
    print(f"vdla {cmd}: error: {text}", file=sys.stderr)
    return EXIT_ERROR
