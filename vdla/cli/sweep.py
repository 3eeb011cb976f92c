"""``vdla sweep``: explore Configs on a board part (resources, fmax, model cycles, latency).

    vdla sweep --board ulx3s-85f --vary block_out=8,16 --vary acc_buff_size=32768,65536 \\
               --model resnet18 --reduced --no-synth -o sweep.json --plot sweep.png
    vdla sweep --board ulx3s-45f --space space.toml --scheduler tcp://HOST:8786
    vdla sweep --calibration        the estimate against the committed bitstream reports

Prints a table (``--json``: the JSON document) and writes ``-o`` (JSON) and ``--plot`` (PNG,
latency vs LUT/DSP/BRAM with the Pareto front). Without ``--no-synth`` every point that fits
is synthesised, placed and routed (minutes each: give a ``--scheduler`` to spread them out).
Exit status: 0 when every point ran (overflowing points included), 1 when some failed.
The sweep itself is `vdla.explore`'s (`run_sweep`, its table, `pareto_png`; ``--calibration``:
`vdla.explore.estimate.calibration_table`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla sweep``."""
    q = sub.add_parser("sweep", help="design-space sweep: Configs x (resources, fmax, model cycles) on a board part")
    q.add_argument("--board", default="ulx3s-85f", help="board part (ulx3s-85f, ulx3s-45f, ulx3s-25f, icebreaker)")
    q.add_argument("--config", default=None, help="base Config (preset or JSON file; default: the board's)")
    q.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2",
                   help="a Config (or timing.NAME) parameter and its values; repeat to cross")
    q.add_argument("--space", default=None, help="JSON/TOML file: {vary: {NAME: [..]}, points: [{..}]}")
    q.add_argument("--model", default="resnet18", help="model run on the cycle model (default resnet18)")
    q.add_argument("--reduced", action="store_true", help="the model's reduced size (fast)")
    q.add_argument("--size", type=int, default=None, help="input height/width of the model")
    q.add_argument("--no-synth", action="store_true", help="resources and fmax from the analytic estimate")
    q.add_argument("--no-check", action="store_true", help="skip the per-node bit-exact check")
    q.add_argument("--scheduler", default=None, help="Dask scheduler address (default: VDLA_SCHEDULER or a local cluster)")
    q.add_argument("--workers", type=int, default=None, help="local cluster workers (default: one per core)")
    q.add_argument("--cache", default=".vdla-cache/sweep", help="result cache folder (default .vdla-cache/sweep)")
    q.add_argument("--no-cache", action="store_true", help="compute every point again")
    q.add_argument("--build-dir", default="build/sweep", help="scratch folder for synthesis")
    q.add_argument("-o", "--output", default=None, help="write the JSON document here")
    q.add_argument("--plot", default=None, help="write the Pareto plot (PNG) here")
    q.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    q.add_argument("--calibration", action="store_true",
                   help="print the --no-synth estimate against every committed bitstreams/*/report.json and exit")
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """The sweep (or ``--calibration``'s table); errors in the arguments go to `vdla.cli.errors.report`."""
    from ..config import preset
    from ..explore.estimate import calibration_table
    from ..explore.plots import pareto_png
    from ..explore.space import SpaceError, expand, load_space, parse_vary
    from ..explore.sweep import Options, run_sweep
    from ..hardware.boards import BOARDS

    if args.calibration:
        print(calibration_table())
        return 0
    if args.board not in BOARDS:
        raise CommandError(f"unknown board {args.board!r}; boards are {', '.join(BOARDS)}")
    vary = parse_vary(args.vary)  # a SpaceError or an OSError (--space) goes to vdla.cli.errors.report
    points: list[dict[str, Any]] = []
    if args.space:
        fvary, points = load_space(args.space)
        clash = sorted(set(fvary) & set(vary))
        if clash:
            raise SpaceError(f"{', '.join(clash)} varied both in {args.space} and by --vary")
        vary.update(fvary)
    space = expand(vary, points)
    base = preset(args.config) if args.config else None
    opts = Options(board=args.board, model=args.model, reduced=args.reduced, size=args.size,
                   synth=not args.no_synth, check=not args.no_check, build_dir=args.build_dir)
    bar = None
    if not args.quiet:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(space), desc="sweep", unit="point", file=sys.stderr, leave=False)

    def progress(r: dict[str, Any]) -> None:
        if bar is not None:
            bar.set_postfix_str(f"{r['label'][:30]}: {r['status']}{' (cached)' if r.get('cached') else ''}")
            bar.update(1)

    try:  # a ClusterError goes to vdla.cli.errors.report
        res = run_sweep(space, opts, base=base, scheduler=args.scheduler, n_workers=args.workers,
                        cache_dir=None if args.no_cache else args.cache, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    doc = res.to_dict()
    if args.output:
        with open(args.output, "w") as f:
            json.dump(doc, f, indent=1, default=str)
            f.write("\n")
    if args.plot:
        pareto_png(res, args.plot)
    print(json.dumps(doc, indent=1, default=str) if args.json else res.table())
    if args.output or args.plot:
        print("wrote " + ", ".join(p for p in (args.output, args.plot) if p), file=sys.stderr)
    return 1 if any(p["status"] == "error" for p in res.points) else 0
