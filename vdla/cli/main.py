"""The top-level `vdla` parser: it registers every command module and runs the chosen one.

`main(argv)` builds the parser (``--debug``, ``--version``, then each module's
``add_parser``, in the order `COMMANDS` lists them), runs the command's ``fn`` with ``-q``
in force for that call only and vdla's own warnings as one ``vdla CMD: warning: ...`` line
each (`vdla.cli.common.one_line_warnings`), and turns every error into one line and exit
status 2 (`vdla.cli.errors.report`; ``--debug`` prints the traceback).
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from .. import __version__
from ..progress import quiet
from . import asm, build, formal, fuzz, info, run, sweep, synth, tune, verilog
from .common import one_line_warnings
from .errors import Parser, report

__all__ = ["COMMANDS", "build_parser", "main"]

#: The command modules, in the order ``vdla --help`` lists them (asm registers asm and disasm).
COMMANDS: tuple[ModuleType, ...] = (info, asm, run, build, synth, verilog, tune, sweep, fuzz, formal)


def build_parser() -> Parser:
    """The `vdla` argument parser with every command registered."""
    p = Parser(prog="vdla", description="VDLA accelerator co-design kit")
    p.add_argument("--debug", action="store_true", help="print the traceback of an error")
    p.add_argument("--version", action="version", version=f"vdla {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    for q in sub.choices.values():  # `vdla run --debug ...` as well as `vdla --debug run ...`
        q.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="print the traceback of an error")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``vdla ARGV`` (default: the command line); returns the exit status."""
    args = build_parser().parse_args(argv)
    # -q for this command only: main() is also called in-process (tests, scripts), and a later
    # call without -q must show progress again
    with quiet(bool(getattr(args, "quiet", False))), one_line_warnings(args.cmd):
        try:
            return args.fn(args)
        except (Exception, KeyboardInterrupt) as e:  # every error: one line, exit status 2 (vdla.cli.errors)
            return report(args.cmd, e, args.debug)


if __name__ == "__main__":
    sys.exit(main())
