"""vdla.cocotb_kit.golden: a Program laid out as Device.run lays it out, with the golden memory before and after."""

from __future__ import annotations

import numpy as np
import pytest

from vdla import isa
from vdla.cocotb_kit.golden import first_difference, golden_run, rtl_counters
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Stage, UopKernel


def _shift_program(dev: Device, rows: int = 4):
    c = dev.config
    x = dev.array(np.arange(rows * c.batch * c.block_out, dtype=np.int32) * 7, "X")
    y = dev.alloc(rows * c.out_elem_bytes, "Y")
    s = CommandStream(c, "shift")
    s.load_2d(Mem.ACC, sram=0, src=x, x_size=rows)
    s.alu(UopKernel.single(dst=0, loops=(Loop(rows, dst=1),)), AluOp.SHR, 2)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(sram=0, dst=y, x_size=rows)
    return s.finish(), x, y


@pytest.mark.parametrize("config", ["small", "default"])
def test_golden_run_lays_out_the_program_and_records_the_result(config):
    dev = Device("fsim", config=config, dram_size=1 << 20)
    prog, x, y = _shift_program(dev)
    run = golden_run(dev, prog)
    c = dev.config
    # before: the instructions sit at insn_addr (uop addresses relocated), the input where it was written
    words = run.before[run.insn_addr : run.insn_addr + 16 * run.count].tobytes()
    got = [type(i).__name__ for i in isa.decode(words, c)]
    assert got == [type(i).__name__ for i in isa.decode(prog.insns.astype("<u8").tobytes(), c)]
    assert run.count == len(prog)
    assert np.array_equal(run.before[x.addr : x.addr + x.nbytes], x.read())
    assert not run.before[y.addr : y.addr + y.nbytes].any()
    # after: the golden result (independent check: numpy), and the Device's own memory
    want = (np.arange(4 * c.batch * c.block_out, dtype=np.int64) * 7 >> 2).astype(np.int8)
    assert np.array_equal(run.after[y.addr : y.addr + y.nbytes].view(np.int8), want)
    assert np.array_equal(run.after, dev.dram)
    assert first_difference(run.after, dev.dram) == ""
    assert rtl_counters(c, run.report)["acc_elems"] == 4
    assert rtl_counters(c, run.report)["out_elems"] == 4


def test_golden_run_needs_fsim_and_first_difference_names_the_byte():
    with pytest.raises(ValueError, match="needs an fsim Device"):
        golden_run(Device("pysim:small", dram_size=1 << 16), None)  # type: ignore[arg-type]
    a = np.zeros(64, np.uint8)
    b = a.copy()
    b[0x21] = 5
    b[0x30] = 1
    assert first_difference(a, b) == "2 byte(s) differ; first at 0x21: golden 0x00, RTL 0x05"
    assert "sizes differ" in first_difference(a, b[:10])
