"""``vdla asm FILE.s -o prog.vdla`` and ``vdla disasm prog.vdla``: assembly text to a program file and back."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import isa
from ..config import preset

__all__ = ["add_parser", "run", "run_disasm"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla asm`` and ``vdla disasm``."""
    q = sub.add_parser("asm", help="assemble a text program into a program file")
    q.add_argument("file")
    q.add_argument("-o", "--output")
    q.add_argument("--config", default="default")
    q.set_defaults(fn=run)
    q = sub.add_parser("disasm", help="print a program file as assembly")
    q.add_argument("file")
    q.set_defaults(fn=run_disasm)


def run(args: argparse.Namespace) -> int:
    """``vdla asm``: assemble FILE and save the program file (default FILE.vdla)."""
    from ..runtime import Program

    config = preset(args.config)
    try:
        text = Path(args.file).read_text()
    except UnicodeDecodeError as e:
        raise isa.ISAError(f"{args.file}: not a text file (byte {e.start} is not UTF-8): `vdla asm` reads "
                           "assembly text; `vdla disasm` reads program files") from None
    words, uops = isa.assemble(text, config)
    if not len(words):
        raise isa.ISAError(f"{args.file}: no instructions: a program needs at least a FINISH")
    prog = Program.from_words(config, words, uops, name=Path(args.file).stem)
    out = args.output or str(Path(args.file).with_suffix(".vdla"))
    prog.save(out)
    print(f"{out}: {len(prog)} instructions, {prog.uops.size} uops")
    return 0


def run_disasm(args: argparse.Namespace) -> int:
    """``vdla disasm``: print a program file as assembly."""
    from ..runtime import Program

    print(Program.load(args.file).disassemble(), end="")
    return 0
