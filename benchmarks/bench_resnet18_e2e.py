"""ResNet-18 end to end on VDLA (issue 7's acceptance: 224x224 on the golden simulator in
under 2 minutes, output bit-exact with the int8 numpy reference).

Times each phase of ``vdla run resnet18 --device fsim``: model build + int8 calibration +
graph passes, VDLA code generation, the run on the device (the golden simulator's cycle
model) with every node checked against the int8 reference, and the fp32 onnxruntime check.
Prints the per-layer table, then the phase times and whether the floor is met.

Run: python benchmarks/bench_resnet18_e2e.py [--size 224] [--device fsim] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.job import run_job
from vdla.compiler.graph.zoo import load_model
from vdla.config import preset

FLOOR_S = 120.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--device", default="fsim")
    p.add_argument("--config", default="default")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    spec = load_model("resnet18", size=args.size)
    t1 = time.perf_counter()
    model = build_model(spec, preset(args.config))
    t2 = time.perf_counter()
    res = run_job(model, args.device)
    t3 = time.perf_counter()
    total = t3 - t0
    phases = {
        "model_s": t1 - t0,
        "prepare_s": model.info["prepare_s"],
        "codegen_s": model.info["compile_s"],
        "run_and_checks_s": t3 - t2,
        "device_run_s": res.run_s,
        "total_s": total,
    }
    if args.json:
        print(json.dumps({**res.to_dict(), "phases": phases, "floor_s": FLOOR_S}, indent=1))
    else:
        print(res.table())
        print()
        print("phases: " + ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in phases.items()))
        met = total < FLOOR_S and res.ok
        print(f"end to end {total:.1f} s (floor {FLOOR_S:.0f} s): {'met' if met else 'NOT met'}")
    return 0 if res.ok and total < FLOOR_S else 1


if __name__ == "__main__":
    sys.exit(main())
