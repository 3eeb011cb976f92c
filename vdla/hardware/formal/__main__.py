"""``python -m vdla.hardware.formal [NAME ...] [--work DIR] [--quick]``: run the formal proofs, print a table."""

from __future__ import annotations

import argparse
import sys

from .properties import PROOFS
from .sby import prove


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vdla.hardware.formal", description=__doc__)
    p.add_argument("names", nargs="*", help=f"proofs to run (default all: {', '.join(PROOFS)})")
    p.add_argument("--work", default="build/formal", help="folder for the SBY runs (default build/formal)")
    p.add_argument("--quick", action="store_true", help="only the quick subset")
    p.add_argument("--solver", default="boolector", help="SMT solver for smtbmc (boolector, z3)")
    args = p.parse_args(argv)
    names = args.names or [n for n, pr in PROOFS.items() if pr.quick or not args.quick]
    unknown = [n for n in names if n not in PROOFS]
    if unknown:
        p.error(f"unknown proof(s) {', '.join(unknown)}; known: {', '.join(PROOFS)}")
    failed = 0
    for n in names:
        res = prove(n, args.work, solver=args.solver)
        print(res.summary(), flush=True)
        if not res.passed:
            failed += 1
            print("\n".join(res.log.splitlines()[-25:]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
