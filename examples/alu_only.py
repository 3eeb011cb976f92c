"""An ALU-only VDLA program: residual add, requantise and max-pool on the tensor ALU.

Two int32 tensors X and Y of `rows` accumulator rows (each batch x block_out lanes) are
loaded into ACC, then:

    Z = clip(((X + Y) * 3) >> 2, 0, 127)            tensor ADD, MUL/SHR/MAX/MIN immediates
    P[p] = max(X[4p], X[4p+1], X[4p+2], X[4p+3])     GEMM reset, tensor ADD, tensor MAX loop

Z and P are narrowed to int8 OUT (truncation, after the clip Z needs none) and stored.
Everything is checked against numpy.

Run: python examples/alu_only.py [--rows 64 --config default]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vdla.config import preset
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Stage, UopKernel


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=64, help="ACC rows per tensor (a multiple of 4)")
    p.add_argument("--config", default="default")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    c = preset(args.config)
    rows = args.rows
    if rows % 4 or 3 * rows + rows // 4 > c.acc_depth:
        p.error(f"rows must be a multiple of 4 and 3.25*rows must fit the ACC buffer ({c.acc_depth} rows)")
    lanes = (c.batch, c.block_out)
    rng = np.random.default_rng(args.seed)
    x = rng.integers(-3000, 3000, (rows, *lanes), dtype=np.int32)
    y = rng.integers(-3000, 3000, (rows, *lanes), dtype=np.int32)

    dev = Device("fsim", config=c)
    xb, yb = dev.array(x, "X"), dev.array(y, "Y")
    zb, pb = dev.alloc(rows * c.out_elem_bytes, "Z"), dev.alloc(rows // 4 * c.out_elem_bytes, "P")
    X, Y, P = 0, rows, 2 * rows  # ACC row bases; P's rows follow

    s = CommandStream(c, "alu_only")
    s.load_2d(Mem.ACC, X, xb, x_size=rows)
    s.load_2d(Mem.ACC, Y, yb, x_size=rows)
    # P = X[4p] (zero, then add), then P = max(P, X[4p + j]) for j = 1..3: the inner loop
    # revisits each P row, which the ALU sees in program order.
    pooled = rows // 4
    s.gemm(UopKernel.single(P, loops=(Loop(pooled, dst=1),), name="zero P"), reset=True)
    s.alu(UopKernel.single(P, X, loops=(Loop(pooled, dst=1, src=4),), name="P = X[4p]"), AluOp.ADD)
    s.alu(UopKernel.single(P, X + 1, loops=(Loop(pooled, dst=1, src=4), Loop(3, src=1)), name="pool"), AluOp.MAX)
    # Z (in X's rows) = clip(((X + Y) * 3) >> 2, 0, 127)
    s.alu(UopKernel.single(X, Y, loops=(Loop(rows, dst=1, src=1),), name="X += Y"), AluOp.ADD)
    row = UopKernel.single(X, loops=(Loop(rows, dst=1),), name="rows of X")
    for op, imm in ((AluOp.MUL, 3), (AluOp.SHR, 2), (AluOp.MAX, 0), (AluOp.MIN, 127)):
        s.alu(row, op, imm)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(X, zb, x_size=rows)
    s.store_2d(P, pb, x_size=pooled)
    report = dev.run(s.finish())

    z_ref = np.clip(((x.astype(np.int64) + y) * 3) >> 2, 0, 127).astype(np.int8)
    p_ref = x.reshape(pooled, 4, *lanes).max(axis=1).astype(np.int8)  # int8 OUT truncates
    z = zb.read(np.int8, (rows, *lanes))
    pool = pb.read(np.int8, (pooled, *lanes))
    ok = np.array_equal(z, z_ref) and np.array_equal(pool, p_ref)
    print(f"VDLA ALU-only program, config {c.name}: {rows} rows of {c.batch}x{c.block_out} int32")
    print(report.table())
    print(f"result: {'PASS' if ok else 'FAIL'} ({'bit-exact' if ok else 'mismatch'} against numpy)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
