"""The `vdla` command: the jobs people run from a shell.

    vdla info [--config NAME] [--isa]       the configuration, the ISA field table (--isa: the reference page)
    vdla asm FILE.s -o prog.vdla            assemble text into a program file
    vdla disasm prog.vdla                   print a program file as assembly
    vdla run prog.vdla [--device fsim] [--json]   run a program file and print the report

Each subcommand is a small function over the Python API; errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import isa
from .config import ConfigError, preset

__all__ = ["main"]


def _info(args: argparse.Namespace) -> int:
    config = preset(args.config)
    if args.isa:
        print(isa.reference_markdown(config), end="")
        return 0
    rows = config.summary()
    width = max(len(k) for k, _ in rows)
    print(f"config {config.name}")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print("\ninstruction fields (bit:width)")
    lay = isa.layout(config)
    for name, fmt in list(lay.formats.items()) + [("uop", lay.uop)]:
        print(f"  {name:<7}" + " ".join(f"{s.name}@{s.bit}:{s.width}" for s in fmt.slots))
    return 0


def _asm(args: argparse.Namespace) -> int:
    from .runtime import Program

    config = preset(args.config)
    words, uops = isa.assemble(Path(args.file).read_text(), config)
    prog = Program.from_words(config, words, uops, name=Path(args.file).stem)
    out = args.output or str(Path(args.file).with_suffix(".vdla"))
    prog.save(out)
    print(f"{out}: {len(prog)} instructions, {prog.uops.size} uops")
    return 0


def _disasm(args: argparse.Namespace) -> int:
    from .runtime import Program

    print(Program.load(args.file).disassemble(), end="")
    return 0


def _run(args: argparse.Namespace) -> int:
    from .runtime import Device, Program

    prog = Program.load(args.file)
    dev = Device(args.device, config=prog.config)
    report = dev.run(prog, strict=not args.lenient)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="vdla", description="VDLA accelerator co-design kit")
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("info", help="show a configuration and the ISA field table")
    q.add_argument("--config", default="default")
    q.add_argument("--isa", action="store_true", help="print the ISA reference page (markdown)")
    q.set_defaults(fn=_info)
    q = sub.add_parser("asm", help="assemble a text program into a program file")
    q.add_argument("file")
    q.add_argument("-o", "--output")
    q.add_argument("--config", default="default")
    q.set_defaults(fn=_asm)
    q = sub.add_parser("disasm", help="print a program file as assembly")
    q.add_argument("file")
    q.set_defaults(fn=_disasm)
    q = sub.add_parser("run", help="run a program file on a device")
    q.add_argument("file")
    q.add_argument("--device", default="fsim")
    q.add_argument("--json", action="store_true")
    q.add_argument("--lenient", action="store_true", help="report leftover tokens and races as warnings")
    q.set_defaults(fn=_run)
    args = p.parse_args(argv)
    from .runtime import DeviceError, ProgramFileError, StreamError
    from .simulator import SimulatorError

    try:
        return args.fn(args)
    except (OSError, ConfigError, isa.ISAError, ProgramFileError, DeviceError, StreamError, SimulatorError) as e:
        print(f"vdla {args.cmd}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
