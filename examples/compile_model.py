"""Compile a model for VDLA once, save it, load it and run it: the Python side of `vdla build` / `vdla run`.

The built-in reduced ResNet-18 (seeded weights, no download; or an .onnx file) is
quantised to int8, partitioned (what VDLA cannot run stays on the CPU), packed and fused,
each offloaded kernel compiled to VDLA instructions; the compiled model is written to one
file, loaded back without recompiling, run on the golden simulator and checked node by
node against the int8 numpy reference. ``--plot DIR`` draws its roofline and timeline.

Run: python examples/compile_model.py [--model resnet18|mobilenet_v1|mlp|FILE.onnx] [--plot DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from vdla import preset
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.executor import CompiledModel
from vdla.compiler.graph.job import run_job
from vdla.compiler.graph.zoo import load_model


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18", help="built-in model name or .onnx file")
    p.add_argument("--config", default="default", help="preset name or JSON file")
    p.add_argument("--out", default=None, help="where to write the compiled model (default: a temporary folder)")
    p.add_argument("--plot", default=None, help="write roofline.png and timeline.png into this folder")
    args = p.parse_args(argv)
    spec = load_model(args.model, reduced=True)
    model = build_model(spec, preset(args.config))  # compile: fold, quantise, partition, pack, fuse, codegen
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.out or Path(tmp) / f"{spec.name}.vdla")
        model.save(path)
        print(f"{path.name}: {model!r}, {path.stat().st_size} bytes")
        loaded = CompiledModel.load(path)  # no recompilation: the kernels are in the file
        result = run_job(loaded, "fsim", check_fp32=False)
    print(result.table())
    if args.plot:
        from vdla import plot

        for name, png in plot.job_plots(result, args.plot).items():
            print(f"{name}: {png}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
