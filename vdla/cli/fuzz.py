"""``vdla fuzz``: the differential fuzz campaign, random programs on an RTL device against the golden simulator.

    vdla fuzz --device pysim --configs small --count 100 --invalid 100 --jobs 4

``python -m vdla.fuzz`` is this command (`vdla.fuzz.__main__`); the campaign itself is
`vdla.fuzz.campaign.run`. Exit status 1 if any case failed, 2 for an argument it cannot run
with (`vdla.cli.errors`).
"""

from __future__ import annotations

import argparse
import os

from ..fuzz import campaign

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla fuzz``."""
    q = sub.add_parser("fuzz", help="differential fuzz: random valid and invalid programs on a device vs the golden "
                                    "simulator (as python -m vdla.fuzz)",
                       description=campaign.__doc__.splitlines()[0])
    q.add_argument("--device", default="verilator", help="device under test (verilator, pysim)")
    q.add_argument("--configs", default="small,default", help="comma-separated presets, alternated")
    q.add_argument("--count", type=int, default=10_000, help="programs in all")
    q.add_argument("--seed", type=int, default=0, help="first seed")
    q.add_argument("--invalid", type=int, default=10_000, help="mutated invalid programs besides the valid ones")
    q.add_argument("--validate-all", action="store_true",
                   help="validate every invalid program on the device too (default: the mutations an RTL core "
                        "checks itself run on it unvalidated)")
    q.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Run the campaign (a `vdla.fuzz.campaign.FuzzError` goes to `vdla.cli.errors.report`)."""
    return campaign.run(args)
