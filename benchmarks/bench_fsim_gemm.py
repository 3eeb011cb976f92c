"""Golden-simulator speed: GEMM uop-iterations executed per second.

Three access patterns on the default config (1x16x16), each one GEMM instruction run
through `vdla.simulator.Machine`:

- matmul: the blocked matmul kernel (uops over output columns, loops over rows and k);
- conv3x3: uops over a 14x14 output tile and the 9 kernel taps, loops over channels;
- scattered: random uop indices (the worst case for grouping).

The baseline, measured in the same run, is numpy doing the same multiply-accumulates
the plain way (int32 matmul of the gathered operands, no BLAS path). The target is
2 million uop-iterations per second.

Run: python benchmarks/bench_fsim_gemm.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vdla import isa
from vdla.config import Config
from vdla.simulator import Machine

TARGET = 2e6


def setup(c: Config, uops: list[tuple[int, int, int]], seed: int = 0) -> Machine:
    rng = np.random.default_rng(seed)
    m = Machine(c)
    m.inp[:] = rng.integers(-128, 128, m.inp.shape)
    m.wgt[:] = rng.integers(-128, 128, m.wgt.shape)
    m._inp_f[:] = m.inp
    m._wgt_f[:] = m.wgt
    words = isa.encode_uops([isa.Uop(dst_idx=d, src_idx=s, wgt_idx=w) for d, s, w in uops], c)
    m.uop[: len(uops)] = words
    m.uop_dst[: len(uops)], m.uop_src[: len(uops)], m.uop_wgt[: len(uops)] = isa.uop_fields(words, c)
    return m


def patterns(c: Config):
    rng = np.random.default_rng(1)
    # matmul: acc[i*16 + j] += inp[i*16 + kk] . wgt[j*16 + kk]; 64 rows x 16 k x 16 cols
    yield "matmul", [(j, 0, j * 16) for j in range(16)], dict(
        iter_out=64, iter_in=16, dst_factor_out=16, src_factor_out=16, src_factor_in=1, wgt_factor_in=1
    )
    # conv3x3 on a 16x16 padded input tile -> 14x14 outputs; loops: 4 out-channel blocks x 8 in-channel blocks
    taps = [(dy, dx) for dy in range(3) for dx in range(3)]
    uops = [(y * 14 + x, (y + dy) * 16 + (x + dx), t) for t, (dy, dx) in enumerate(taps) for y in range(14) for x in range(14)]
    yield "conv3x3", uops, dict(iter_out=4, iter_in=8, dst_factor_out=196, src_factor_in=256, wgt_factor_out=72, wgt_factor_in=9)
    # scattered: random indices everywhere
    uops = [(int(d), int(s), int(w)) for d, s, w in zip(rng.integers(0, 2048, 4096), rng.integers(0, 2048, 4096), rng.integers(0, 1024, 4096))]
    yield "scattered", uops, dict(iter_out=8, iter_in=1)


def baseline(m: Machine, insn) -> float:
    """Seconds for numpy to do the same MACs directly (gather + int32 einsum + add.at)."""
    k = np.arange(insn.uop_bgn, insn.uop_end)
    i = np.arange(insn.iter_out)[:, None, None]
    j = np.arange(insn.iter_in)[None, :, None]
    d = (m.uop_dst[k] + i * insn.dst_factor_out + j * insn.dst_factor_in).ravel()
    x = (m.uop_src[k] + i * insn.src_factor_out + j * insn.src_factor_in).ravel()
    w = (m.uop_wgt[k] + i * insn.wgt_factor_out + j * insn.wgt_factor_in).ravel()
    acc = m.acc.astype(np.int32)
    t0 = time.perf_counter()
    prod = np.einsum("nbc,noc->nbo", m.inp[x].astype(np.int32), m.wgt[w].astype(np.int32))
    np.add.at(acc, d, prod)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    c = Config()
    print(f"golden simulator GEMM throughput, config {c.name} ({c.batch}x{c.block_in}x{c.block_out}); target {TARGET / 1e6:.0f} M uop-iter/s")
    print(f"{'pattern':<10} {'uop-iters':>10} {'fsim M/s':>9} {'numpy M/s':>10} {'vs numpy':>9} {'vs target':>10}")
    for name, uops, loops in patterns(c):
        m = setup(c, uops)
        insn = isa.gemm(uop_bgn=0, uop_end=len(uops), **loops)
        n = len(uops) * insn.iter_out * insn.iter_in
        best = min(_time(lambda m=m, insn=insn: m.execute(insn, 0, np.zeros(0, np.uint8))) for _ in range(args.repeat))
        base = min(baseline(m, insn) for _ in range(args.repeat))
        rate, brate = n / best, n / base
        print(f"{name:<10} {n:>10} {rate / 1e6:>9.2f} {brate / 1e6:>10.2f} {rate / brate:>8.1f}x {rate / TARGET:>9.2f}x")


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
