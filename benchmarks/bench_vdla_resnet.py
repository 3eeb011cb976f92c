"""ResNet-18 conv layers C2-C12 on VDLA (the TVM paper's Fig. 10 experiment).

Each layer (batch 1, full size, int8, bias + requantise + ReLU on the ALU) is compiled
for the default Config with 1 and with 2 virtual threads and run on the golden
simulator's cycle model. Per layer: cycles, GEMM utilisation (GEMM busy / total),
bytes moved per memory type, GOPS at the Config's clock (100 MHz), and the speed-up
of latency hiding; the total compile time of the eleven layers; a roofline PNG (matplotlib, the plot extra).

Run: python benchmarks/bench_vdla_resnet.py [--out benchmarks/out] [--check] [--json]
(--check also compares every output with numpy, which takes longer.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_packed,
    conv2d_reference,
    pack_bias,
    pack_data,
    pack_weight,
    schedule_conv2d_packed,
    unpack_data,
)
from vdla.compiler.topi.workloads import OFFLOADED

MEMS = ("inp", "wgt", "acc", "uop", "out")


def run_layer(layer, cfg, vthreads: int, dev, check: bool) -> dict:  # type: ignore[no-untyped-def]
    b, ci, co = cfg.batch, cfg.block_in, cfg.block_out
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (b, layer.ic, layer.size, layer.size), dtype=np.int8)
    w = rng.integers(-128, 128, (layer.oc, layer.ic, layer.k, layer.k), dtype=np.int8)
    bias = rng.integers(-2000, 2000, (layer.oc,), dtype=np.int32)
    tail = Tail(bias=True, shift=10, clip=(0, 127))
    t0 = time.perf_counter()
    D = te.placeholder((1, layer.ic // ci, layer.size, layer.size, b, ci), "int8", name="data")
    K = te.placeholder((layer.oc // co, layer.ic // ci, layer.k, layer.k, co, ci), "int8", name="kernel")
    B = te.placeholder((layer.oc // co, b, co), "int32", name="bias")
    out = conv2d_packed(D, K, layer.stride, layer.pad, tail, bias=B, config=cfg)
    s = schedule_conv2d_packed(out, Knobs(vthreads=vthreads), config=cfg)
    f = build(s, [D, K, B, out], name=layer.name, config=cfg)
    compile_s = time.perf_counter() - t0
    o = np.zeros(tuple(int(v.value) for v in out.shape), np.int8)
    r = f(dev, pack_data(x, b, ci), pack_weight(w, co, ci), pack_bias(bias, b, co), o)
    ok = None
    if check:
        ok = bool(np.array_equal(unpack_data(o), conv2d_reference(x, w, layer.stride, layer.pad, tail, bias=bias)))
    k = s.vdla_knobs  # type: ignore[attr-defined]
    macs = layer.macs(b)
    moved = {m: r.counters.get(f"{m}_load_nbytes", 0) for m in MEMS if m != "out"}
    moved["out"] = r.counters.get("out_store_nbytes", 0)
    return {
        "layer": layer.name, "vthreads": vthreads, "cycles": r.cycles, "gemm_util": r.gemm_utilisation,
        "gops": 2 * macs / (r.cycles / (cfg.clock_mhz * 1e6)) / 1e9, "macs": macs, "bytes": moved,
        "compile_s": compile_s, "instructions": len(f.program), "uops": int(f.program.uops.size),
        "ok": ok, "knobs": {"oc_nthread": k.oc_nthread, "h_nthread": k.h_nthread, "tile_co": k.tile_co,
                            "tile_h": k.tile_h, "tile_w": k.tile_w, "tile_ci": k.tile_ci},
        "busy": {m: v.busy for m, v in r.modules.items()},
    }


def roofline_png(path: Path, rows: list[dict], cfg) -> Path:  # type: ignore[no-untyped-def]
    """Log-log roofline (`vdla.plot.roofline`): one labelled marker per layer and thread count,
    without and with latency hiding (1 and 2 virtual threads), as in the paper's Fig. 10."""
    from vdla import plot

    pts = [plot.Point(r["layer"], 2.0 * r["macs"], sum(r["bytes"].values()), r["cycles"] / (cfg.clock_mhz * 1e6),
                      f"{r['vthreads']} virtual thread{'s' if r['vthreads'] > 1 else ''}") for r in rows]
    return plot.roofline(pts, cfg, path, title=f"ResNet-18 C2-C12 on VDLA ({cfg.name}), golden cycle model")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="default")
    p.add_argument("--out", default="benchmarks/out")
    p.add_argument("--check", action="store_true", help="compare every output with numpy")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    cfg = preset(args.config)
    dev = Device("fsim", config=cfg)
    rows = []
    for layer in OFFLOADED:
        for vt in (1, 2):
            rows.append(run_layer(layer, cfg, vt, dev, args.check))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    compile_total = {vt: sum(r["compile_s"] for r in rows if r["vthreads"] == vt) for vt in (1, 2)}
    if args.json:
        print(json.dumps({"rows": rows, "compile_s": compile_total}, indent=1))
    else:
        print(f"ResNet-18 C2-C12 on VDLA, config {cfg.name} ({cfg.macs_per_cycle} MAC/cycle, "
              f"peak {cfg.peak_gops:.1f} GOPS at {cfg.clock_mhz:g} MHz), golden simulator cycle model\n")
        hdr = (f"{'layer':<5} {'vt':>2} {'cycles':>9} {'GEMM%':>6} {'GOPS':>6} {'speedup':>7} "
               f"{'inp KB':>7} {'wgt KB':>7} {'acc KB':>6} {'uop KB':>6} {'out KB':>6} {'insns':>6} {'tiles (co,h,w,ci) thr':>24}"
               + ("  ok" if args.check else ""))
        print(hdr)
        base = {}
        for r in rows:
            if r["vthreads"] == 1:
                base[r["layer"]] = r["cycles"]
            sp = base[r["layer"]] / r["cycles"]
            k = r["knobs"]
            thr = "oc" if k["oc_nthread"] > 1 else ("h" if k["h_nthread"] > 1 else "-")
            b = r["bytes"]
            print(f"{r['layer']:<5} {r['vthreads']:>2} {r['cycles']:>9} {100 * r['gemm_util']:>5.1f}% {r['gops']:>6.2f} "
                  f"{sp:>6.2f}x {b['inp'] / 1024:>7.0f} {b['wgt'] / 1024:>7.0f} {b['acc'] / 1024:>6.1f} "
                  f"{b['uop'] / 1024:>6.1f} {b['out'] / 1024:>6.0f} {r['instructions']:>6} "
                  f"{str((k['tile_co'], k['tile_h'], k['tile_w'], k['tile_ci'])):>21} {thr:>2}"
                  + (f"  {r['ok']}" if args.check else ""))
        for vt in (1, 2):
            sel = [r for r in rows if r["vthreads"] == vt]
            cyc = sum(r["cycles"] for r in sel)
            busy = sum(r["gemm_util"] * r["cycles"] for r in sel)
            print(f"\n{vt} virtual thread(s): total {cyc} cycles, GEMM utilisation {100 * busy / cyc:.1f}% "
                  f"(peak compute utilisation), {sum(2 * r['macs'] for r in sel) / (cyc / (cfg.clock_mhz * 1e6)) / 1e9:.2f} GOPS; "
                  f"compile time of the 11 layers {compile_total[vt]:.2f} s")
    roofline_png(out / "vdla_resnet_roofline.png", rows, cfg)
    (out / "vdla_resnet.json").write_text(json.dumps({"rows": rows, "compile_s": compile_total}, indent=1))
    if not args.json:
        print(f"\nroofline: {out / 'vdla_resnet_roofline.png'}")
    bad = [r["layer"] for r in rows if r["ok"] is False]
    if bad:
        print(f"MISMATCH against numpy: {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
