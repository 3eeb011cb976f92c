"""Blocked int8 matrix multiply on VDLA, written by hand with the runtime API.

    C = clip((A @ W.T) >> shift, lo, hi)       A: (m, k) int8, W: (n, k) int8, C: (m, n) int8

The output is computed tile by tile: for each (rows, cols) tile the accumulators are
reset, then k is walked in chunks whose INP/WGT tiles are double-buffered so the load
module fetches chunk t+1 while the GEMM core works on chunk t; the tensor ALU then
requantises (shift right, MIN, MAX) and the store module writes the tile back while the
next tile starts. Dependency tokens carry the RAW (load->compute->store) and WAR
(compute->load, store->compute) orders, as VTA's runtime writes them.

Run: python examples/blocked_matmul.py [--m 256 --n 256 --k 256 --config default]
It checks the result against numpy bit-exactly, prints the cycle report and exits 1 on
a mismatch.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vdla.config import Config, preset
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Program, Stage, UopKernel


def pick_tiles(c: Config, mb: int, nb: int, kb: int) -> tuple[int, int, int]:
    """Largest tiles (in blocks) that divide the matrix and fit two INP/WGT slots and one ACC tile."""
    def divisors(x: int) -> list[int]:
        return [d for d in range(x, 0, -1) if x % d == 0]

    best = None
    for tk in divisors(kb):
        for tn in divisors(nb):
            if 2 * tn * tk > c.wgt_depth:
                continue
            for tm in divisors(mb):
                if 2 * tm * tk > c.inp_depth or tm * tn > c.acc_depth:
                    continue
                score = (tm * tn * tk, tk)  # most GEMM work per load
                if best is None or score > best[0]:
                    best = (score, (tm, tn, tk))
    if best is None:
        raise SystemExit(f"config {c.name!r} buffers are too small for even 1x1x1 tiles")
    return best[1]


def pack(a: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """(R, C) -> (R/rows, C/cols, rows, cols): the element layout VDLA loads."""
    r, k = a.shape
    return a.reshape(r // rows, rows, k // cols, cols).transpose(0, 2, 1, 3).copy()


def matmul_program(
    c: Config, a_buf, w_buf, c_buf, m: int, n: int, k: int, shift: int, lo: int, hi: int
) -> tuple[Program, tuple[int, int, int]]:
    mb, nb, kb = m // c.batch, n // c.block_out, k // c.block_in
    tm, tn, tk = pick_tiles(c, mb, nb, kb)
    s = CommandStream(c, "blocked_matmul")
    L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE
    # acc[i*tn + j] += inp[slot + i*tk + kk] . wgt[slot + j*tk + kk]: loops over rows i and chunk
    # positions kk, uops over output columns j (so adjacent uops write different rows).
    def gemm_kernel(inp0: int, wgt0: int) -> UopKernel:
        uops = tuple((j, inp0, wgt0 + j * tk) for j in range(tn))
        return UopKernel(uops, (Loop(tm, dst=tn, src=tk), Loop(tk, src=1, wgt=1)), f"gemm@{inp0},{wgt0}")

    reset = UopKernel.single(loops=(Loop(tm * tn, dst=1),), name="reset")
    requant = UopKernel.single(loops=(Loop(tm * tn, dst=1, src=1),), name="requant")
    chunks = [(mo, no, ko) for mo in range(mb // tm) for no in range(nb // tn) for ko in range(kb // tk)]
    tiles = (mb // tm) * (nb // tn)
    for t, (mo, no, ko) in enumerate(chunks):
        slot = t % 2
        inp0, wgt0 = slot * tm * tk, slot * tn * tk
        # Load: wait until compute has finished with this slot (WAR), then fill it.
        if t >= 2:
            s.dep_pop(G, L)
        s.load_2d(Mem.INP, inp0, a_buf, x_size=tk, y_size=tm, x_stride=kb, offset=mo * tm * kb + ko * tk)
        s.load_2d(Mem.WGT, wgt0, w_buf, x_size=tk, y_size=tn, x_stride=kb, offset=no * tn * kb + ko * tk)
        s.dep_push(L, G)
        # Compute: a new tile first waits for the store of the previous tile (WAR on OUT).
        if ko == 0:
            tile = t // (kb // tk)
            if tile > 0:
                s.dep_pop(S, G)
            s.gemm(reset, reset=True)
        s.dep_pop(L, G)
        s.gemm(gemm_kernel(inp0, wgt0))
        if t + 2 < len(chunks):
            s.dep_push(G, L)
        if ko == kb // tk - 1:
            s.alu(requant, AluOp.SHR, shift)
            s.alu(requant, AluOp.MIN, hi)
            s.alu(requant, AluOp.MAX, lo)
            s.dep_push(G, S)
            s.dep_pop(G, S)
            s.store_2d(0, c_buf, x_size=tn, y_size=tm, x_stride=nb, offset=mo * tm * nb + no * tn)
            if tile < tiles - 1:
                s.dep_push(S, G)
    return s.finish(), (tm, tn, tk)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=256)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--k", type=int, default=256)
    p.add_argument("--shift", type=int, default=8)
    p.add_argument("--config", default="default", help="preset name or JSON file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="fsim", help="fsim, pysim, serial:PORT (a board, see the README)")
    p.add_argument("--dram", type=int, default=None, help="DRAM bytes (a board's memory size for serial:PORT)")
    args = p.parse_args(argv)
    c = preset(args.config)
    m, n, k = args.m, args.n, args.k
    if m % c.batch or n % c.block_out or k % c.block_in:
        p.error(f"m, n, k must be multiples of batch={c.batch}, block_out={c.block_out}, block_in={c.block_in}")
    rng = np.random.default_rng(args.seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    lo, hi = -128, 127

    if args.device.startswith("serial:"):
        import vdla.runtime.backends.serial  # noqa: F401  (registers Device("serial:PORT"))
    dev = Device(args.device, config=c, **({"dram_size": args.dram} if args.dram else {}))
    a_buf = dev.array(pack(a, c.batch, c.block_in), "A")
    w_buf = dev.array(pack(w, c.block_out, c.block_in), "W")
    c_buf = dev.alloc(m * n, "C")
    prog, tiles = matmul_program(c, a_buf, w_buf, c_buf, m, n, k, args.shift, lo, hi)
    report = dev.run(prog)
    got = c_buf.read(np.int8, (m // c.batch, n // c.block_out, c.batch, c.block_out))
    got = got.transpose(0, 2, 1, 3).reshape(m, n)

    # Independent reference: exact integer products through float64 BLAS, wrapped to the
    # accumulator width (two's complement, as the hardware adds; a no-op for 32-bit
    # accumulators at these sizes, not for the iCEBreaker's 16-bit ones), then requantised.
    exact = np.rint(a.astype(np.float64) @ w.astype(np.float64).T).astype(np.int64)
    half = 1 << (c.acc_width - 1)
    acc = (exact + half) % (2 * half) - half
    ref = np.clip(acc >> args.shift, lo, hi)
    ok = np.array_equal(got, ref.astype(np.int8))

    print(f"VDLA blocked int8 matmul  C[{m}x{n}] = clip((A[{m}x{k}] @ W[{n}x{k}]^T) >> {args.shift}, {lo}, {hi})")
    print(f"config {c.name}: {c.batch}x{c.block_in}x{c.block_out} GEMM, tiles (blocks) m={tiles[0]} n={tiles[1]} k={tiles[2]}, "
          f"{len(prog)} instructions, {prog.uops.size} uops")
    print(report.table())
    print()
    print(report.timeline())
    print(f"result: {'PASS' if ok else 'FAIL'} ({'bit-exact' if ok else 'mismatch'} against numpy)")
    if not ok:
        bad = np.argwhere(got != ref.astype(np.int8))
        print(f"{len(bad)} elements differ, first at {tuple(bad[0])}: got {got[tuple(bad[0])]}, expected {ref[tuple(bad[0])]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
