"""Compile one operator: an int8 matrix multiply written as a tensor expression, for the CPU and for VDLA.

    C[i, j] = sum_k A[i, k] * W[j, k]          int8 in, int32 accumulate

1. CPU: the expression as written (`te.compute` + `te.create_schedule`), lowered to loop IR
   (`vdla.lower` prints it) and built with ``target="llvm"`` (llvmlite, the host CPU).
2. VDLA: the same product from the packed dense template (`dense_packed`: VDLA's blocked
   layouts, a requantising shift fused on the tensor ALU) and its schedule, built with
   ``target="vdla"`` into instructions and micro-ops, run on the golden simulator.

Both are checked against numpy bit-exactly. Run: python examples/compile_op.py [--config small]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import vdla
from vdla import Device, preset, te
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    dense_packed,
    pack_dense_data,
    pack_dense_weight,
    schedule_dense_packed,
    unpack_dense_data,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="default", help="preset name or JSON file")
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--k", type=int, default=128)
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--quiet-ir", action="store_true", help="do not print the loop IR")
    args = p.parse_args(argv)
    c = preset(args.config)
    n, k, m = args.n, args.k, args.m
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, k), dtype=np.int8)
    w = rng.integers(-128, 128, (m, k), dtype=np.int8)
    exact = a.astype(np.int64) @ w.astype(np.int64).T

    # 1. the tensor expression on the CPU
    A = te.placeholder((n, k), "int8", name="A")
    W = te.placeholder((m, k), "int8", name="W")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r].astype("int32") * W[j, r].astype("int32"), axis=r), name="C")
    s = te.create_schedule(C.op)
    if not args.quiet_ir:
        print(vdla.lower(s, [A, W, C]))
    f_cpu = vdla.build(s, [A, W, C], target="llvm")
    c_cpu = np.zeros((n, m), np.int32)
    f_cpu(a, w, c_cpu)
    cpu_ok = np.array_equal(c_cpu, exact)
    print(f"llvm: C[{n}x{m}] int32 on the host CPU: {'PASS' if cpu_ok else 'FAIL'} against numpy")

    # 2. the packed template on VDLA, with a shift to int8 fused on the tensor ALU
    B, CI, CO = c.batch, c.block_in, c.block_out
    if n % B or k % CI or m % CO:
        p.error(f"n, k, m must be multiples of batch={B}, block_in={CI}, block_out={CO}")
    shift = 8
    D = te.placeholder((n // B, k // CI, B, CI), "int8", name="D")
    K = te.placeholder((m // CO, k // CI, CO, CI), "int8", name="K")
    out = dense_packed(D, K, Tail(shift=shift, clip=(-128, 127)), config=c)
    f_vdla = vdla.build(schedule_dense_packed(out, Knobs(), config=c), [D, K, out], target="vdla", config=c)
    o = np.zeros((n // B, m // CO, B, CO), np.int8)
    report = f_vdla(Device("fsim", config=c), pack_dense_data(a, B, CI), pack_dense_weight(w, CO, CI), o)
    want = np.clip(exact >> shift, -128, 127).astype(np.int8)
    vdla_ok = np.array_equal(unpack_dense_data(o), want)
    print(f"vdla: {len(f_vdla.program)} instructions, {report.cycles} cycles on the golden simulator "
          f"(config {c.name}, GEMM utilisation {100 * report.gemm_utilisation:.1f}%): "
          f"{'PASS' if vdla_ok else 'FAIL'} against numpy")
    ok = cpu_ok and vdla_ok
    print(f"result: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
