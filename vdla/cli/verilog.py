"""``vdla verilog [--config NAME] [--top axi|core] [-o FILE] [--lint]``: the core as Verilog.

Writes FILE (default ``vdla_axi_top.v`` / ``vdla_core.v``) and beside it FILE.md (the port
list and the register map) and FILE.vlt (the Verilator lint waivers), all from
`vdla.hardware.verilog`; ``--lint`` then runs ``verilator --lint-only -Wall`` on them.
"""

from __future__ import annotations

import argparse

from .. import progress
from ..config import preset
from .errors import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla verilog``."""
    q = sub.add_parser("verilog", help="write the core as Verilog, with its port list and register map beside it")
    q.add_argument("--config", default="default", help="configuration preset or JSON file (default: default)")
    # No `choices=`: the tops are `vdla.hardware.verilog.TOPS`, imported (with Amaranth) only when the command runs.
    q.add_argument("--top", default="axi",
                   help="axi: core + AXI4 master + AXI4-Lite registers (default); core: the bare core")
    q.add_argument("-o", "--output", help="Verilog file (default: the module name + .v)")
    q.add_argument("--lint", action="store_true", help="then run verilator --lint-only -Wall on it (sim extra)")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Write the Verilog, its interface page and its lint waivers; lint them with ``--lint``."""
    from ..hardware.verilog import TOPS, write

    config = preset(args.config)
    if args.top not in TOPS:
        raise CommandError(f"unknown top {args.top!r}; choose one of {', '.join(TOPS)}")
    module = TOPS[args.top][0]
    out = args.output or f"{module}.v"
    with progress.phase(f"verilog: {module} for config {config.name} (Amaranth -> Yosys)"):
        paths = write(config, args.top, out)  # a VerilogError goes to vdla.cli.errors.report
    text = paths["verilog"].read_text()
    print(f"{paths['verilog']}: module {module}, config {config.name}, {text.count(chr(10))} lines")
    print(f"{paths['interface']}: port list and register map")
    print(f"{paths['waivers']}: Verilator lint waivers for the generated code")
    if args.lint:
        from ..simulator.rtl.verilator import lint

        lint(paths["verilog"], paths["waivers"])
        print(f"verilator --lint-only -Wall {paths['waivers']} {paths['verilog']}: clean")
    return 0
