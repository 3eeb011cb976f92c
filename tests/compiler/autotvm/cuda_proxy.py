"""A PROXY for GPU measurements, for testing the cuda cost model on a machine without a GPU.

NOT a GPU measurement. :func:`proxy_latency` is a documented analytic latency model of an
H100-class part (sm_90: 132 SMs, 1.7 GHz, 256 FP32 FLOP per clock per SM, 128 bytes of shared
memory per clock per SM, 3.35 TB/s DRAM) evaluated on each point's ptxas-reported registers and
spills and its loop-IR GPU features (:func:`vdla.compiler.autotvm.features.gpu_features`):

* blocks per SM: the fewest of 32, 2048 / threads, the SM's 228 KiB of shared memory over the
  block's, and the 64 Ki registers over the block's (ptxas's count, allocated per warp in 256s);
* waves: ``ceil(blocks / (blocks per SM x SMs))``; each wave's SM time is the larger of its
  arithmetic (FLOP / (256 x ILP x latency hiding); ILP = min(1, accumulators per thread / 8),
  latency hiding = min(1, resident warps / 16)) and its shared-memory traffic (4 bytes per
  shared load / 128 bytes per clock);
* plus the global loads' bytes over DRAM bandwidth and spilled bytes (ptxas) over it too.

It ranks points the way a roofline argument does; it is a stand-in for the labels a GPU
would give, so the tests here show the model can learn a GPU-shaped cost surface from these
features, not that it predicts real kernels. :func:`record` writes the data set
(``data/cuda_proxy_points.json``): ``python tests/compiler/autotvm/cuda_proxy.py``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

SMS, CLOCK, FLOP_PER_CLK, SMEM_BYTES_PER_CLK, DRAM = 132, 1.7e9, 256.0, 128.0, 3.35e12
SMEM_PER_SM, REGS_PER_SM = 228 * 1024, 65536

#: ResNet-18 layer shapes the data set samples, a quarter of their channels and half their size
#: (so a point builds in about a second): (name, workload args of conv2d_nchw.cuda)
TASKS = [
    ("C6/4", [[1, 32, 14, 14], [32, 32, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]),
    ("C8/4", [[1, 32, 14, 14], [64, 32, 1, 1], [2, 2], [0, 0, 0, 0], [1, 1]]),
    ("C9/4", [[1, 64, 8, 8], [64, 64, 3, 3], [1, 1], [1, 1, 1, 1], [1, 1]]),
]
DATA = Path(__file__).parent / "data" / "cuda_proxy_points.json"


def proxy_latency(g: dict[str, float], registers: int, spill: int, flop: float) -> float:
    """Seconds by the analytic model above (``g``: the raw GPU features of a point); inf if it cannot launch."""
    threads, blocks, shared = g["threads"], g["blocks"], g["shared_bytes"]
    per_warp = math.ceil(max(1, registers) * 32 / 256) * 256
    per_sm = min(32, 2048 // threads, SMEM_PER_SM // shared if shared else 32,
                 REGS_PER_SM // (per_warp * math.ceil(threads / 32)))
    if per_sm < 1:
        return math.inf
    waves = math.ceil(blocks / (per_sm * SMS))
    resident = min(per_sm, blocks / SMS)
    hide = min(1.0, resident * threads / 32 / 16)
    ilp = min(1.0, g["local_elems"] / 8)
    flop_wave = flop / blocks * resident
    compute = flop_wave / (FLOP_PER_CLK * ilp * hide)
    smem = g["shared_loads"] / blocks * resident * 4 / SMEM_BYTES_PER_CLK
    dram = (g["global_loads"] * 4 + spill * threads * blocks) / DRAM
    return waves * max(compute, smem) / CLOCK + dram


def raw_gpu(task: Any, cfg: Any) -> dict[str, float]:
    """The un-logged quantities the proxy reads, from the point's loop IR."""
    from vdla.compiler.autotvm.features import _GpuWalker, lower_loops

    s, tensors = task.instantiate(cfg)
    w = _GpuWalker()
    w.walk(lower_loops(s, tensors), 1.0)
    threads = math.prod(w.extent.get(f"threadIdx.{d}", 1) for d in "xyz")
    return {"threads": threads, "blocks": math.prod(w.extent.get(f"blockIdx.{d}", 1) for d in "xyz"),
            "shared_bytes": w.alloc["shared"], "local_elems": w.alloc["local"] // 4,
            "shared_loads": w.loads["shared"], "global_loads": w.loads["global"]}


def record(per_task: int = 24, seed: int = 5) -> None:
    """Sample ``per_task`` points of each task that build, prove them with ptxas (sm_90) and write
    their features, ptxas's registers and spills and the proxy latency to :data:`DATA`."""
    from vdla.compiler.autotvm import measure_cuda as M
    from vdla.compiler.autotvm.features import config_features, note_registers
    from vdla.compiler.autotvm.measure import LocalBuilder
    from vdla.compiler.autotvm.task import create

    out = []
    for name, args in TASKS:
        task = create("conv2d_nchw.cuda", args, "cuda -arch=sm_90")
        rng = np.random.default_rng(seed)
        idx = [task.fallback().index]
        points = []
        while len(points) < per_task:
            i = idx.pop() if idx else int(rng.integers(len(task.config_space)))
            cfg = task.config_space.get(i)
            b = M.build_one(None, task.name, args, task.target, cfg.to_json_dict(), LocalBuilder(20))
            if not isinstance(b, M.CudaBuild):
                continue
            note_registers(task, i, b.registers)
            spill = max(k.spill_bytes for k in b.kernels)
            g = raw_gpu(task, cfg)
            points.append({"index": i, "knobs": cfg.knobs(), "registers": b.registers, "spill": spill, "raw": g,
                           "features": [float(v) for v in config_features(task, cfg)],
                           "proxy_s": proxy_latency(g, b.registers, spill, task.flop)})
            print(name, len(points), points[-1]["proxy_s"], file=sys.stderr)
        out.append({"layer": name, "args": args, "flop": task.flop, "points": points})
    DATA.write_text(json.dumps({"note": "PROXY labels (analytic model of tests/compiler/autotvm/cuda_proxy.py), "
                                        "NOT GPU measurements; registers and spills are ptxas's (sm_90)",
                                "tasks": out}, indent=None))


if __name__ == "__main__":
    record()
