"""``vdla synth BOARD [BOARD ...] | all``: board bitstreams and reports into bitstreams/BOARD/ (YoWASP tools).

Builds each board with `vdla.hardware.boards.build` and prints one summary row per board
(``--json``: the reports). ``all`` skips the boards marked blocked (name one to try it);
a failed build prints its error and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla synth``."""
    q = sub.add_parser("synth", help="build board bitstreams and reports into bitstreams/ (yowasp tools)")
    q.add_argument("boards", nargs="+", metavar="BOARD", help="ulx3s-85f, ulx3s-45f, ulx3s-25f, icebreaker, or all")
    q.add_argument("--out", default="bitstreams", help="output folder (default bitstreams)")
    q.add_argument("--build-dir", default="build", help="scratch folder for the tools (default build)")
    q.add_argument("--json", action="store_true")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Build the named boards (or all) and print their summary."""
    from ..hardware.boards import BOARDS, board
    from ..hardware.boards.build import BuildError, build

    names = list(BOARDS) if args.boards == ["all"] else args.boards
    if args.boards == ["all"]:
        for n in [n for n in names if BOARDS[n].blocked]:
            print(f"vdla synth: skipping {n}: {BOARDS[n].blocked} (name it to try anyway)", file=sys.stderr)
        names = [n for n in names if not BOARDS[n].blocked]
    try:
        boards = [board(n) for n in names]
    except KeyError as e:
        raise CommandError(e.args[0]) from None
    reports = []
    for b in boards:
        try:
            reports.append(build(b, out_dir=args.out, build_dir=Path(args.build_dir) / b.name))
        except BuildError as e:
            print(f"vdla synth: {b.name}: error: {e}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    print(f"\n{'board':<12} {'config':<28} {'MACs dsp/lut':>12} {'clock':>7} {'fmax':>8} {'GOPS':>6}  bitstream")
    for r in reports:
        print(f"{r['board']:<12} {r['bitstream_name']:<28} {r['macs']['dsp']:>5}/{r['macs']['lut']:<6} "
              f"{r['clock']['core_mhz']:>5g}M {r['clock']['fmax_mhz']:>7.1f}M {r['peak_gops']['at_core_clock']:>6g}  "
              f"{args.out}/{r['board']}/{r['bitstream']['file']} ({r['bitstream']['bytes']} B)")
    return 0
