"""A Program laid out in a Device's memory and run on the golden simulator, with the memory before and after.

    dev = Device("fsim", config=c, dram_size=1 << 20)
    x = dev.array(data)
    run = golden_run(dev, program)       # run.before: the memory with the program laid out,
                                         # run.after: the golden result; run.insn_addr, run.count

``run.before`` is exactly what an RTL testbench puts in its memory model and
``run.after`` what the RTL must leave there: the uops and instructions sit where
``Device.run`` places them, relocated as it relocates them (`vdla.cocotb_kit.driver` uses this
for ``AxiTopDriver.run_program``). No cocotb here: it runs anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import Config
from ..runtime import Device, Program
from ..simulator import Report

__all__ = ["GoldenRun", "golden_run", "first_difference", "rtl_counters"]


@dataclass
class GoldenRun:
    before: np.ndarray  # uint8, the whole memory with the program laid out, before the run
    after: np.ndarray  # uint8, the whole memory after the golden simulator ran it
    insn_addr: int  # byte address of the first instruction
    count: int  # instructions (FINISH included)
    report: Report  # the golden simulator's report (cycles, counters, per-module times)


class _Recorder:
    """A backend wrapper: records the memory around each run of the backend it wraps."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.runs: list[GoldenRun] = []

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        before = device.dram.copy()
        report = self.inner.execute(device, insn_addr, count, strict)  # type: ignore[attr-defined]
        self.runs.append(GoldenRun(before, device.dram.copy(), insn_addr, count, report))
        return report


def golden_run(device: Device, program: Program, strict: bool = True) -> GoldenRun:
    """Run `program` on `device` (an ``fsim`` Device: the golden simulator) and return the memory
    before and after. The Device keeps its state (buffers, allocations), as after ``device.run``."""
    kind = device.name.partition(":")[0]
    if kind != "fsim":
        raise ValueError(f"golden_run needs an fsim Device (the golden simulator), not {device.name!r}")
    inner = device.backend
    rec = _Recorder(inner)
    device.backend = rec
    try:
        device.run(program, strict=strict)
    finally:
        device.backend = inner
    return rec.runs[-1]


def first_difference(want: np.ndarray, got: np.ndarray) -> str:
    """Where two memory images first differ, and how many bytes differ ("" when equal)."""
    if want.shape != got.shape:
        return f"memory sizes differ: golden {want.size} bytes, RTL {got.size} bytes"
    diff = np.flatnonzero(want != got)
    if not diff.size:
        return ""
    k = int(diff[0])
    return (f"{diff.size} byte(s) differ; first at {k:#x}: golden {int(want[k]):#04x}, RTL {int(got[k]):#04x}")


def rtl_counters(config: Config, report: Report) -> dict[str, int]:
    """The core's counters (`vdla.hardware.core.COUNTER_NAMES`) the golden `report` predicts exactly:
    elements moved per memory and GEMM/ALU uop-iterations (cycle counts are the cycle model's)."""
    c = config
    per_mem = {"inp_elems": ("inp_load_nbytes", c.inp_elem_bytes), "wgt_elems": ("wgt_load_nbytes", c.wgt_elem_bytes),
               "acc_elems": ("acc_load_nbytes", c.acc_elem_bytes), "uop_elems": ("uop_load_nbytes", c.uop_elem_bytes),
               "out_elems": ("out_store_nbytes", c.out_elem_bytes)}
    out = {k: report.counters[g] // size for k, (g, size) in per_mem.items()}
    out.update(gemm_iters=report.counters["gemm_counter"], alu_iters=report.counters["alu_counter"])
    return out
