"""``vdla run``'s extra outputs: ``--waves FILE`` (an RTL trace) and ``--plot DIR`` (matplotlib PNGs).

`add_arguments` adds both options; `device_options` turns ``--waves`` into the Device's
``waves=`` (`vdla.simulator.rtl.waves`: the suffix picks VCD or FST, a format the device
cannot write is an error); `write` draws the plots (`vdla.plot`) and prints where the
trace and the pictures went, so the user never has to look for them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "device_options", "write"]

RTL_DEVICES = ("pysim", "verilator")


def add_arguments(q: argparse.ArgumentParser) -> None:
    q.add_argument("--waves", metavar="FILE", help="RTL devices: write a trace of the run to FILE.vcd "
                   "(or FILE.fst where Verilator's FST writer builds; pysim writes VCD only)")
    q.add_argument("--plot", metavar="DIR", help="write roofline.png and timeline.png into DIR (plot extra: matplotlib)")


def device_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Device keyword arguments the options ask for (``waves``), checked against the device."""
    if not args.waves:
        return {}
    kind = args.device.partition(":")[0]
    if kind not in RTL_DEVICES:
        from ..runtime import DeviceError

        raise DeviceError(f"--waves needs an RTL device ({', '.join(RTL_DEVICES)}), not --device {args.device}")
    return {"waves": args.waves}


def write(args: argparse.Namespace, *, job: Any = None, report: Any = None, name: str = "") -> None:
    """After a run: draw the plots of `job` (a model's JobResult) or `report` (a program's
    Report) into ``--plot DIR``, and print the trace file and the pictures on stderr."""
    from .. import plot

    if args.plot:
        d = Path(args.plot)
        if job is not None:
            paths = plot.job_plots(job, d)
        else:
            c = report.config
            point = plot.Point(name or "program", report.gops * 1e9 * report.seconds, report.bytes_moved,
                               report.seconds)
            paths = {}
            if point.ops > 0:
                paths["roofline"] = plot.roofline([point], c, d / "roofline.png", title=f"{name}: roofline")
            else:
                print(f"plots: no roofline for {name} (no GEMM operations)", file=sys.stderr)
            if report.trace:
                paths["timeline"] = plot.timeline([(name or "program", report.trace, report.cycles)],
                                                  d / "timeline.png", clock_mhz=c.clock_mhz, title=f"{name}: timeline")
        if paths:
            print("plots: " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    if args.waves:
        path = Path(args.waves).resolve()
        size = path.stat().st_size if path.is_file() else 0
        print(f"waves: {path} ({path.suffix[1:].upper()}, {size:,} bytes)", file=sys.stderr)
