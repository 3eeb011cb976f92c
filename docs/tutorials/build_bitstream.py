"""Building a bitstream and running on a board
===========================================

From a Config to a program running on an FPGA: write the core as Verilog (``vdla verilog``),
build a board's bitstream with the open-source tools from PyPI (``vdla synth BOARD``: Yosys,
nextpnr, icepack/ecppack as YoWASP packages, nothing to install system-wide), read the
build's report (resources used, the clock nextpnr reached, the critical path), program the
board, and run a compiled function on it through ``Device("serial:PORT")``.

A full build takes minutes (about 2 on the iCEBreaker, 3 to 20 on the ULX3S parts), so by
default this tutorial stops after *elaboration* (the tool inputs are written and hashed, no
tool runs), reads the report committed in ``bitstreams/BOARD/`` and runs the program on the
golden simulator with the board's Config and memory size, which is what the board computes.

Run: ``python docs/tutorials/build_bitstream.py``. ``VDLA_TUTORIAL_FULL=1`` runs the full
build; ``VDLA_BOARD=ulx3s-25f`` picks the board (default ``icebreaker``); with a programmed
board on a serial port, ``VDLA_BOARD_PORT=/dev/ttyUSB1`` runs the program on it.
"""

import json
import os
from pathlib import Path

import numpy as np

import vdla
from vdla import te
from vdla.cli import main as vdla_cli
from vdla.compiler.targets.vdla.env import get_env
from vdla.contrib import utils
from vdla.hardware.boards import board
from vdla.hardware.boards.build import markdown, prepare, source_hash

BOARD = os.environ.get("VDLA_BOARD", "icebreaker")
FULL = bool(os.environ.get("VDLA_TUTORIAL_FULL"))
PORT = os.environ.get("VDLA_BOARD_PORT")
REPO = Path(vdla.__file__).resolve().parents[1]  # the checkout vdla is installed from (pip install -e)
temp = utils.tempdir()  # removed when the script ends
work = Path(temp.temp_dir)

# %%
# Step 1: the board and its Config
# --------------------------------
# A board (``vdla.hardware.boards``) fixes the part, the Config of the core built for it (GEMM
# shape, buffer sizes, widths), the memory behind the UART host bridge and the core clock.
b = board(BOARD)
config = b.config
print(f"{b.name}: {b.description}")
print(f"config {config.name} ({config.bitstream_name}): {config.batch}x{config.block_in}x{config.block_out} GEMM, "
      f"{b.dsp_macs} MACs on DSP blocks + {b.lut_macs} in LUTs, {b.memory_bytes // 1024} KiB {b.memory}, "
      f"core clock {b.clk_mhz:g} MHz")

# %%
# Step 2: the core as Verilog
# ---------------------------
# ``vdla verilog`` writes the core with its AXI4 memory port and AXI4-Lite registers (the top
# to put in your own SoC or to test with cocotb, see ``cocotb_testbench.py``), its port list
# and register map, and Verilator lint waivers. ``--lint`` also runs ``verilator -Wall``.
# ``--config`` takes a preset name or a Config as JSON, here the board's (the file a build
# writes as ``bitstreams/BOARD/config.json``).
(work / "config.json").write_text(config.to_json())
assert vdla_cli(["verilog", "--config", str(work / "config.json"), "-q", "-o", str(work / "vdla_axi_top.v")]) == 0
assert "module vdla_axi_top" in (work / "vdla_axi_top.v").read_text()
assert "vdla_axi_top" in (work / "vdla_axi_top.md").read_text()

# %%
# Step 3: the bitstream
# ---------------------
# ``vdla synth BOARD`` elaborates the board's top (the core, its memory, an arbiter and the
# UART bridge) with amaranth-boards' platform, then runs Yosys, nextpnr (a fixed seed: a
# rebuild gives the same bitstream) and the packer. It writes ``BOARD.bin``/``.bit``,
# ``report.md``/``report.json`` and ``config.json`` into ``bitstreams/BOARD/``.
#
# The elaboration alone (``python examples/board_build.py BOARD --dry-run``) writes the tool
# inputs and their hash, the ``source_sha256`` a build records: when it equals the committed
# report's, the committed bitstream was built from these sources.
files = prepare(b, work / "build")
for name in sorted(files):
    print(f"  {name}: {len(files[name].splitlines())} lines")
assert "synth_" in files["top.ys"]  # the Yosys script the build runs
src = source_hash(b, files)
if FULL:
    assert vdla_cli(["synth", BOARD, "--out", str(work / "bitstreams"), "--build-dir", str(work / "build")]) == 0
    report_dir = work / "bitstreams" / BOARD
else:
    report_dir = REPO / "bitstreams" / BOARD
report = json.loads((report_dir / "report.json").read_text())
if FULL:  # a build of these sources records their hash: the flow is reproducible
    assert report["source_sha256"] == src, (report["source_sha256"], src)
if report["source_sha256"] == src:
    print(f"sources sha256 {src[:16]}...: as in {report_dir / 'report.json'}: the bitstream is built from them")
else:
    print(f"sources sha256 {src[:16]}...: {report_dir / 'report.json'} has {report['source_sha256'][:16]}...: "
          f"the hardware changed since that build (`vdla synth {BOARD}` rebuilds it)")

# %%
# Step 4: reading the report
# --------------------------
# ``report.json`` holds what ``report.md`` shows: resources used against the part's capacity,
# nextpnr's fmax against the clock constraint (``clock.pass``: whether it meets it), the
# critical path and the peak throughput at the core clock and at fmax.
for r in report["resources"]:
    print(f"  {r['resource']:<24} {r['used']:>6} of {r['available']:>6}  ({r['percent']:.1f} %)")
clock = report["clock"]
print(f"fmax {clock['fmax_mhz']:.2f} MHz against {clock['constraint_mhz']:g} MHz: "
      f"{'PASS' if clock['pass'] else 'FAIL'}; critical path {report['critical_path']['delay_ns']} ns")
print(f"peak {report['peak_gops']['at_core_clock']} GOPS at the core clock, {report['peak_gops']['at_fmax']} at fmax")
assert report["config"]["block_in"] == config.block_in and report["bitstream_name"] == config.bitstream_name
assert markdown(report).startswith(f"# {BOARD}")  # report.md is this, rendered

# %%
# Step 5: programming the board
# -----------------------------
# vdla does not flash boards; the board's own programmer does (a tool outside Python): the
# iCEBreaker takes ``iceprog``, the ULX3S ``openFPGALoader`` (or ``fujprog``). On the ULX3S,
# LED 0 blinks while the clock runs, LED 1 is lit while the core runs, LED 2 when it is done.
bit = report_dir / report["bitstream"]["file"]
flash = f"iceprog {bit}" if b.family == "ice40" else f"openFPGALoader -b ulx3s {bit}"
print(f"program the board: {flash}")

# %%
# Step 6: running on the board
# ----------------------------
# A function compiled for the board's Config runs on any Device with that Config:
# ``Device("serial:PORT", config=...)`` sends the program and data over the UART bridge (each
# frame CRC-checked) and first checks that the bitstream on the board was built for that
# Config. Without a board, the golden simulator computes the same bytes and counts cycles.
# The function is the matrix multiply of ``vdla_matrix_multiply.py`` with the whole of K in
# one step and a clip on the ALU, built for the board's Config.
env = get_env(config)
m, n, k = 2, 2, 4  # tiles: small enough for the iCEBreaker's 256-byte buffers
a_shape, w_shape = (m, k, env.BATCH, env.BLOCK_IN), (n, k, env.BLOCK_OUT, env.BLOCK_IN)
A = te.placeholder(a_shape, env.inp_dtype, name="A")
W = te.placeholder(w_shape, env.wgt_dtype, name="W")
A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
W_buf = te.compute(W.shape, lambda *i: W(*i), "W_buf")
ko = te.reduce_axis((0, k), name="ko")
ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
C_buf = te.compute((m, n, env.BATCH, env.BLOCK_OUT), lambda bo, co, bi, ci: te.sum(
    A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * W_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
    name="C_buf")
C_clip = te.compute(C_buf.shape, lambda *i: te.max(te.min(C_buf(*i), 127), -128), name="C_clip")
C = te.compute(C_buf.shape, lambda *i: C_clip(*i).astype(env.out_dtype), name="C")
s = te.create_schedule(C.op)
for t, scope in ((A_buf, env.inp_scope), (W_buf, env.wgt_scope), (C_buf, env.acc_scope), (C_clip, env.acc_scope)):
    s[t].set_scope(scope)
for t in (A_buf, W_buf, C):
    s[t].pragma(s[t].op.axis[0], env.dma_copy)
s[C_buf].reorder(*s[C_buf].op.axis[:2], ko, *s[C_buf].op.axis[2:], ki)
s[C_buf].tensorize(s[C_buf].op.axis[2], env.gemm)
s[C_clip].pragma(s[C_clip].op.axis[0], env.alu)
f = vdla.build(s, [A, W, C], target="vdla", config=config, name="board_matmul")

dev = vdla.Device(f"serial:{PORT}" if PORT else "fsim", config=config, dram_size=report["memory"]["bytes"])
rng = np.random.default_rng(0)
a = rng.integers(-8, 8, a_shape, dtype=np.int8)  # small values: the iCEBreaker accumulates in 16 bits
w = rng.integers(-8, 8, w_shape, dtype=np.int8)
out = np.zeros((m, n, env.BATCH, env.BLOCK_OUT), np.int8)
run = f(dev, a, w, out)
want = np.clip(np.einsum("mkbi,nkoi->mnbo", a.astype(np.int32), w.astype(np.int32)), -128, 127)
np.testing.assert_array_equal(out, want)
seconds = run.cycles / (b.clk_mhz * 1e6)
print(f"on {PORT or 'fsim'}: {run.cycles} cycles "
      f"= {seconds * 1e6:.1f} us at {b.clk_mhz:g} MHz; output equal to numpy")
print("build_bitstream: OK")
