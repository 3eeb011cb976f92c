"""``vdla build MODEL [--target vdla|llvm|cuda] [-o model.vdla] [--json]``: compile a model
(built-in name or .onnx) without running it.

``--target vdla`` (the default) compiles the int8 model onto the accelerator into one file;
`vdla run model.vdla` then runs it without recompiling. ``--target llvm|cuda`` compiles the
float model through the same graph executor (no GPU needed for cuda: PTX is built, for the
GPU present's architecture unless ``-arch`` names one, sm_80 without a GPU) and prints its
plan: where each node will run and why. ``--json`` prints the plan as JSON (``nodes``:
``name``, ``op``, ``target``, ``reason``). The options are the model options of
`vdla.cli.common` (``--tuning-log``: build with a `vdla tune` log's schedules; ``--threads N``:
the parallel loops of the kernels a build runs, such as calibration's, on N threads).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import add_model_arguments, model_config, stderr_progress, threads, warn_host_steps
from .errors import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``vdla build``."""
    q = sub.add_parser("build", help="compile a model (built-in name or .onnx) into one file")
    q.add_argument("model")
    q.add_argument("-o", "--output", help="output file (default MODEL.vdla; with --target llvm|cuda only when given)")
    q.add_argument("--target", default="vdla",
                   help="vdla (the int8 model onto the accelerator, default), llvm or cuda (the float model; "
                        "cuda: for the GPU present unless -arch=sm_XX names one)")
    q.add_argument("--json", action="store_true", help="the plan as JSON (nodes: name, op, target, reason)")
    add_model_arguments(q)
    q.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    """Compile once; save a VDLA model, print what it holds (or the plan of a float one)."""
    from ..compiler.autotvm.tuning import tuning_context
    from ..compiler.graph.build import build_model
    from ..compiler.graph.executor import compile_model
    from ..compiler.graph.zoo import load_model, parse_shapes, quant_options
    from ..compiler.targets.cuda.target import for_present_device
    from ..compiler.targets.target import TargetError
    from ..progress import close as close_progress

    try:  # cuda without -arch: the GPU present's architecture (sm_80 without one)
        target = for_present_device(args.target)
    except TargetError as e:
        raise CommandError(f"--target {args.target!r}: {e}") from None
    progress = stderr_progress(not args.quiet)
    spec = quant_options(load_model(args.model, reduced=args.reduced, size=args.size, shapes=parse_shapes(args.shape)),
                         per_channel=args.per_channel, calibration=args.calibration,
                         offload=args.offload)
    with threads(args.threads), tuning_context(getattr(args, "tuning_log", None), target):
        if target.backend == "vdla":
            m = build_model(spec, model_config(args), calib=args.calib, progress=progress,
                            host_ops=not args.no_host_ops)
        else:
            if spec.qdq:
                raise CommandError(f"{args.model}: a quantised (QDQ) model; --target {args.target} compiles float "
                                   "models (without --target it goes onto VDLA)")
            try:  # an architecture or CPU the back end does not know
                m = compile_model(spec.graph, target=target, progress=progress, host_ops=not args.no_host_ops)
            except TargetError as e:
                raise CommandError(f"--target {args.target!r}: {e}") from None
    close_progress(progress)
    warn_host_steps("build", m.host_warning())
    if args.json:
        print(json.dumps(plan(m, spec.name), indent=2))
    if target.backend != "vdla":
        if args.output:
            m.save(args.output)
        if not args.json:
            print(f"{spec.name}: {spec.description}, for {target}")
            print(m.table())
            if args.output:
                print(f"{args.output}: the plan for {target} ({Path(args.output).stat().st_size} bytes; "
                      f"`vdla run {args.output} --target {target.kind.name}` builds its functions and runs it)")
        return 0
    out = Path(args.output or f"{spec.name}.vdla")
    m.save(out)
    if not args.json:
        nv = sum(k.target == "vdla" for k in m.kernels.values())
        print(f"{out}: {spec.description}, config {m.config.name}: {len(m.kernels)} nodes, {nv} on VDLA "
              f"({len(m.functions)} kernels), {out.stat().st_size} bytes, compiled in {m.info['compile_s']:.1f} s")
    return 0


def plan(m: Any, name: str) -> dict[str, Any]:
    """The ``--json`` form of a compiled model's plan: where each node runs and why."""
    nodes = [{"name": n, "op": op, "target": t, "reason": why} for n, op, t, why in m.summary()]
    return {"model": name, "target": m.target, "nodes": nodes,
            "host_nodes": [d["name"] for d in nodes if d["target"] == "host"]}
