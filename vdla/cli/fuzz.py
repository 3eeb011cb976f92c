"""``vdla fuzz``: the differential fuzz campaign, random programs on an RTL device against the golden simulator.

    vdla fuzz --device pysim --configs small --count 100 --invalid 100 --jobs 4

The same options and output as ``python -m vdla.fuzz`` (`vdla.fuzz.campaign`: its
`add_arguments` and `run`); exit status 1 if any case failed, 2 for an argument it cannot
run with (`vdla.cli.errors`).
"""

from __future__ import annotations

import argparse

from ..fuzz import campaign

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla fuzz``."""
    q = sub.add_parser("fuzz", help="differential fuzz: random valid and invalid programs on a device vs the golden "
                                    "simulator (as python -m vdla.fuzz)",
                       description=campaign.__doc__.splitlines()[0])
    campaign.add_arguments(q)
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Run the campaign (a `vdla.fuzz.campaign.FuzzError` goes to `vdla.cli.errors.report`)."""
    return campaign.run(args)
