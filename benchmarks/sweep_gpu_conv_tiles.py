"""Sweep: the cuda conv2d schedule's tile knobs (``Conv2dTiles``) per ResNet-18 layer, against cuDNN.

For each layer C2–C12 the default tiles and ``--samples`` random tile choices (fixed ``--seed``,
at most 1024 threads a block) are built, checked against torch's convolution and timed with CUDA
events as ``bench_gpu`` times them (with ``--rounds`` rounds of ``--round-ms``; fewer than the
benchmark's, as the points are many); cuDNN (``torch.nn.functional.conv2d``, TF32 off) is timed in
the same run. Prints each
layer's default and best ratio and the best tiles, and the geometric means; ``--json FILE``
keeps every point. Without a GPU (or torch) it says so and exits 0.
Run ``python benchmarks/sweep_gpu_conv_tiles.py --samples 40 --json sweep.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import random
import sys
import time

import bench_gpu  # the same timing rule (run from benchmarks/, as scripts are)
import numpy as np

from vdla.compiler import build, te, topi
from vdla.compiler.targets.cuda import runtime, schedules
from vdla.compiler.topi.workloads import RESNET18

LAYERS = {layer.name: layer for layer in RESNET18[1:]}  # C2..C12
#: The values each knob is drawn from.
SPACE = {"bf": (8, 16, 32, 64), "tz": (1, 2, 4, 8), "ty": (2, 4, 8, 16), "tx": (4, 8, 16),
         "rx": (1, 2, 4), "bk": (4, 8, 16, 32), "min_blocks": (32, 64, 128, 256)}  # fmt: skip


#: The defaults before this sweep chose today's (for comparison in the same run).
PREVIOUS = schedules.Conv2dTiles(bf=16, tz=4, ty=8, tx=8, rx=2, bk=8, min_blocks=128)


def candidates(samples: int, seed: int) -> list[schedules.Conv2dTiles]:
    """The default tiles, the previous defaults, then `samples` distinct random ones with at most
    1024 threads a block."""
    rnd = random.Random(seed)
    out = [schedules.Conv2dTiles(), PREVIOUS]
    while len(out) < samples + 2:
        t = schedules.Conv2dTiles(**{k: rnd.choice(v) for k, v in SPACE.items()})
        if t.tz * t.ty * t.tx <= 1024 and t.tz <= t.bf and t not in out:
            out.append(t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", nargs="*", default=list(LAYERS))
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="write every point here")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--round-ms", type=float, default=10.0)
    args = ap.parse_args()
    bench_gpu.ROUNDS, bench_gpu.MIN_ROUND_MS = args.rounds, args.round_ms
    try:
        import torch
    except ImportError:
        print("sweep_gpu_conv_tiles: torch not installed; nothing measured")
        return 0
    if runtime.device_count() == 0 or not torch.cuda.is_available():
        print("sweep_gpu_conv_tiles: no CUDA GPU; nothing measured")
        return 0
    torch.backends.cudnn.allow_tf32 = False
    dev = runtime.get_device(0)
    arch = dev.arch if dev.arch in ("sm_80", "sm_86", "sm_89", "sm_90") else "sm_80"
    print(f"GPU: {dev.name} ({dev.arch}; PTX for {arch}); seed {args.seed}, {args.samples} samples a layer")
    points, summary = [], []
    for name in args.layers:
        layer = LAYERS[name]
        rng = np.random.default_rng(int(name[1:]))
        x = rng.standard_normal((1, layer.ic, layer.size, layer.size), np.float32)
        w = rng.standard_normal((layer.oc, layer.ic, layer.k, layer.k), np.float32) / math.sqrt(layer.ic * layer.k**2)
        tx, tw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
        want = torch.nn.functional.conv2d(tx, tw, stride=layer.stride, padding=layer.pad)
        conv = functools.partial(torch.nn.functional.conv2d, tx, tw, stride=layer.stride, padding=layer.pad)
        t_cudnn = bench_gpu.torch_time(torch, conv, args.repeat)
        want_np = want.cpu().numpy()
        dx, dw = runtime.to_device(x), runtime.to_device(w)
        dy = runtime.empty(want_np.shape, "float32")
        xp = te.placeholder(x.shape, name="x")
        wp = te.placeholder(w.shape, name="w")
        y = topi.conv2d_nchw(xp, wp, layer.stride, layer.pad)
        rows = []
        for tiles in candidates(args.samples, args.seed):
            t0 = time.perf_counter()
            try:
                f = build(schedules.schedule_conv2d_nchw(y, tiles), [xp, wp, y], target=f"cuda -arch={arch}", name=name)
                f(dx, dw, dy)
                err = float(np.abs(dy.numpy() - want_np).max() / max(np.abs(want_np).max(), 1e-6))
                t = bench_gpu.vdla_time(f, (dx, dw, dy), args.repeat)
            except Exception as e:  # a tile choice the GPU refuses (threads, shared memory) is a data point
                rows.append({"layer": name, "tiles": dataclasses.asdict(tiles), "error": f"{type(e).__name__}: {e}"[:200]})
                continue
            rows.append({"layer": name, "tiles": dataclasses.asdict(tiles), "seconds": t, "ratio": t_cudnn / t,
                         "rel_err": err, "build_s": time.perf_counter() - t0})  # fmt: skip
        ok = [r for r in rows if "ratio" in r and r["rel_err"] < 1e-4]
        best = max(ok, key=lambda r: r["ratio"])
        default, previous = rows[0], rows[1]
        summary.append((name, default.get("ratio", 0.0), previous.get("ratio", 0.0), best["ratio"], best["tiles"]))
        print(f"{name:<4} cuDNN {t_cudnn * 1e6:8.1f} us  default {default.get('ratio', 0):5.2f}  "
              f"previous {previous.get('ratio', 0):5.2f}  best {best['ratio']:5.2f}  "
              f"{best['tiles']}  ({len(ok)} of {len(rows)} ran correct)", flush=True)  # fmt: skip
        points += rows
    gm = [math.exp(sum(math.log(max(s[i], 1e-9)) for s in summary) / len(summary)) for i in (1, 2, 3)]
    print(f"geometric mean vs cuDNN: default tiles {gm[0]:.2f}, previous defaults {gm[1]:.2f}, best per layer {gm[2]:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": dev.name, "seed": args.seed, "samples": args.samples, "points": points}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
