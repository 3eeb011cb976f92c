"""``vdla build MODEL -o model.vdla``: compile a model (built-in name or .onnx) into one file.

`vdla run model.vdla` then runs it without recompiling; the options are the model
options of `vdla.cli.common` (``--tuning-log``: build with a `vdla tune` log's schedules).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_model_arguments, model_config, stderr_progress

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla build``."""
    q = sub.add_parser("build", help="compile a model (built-in name or .onnx) into one file")
    q.add_argument("model")
    q.add_argument("-o", "--output", help="output file (default MODEL.vdla)")
    add_model_arguments(q)
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Compile once, save the compiled model, print what it holds."""
    from ..compiler.autotvm.tuning import tuning_context
    from ..compiler.graph.build import build_model
    from ..compiler.graph.zoo import load_model, parse_shapes, quant_options
    from ..progress import close as close_progress

    progress = stderr_progress(not args.quiet)
    spec = quant_options(load_model(args.model, reduced=args.reduced, size=args.size, shapes=parse_shapes(args.shape)),
                         per_channel=args.per_channel, calibration=args.calibration)
    with tuning_context(getattr(args, "tuning_log", None)):
        m = build_model(spec, model_config(args), calib=args.calib, progress=progress)
    close_progress(progress)
    out = Path(args.output or f"{spec.name}.vdla")
    m.save(out)
    nv = sum(k.target == "vdla" for k in m.kernels.values())
    print(f"{out}: {spec.description}, config {m.config.name}: {len(m.kernels)} nodes, {nv} on VDLA "
          f"({len(m.functions)} kernels), {out.stat().st_size} bytes, compiled in {m.info['compile_s']:.1f} s")
    return 0
