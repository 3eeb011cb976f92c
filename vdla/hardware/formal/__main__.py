"""``python -m vdla.hardware.formal [NAME ...] [--work DIR] [--quick]``: run the formal proofs, print a table.

The same as ``vdla formal`` (`vdla.hardware.formal.sby.select` and `prove_all`).
"""

from __future__ import annotations

import argparse
import sys

from .properties import PROOFS
from .sby import FormalError, prove_all, select


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdla.hardware.formal", description=__doc__)
    p.add_argument("names", nargs="*", help=f"proofs to run (default all: {', '.join(PROOFS)})")
    p.add_argument("--work", default="build/formal", help="folder for the SBY runs (default build/formal)")
    p.add_argument("--quick", action="store_true", help="only the quick subset")
    p.add_argument("--solver", default="boolector", help="SMT solver for smtbmc (boolector, z3)")
    args = p.parse_args(argv)
    try:
        names = select(args.names, args.quick)
    except FormalError as e:
        p.error(str(e))
    return prove_all(names, args.work, solver=args.solver)


if __name__ == "__main__":
    sys.exit(main())
