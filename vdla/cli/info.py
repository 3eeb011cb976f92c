"""``vdla info [--config NAME] [--isa]``: a configuration and the ISA field table (``--isa``: the reference page)."""

from __future__ import annotations

import argparse

from .. import isa
from ..config import preset

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla info``."""
    q = sub.add_parser("info", help="show a configuration and the ISA field table")
    q.add_argument("--config", default="default")
    q.add_argument("--isa", action="store_true", help="print the ISA reference page (markdown)")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Print the configuration's parameters and each instruction format's fields."""
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
