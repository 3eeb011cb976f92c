"""The top-level `vdla` parser: it registers every command module and runs the chosen one.

`main(argv)` builds the parser (``--debug``, ``--version``, then each module's
``add_parser``, in the order `COMMANDS` lists them; ``vdla --help`` lists them in the
`PERSONAS` groups), runs the command's ``fn`` with ``-q``
in force for that call only and vdla's own warnings as one ``vdla CMD: warning: ...`` line
each (`vdla.cli.common.one_line_warnings`), and turns every error into one line and exit
status 2 (`vdla.cli.errors.report`; ``--debug`` prints the traceback).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from types import ModuleType

from .. import __version__
from ..progress import quiet
from . import asm, build, formal, fuzz, info, run, sweep, synth, tune, verilog
from .common import one_line_warnings
from .errors import Parser, report

__all__ = ["COMMANDS", "PERSONAS", "build_parser", "main"]

#: The command modules, in the order they register (asm registers asm and disasm).
COMMANDS: tuple[ModuleType, ...] = (info, asm, run, build, synth, verilog, tune, sweep, fuzz, formal)

#: ``vdla --help``'s groups: who runs which command (every command in exactly one group).
PERSONAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("compile and run models on VDLA, the CPU or a GPU; tune them", ("run", "build", "tune")),
    ("write programs by hand: the configuration and the ISA", ("info", "asm", "disasm")),
    ("build the hardware: Verilog to simulate, bitstreams, design-space sweeps", ("verilog", "synth", "sweep")),
    ("verify the core: the RTL against the golden model, formal proofs", ("fuzz", "formal")),
)


def _grouped(helps: dict[str, str], width: int = 79) -> str:
    """The commands under their personas' headings, as argparse lays out options."""
    indent = max(map(len, helps)) + 4
    blocks = []
    for title, names in PERSONAS:
        lines = [f"{title}:"]
        for name in names:
            text = textwrap.wrap(helps[name], width - indent) or [""]
            lines.append(f"  {name:<{indent - 2}}{text[0]}")
            lines += [" " * indent + more for more in text[1:]]
        blocks.append("\n".join(lines))
    blocks.append("`vdla COMMAND --help` shows a command's options.")
    return "\n\n".join(blocks)


def build_parser() -> Parser:
    """The `vdla` argument parser with every command registered."""
    # Raw: the epilog's persona groups keep their layout (the description is one line)
    p = Parser(prog="vdla", description="VDLA accelerator co-design kit",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="print the traceback of an error")
    p.add_argument("--version", action="version", version=f"vdla {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                           help="one of the commands below, grouped by who runs them")
    for module in COMMANDS:
        module.add_parser(sub)
    for q in sub.choices.values():  # `vdla run --debug ...` as well as `vdla --debug run ...`
        q.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="print the traceback of an error")
    # argparse lists subcommands in one flat block (its pseudo-actions, no public hook to group
    # them): the epilog lists them by persona instead, with the help each module registered
    p.epilog = _grouped({a.dest: a.help for a in sub._choices_actions})
    sub._choices_actions.clear()
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
