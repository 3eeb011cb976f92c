"""Your own cocotb test of the VDLA core's Verilog: copy this file and change the program.

Each test below drives ``vdla_axi_top`` (the core with its AXI4 memory port and AXI4-Lite
registers, `vdla verilog --top axi`) through `vdla.cocotb_kit.AxiTopDriver`: it writes a small
int8 matrix multiply by hand with the runtime API (load INP and WGT, reset ACC, one GEMM
over k, shift right, store), lays it out in the AXI RAM, runs it on the RTL, checks every
byte of memory against the golden simulator and the result against numpy.

Run it (builds the core with Verilator once, ~30-70 s; later runs start at once):

    python examples/cocotb_test.py --config small --waves matmul.vcd

or from your own pytest: ``vdla.cocotb_kit.run_tests("cocotb_test.py", config="small")``.
Needs ``pip install -e ".[sim]"`` and a C++ compiler.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vdla.config import Config
from vdla.runtime import AluOp, Buffer, CommandStream, Loop, Mem, Program, Stage, UopKernel

M_BLOCKS, K_BLOCKS = 4, 2  # A: 4 row blocks x 2 k blocks; W: one block of output columns
SHIFT = 6


def matmul(c: Config, a: Buffer, w: Buffer, out: Buffer) -> Program:
    """OUT[i] = (sum_k INP[i, k] . WGT[k]) >> SHIFT for M_BLOCKS rows of blocks, by hand."""
    s = CommandStream(c, "cocotb_matmul")
    s.load_2d(Mem.INP, 0, a, x_size=M_BLOCKS * K_BLOCKS)  # INP rows: A's blocks, row-major
    s.load_2d(Mem.WGT, 0, w, x_size=K_BLOCKS)  # WGT rows: W's k blocks
    s.dep_push(Stage.LOAD, Stage.COMPUTE)
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    s.gemm(UopKernel.single(loops=(Loop(M_BLOCKS, dst=1),), name="reset"), reset=True)
    # acc[i] += inp[i*K + k] . wgt[k]: outer loop over rows i, inner over k
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(M_BLOCKS, dst=1, src=K_BLOCKS), Loop(K_BLOCKS, src=1, wgt=1)),
                            name="gemm"))
    s.alu(UopKernel.single(loops=(Loop(M_BLOCKS, dst=1, src=1),), name="requant"), AluOp.SHR, SHIFT)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, out, x_size=M_BLOCKS)
    return s.finish()


def reference(a: np.ndarray, w: np.ndarray, c: Config) -> np.ndarray:
    """numpy: the int32 dot products, shifted, narrowed to int8 by truncation (VDLA's OUT)."""
    acc = np.einsum("mkbi,koi->mbo", a.astype(np.int64), w.astype(np.int64))
    half = 1 << (c.acc_width - 1)
    acc = (acc + half) % (2 * half) - half  # the accumulator's width (wraps as the hardware adds)
    return (acc >> SHIFT).astype(np.int8)  # truncation to the low 8 bits, as the store narrows


try:  # the tests need cocotb, which is only importable with the sim extra
    import cocotb
except ImportError:  # pragma: no cover - running main() without the sim extra reports it there
    cocotb = None

if cocotb is not None:
    from vdla.cocotb_kit import AxiTopDriver

    async def _matmul_on_rtl(dut, backpressure: bool) -> None:
        tb = AxiTopDriver(dut)  # Config and memory size come from run_tests
        await tb.reset()
        tb.backpressure(backpressure)
        dev, c = tb.golden, tb.config
        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, (M_BLOCKS, K_BLOCKS, c.batch, c.block_in), dtype=np.int8)
        w = rng.integers(-128, 128, (K_BLOCKS, c.block_out, c.block_in), dtype=np.int8)
        a_buf, w_buf = dev.array(a, "A"), dev.array(w, "W")
        out = dev.alloc(M_BLOCKS * c.out_elem_bytes, "OUT")
        run = await tb.run_program(matmul(c, a_buf, w_buf, out))  # RTL == golden, every byte
        got = tb.read(out, np.int8, (M_BLOCKS, c.batch, c.block_out))
        np.testing.assert_array_equal(got, reference(a, w, c))
        assert not tb.protocol_errors, tb.protocol_errors[:3]
        dut._log.info("matmul: %d cycles on the RTL, %d in the golden cycle model", run.cycles, run.golden.report.cycles)

    @cocotb.test()
    async def test_matmul(dut):
        """A hand-written GEMM + ALU program, bit-exact with the golden simulator and numpy."""
        await _matmul_on_rtl(dut, backpressure=False)

    @cocotb.test()
    async def test_matmul_with_backpressure(dut):
        """The same with stalls on every AXI channel of the memory."""
        await _matmul_on_rtl(dut, backpressure=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="small", help="configuration preset or JSON file (default: small)")
    p.add_argument("--waves", default=None, help="write a trace of the run (FILE.vcd, or FILE.fst where supported)")
    args = p.parse_args(argv)
    from vdla.cocotb_kit import run_tests

    result = run_tests(__file__, config=args.config, waves=args.waves)
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
