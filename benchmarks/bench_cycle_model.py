"""Golden cycle model vs the RTL: cycles of the same programs on Device("fsim") and Device("pysim").

The golden simulator's `Config.timing` defaults are calibrated against the Amaranth core
running with the test memory of `vdla.hardware.testbench` (read latency
`timing.dram_latency`, one bus word per cycle per port). This prints, per program, both
cycle counts and the golden model's error; the target is within 5%.

Programs: the blocked matmul and the ALU-only example at small sizes, and random valid
programs (`vdla.fuzz.randprog`), on the small and default configs and on small with the
extra operand register (`Config.operand_read_register`, one more pipeline stage).

Run: python benchmarks/bench_cycle_model.py [--random 8]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

from vdla.config import PRESETS
from vdla.fuzz.randprog import random_program
from vdla.runtime import Device

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def matmul_cycles(backend: str, config, m: int, n: int, k: int) -> int:
    mm = _example("blocked_matmul")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    dev = Device(backend, config=config)
    ab = dev.array(mm.pack(a, config.batch, config.block_in))
    wb = dev.array(mm.pack(w, config.block_out, config.block_in))
    cb = dev.alloc(m * n)
    prog, _ = mm.matmul_program(config, ab, wb, cb, m, n, k, 6, -128, 127)
    return dev.run(prog).cycles


def programs(n_random: int):
    configs = {"small": PRESETS["small"], "default": PRESETS["default"],
               "small+orr": PRESETS["small"].replace(operand_read_register=True)}
    for name, c in configs.items():
        sizes = (32, 32, 64) if name == "default" else (16, 16, 32)
        yield name, f"blocked_matmul {'x'.join(map(str, sizes))}", lambda b, c=c, s=sizes: matmul_cycles(b, c, *s)
        for seed in range(n_random):
            case = random_program(c, seed)
            yield name, f"random seed {seed} ({len(case.program)} insns)", (
                lambda b, c=c, case=case: case.run(Device(b, config=c, dram_size=1 << 18))[1].cycles
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--random", type=int, default=8, help="random programs per config")
    args = p.parse_args()
    print(f"{'config':<10} {'program':<34} {'golden':>8} {'RTL':>8} {'error':>7}")
    errors = []
    for cname, label, run in programs(args.random):
        golden, rtl = run("fsim"), run("pysim")
        err = (golden - rtl) / rtl
        errors.append(abs(err))
        print(f"{cname:<10} {label:<34} {golden:>8} {rtl:>8} {100 * err:>+6.1f}%")
    print(f"\nworst |error| {100 * max(errors):.1f}%, mean {100 * float(np.mean(errors)):.1f}% over {len(errors)} programs "
          f"(target: within 5%)")
    sys.exit(0)


if __name__ == "__main__":
    main()
