"""The ``verilator`` device: the core's AXI top compiled by Verilator, driven from ``device.dram``.

    dev = Device("verilator", config="small")     # or Device("verilator:small")
    report = dev.run(program)                     # same API and Report as Device("fsim") / ("pysim")

The build, the C++ harness, memory timing, failures and waveforms are described in
`vdla.simulator.rtl.verilator`; this backend keeps one model per Device. Waveforms:
``VDLA_WAVES=path.fst`` (or ``=1``: the build folder) in the environment, or
``VerilatorBackend(device, waves="path.fst")``. Limits: ``dev.backend.max_cycles`` and
``dev.backend.timeout`` (seconds) stop a run with LimitError; Ctrl-C stops one promptly.
"""

from __future__ import annotations

import os

from ...hardware.testbench import MemoryFault, Stuck
from ...isa import ISAError, decode
from ...simulator import ProgramError, Report
from ...simulator.check import check_program
from ...simulator.rtl.pysim import deadlock_error, report_from_run
from ...simulator.rtl.verilator import VerilatorModel, build_dir
from ..device import Device

__all__ = ["VerilatorBackend", "BACKEND"]


class VerilatorBackend:
    """Runs programs on the Verilated AxiTop (`vdla.simulator.rtl.verilator`)."""

    name = "verilator"

    def __init__(self, device: Device, arg: str = "", *, watchdog: int = 20000, latency: int | None = None,
                 waves: str | None = None, max_cycles: int | None = None, timeout: float | None = None) -> None:
        self.config = device.config
        self.watchdog, self.latency = watchdog, latency
        #: Bounds of every run (None: none): past either, LimitError; Ctrl-C always stops a run.
        self.max_cycles, self.timeout = max_cycles, timeout
        if waves is None and os.environ.get("VDLA_WAVES", "") not in ("", "0"):
            waves = os.environ["VDLA_WAVES"]
            if waves.lower() in ("1", "true", "yes"):
                waves = str(build_dir(self.config, True) / "verilator.fst")
        self.waves = waves
        self._model: VerilatorModel | None = None

    @property
    def model(self) -> VerilatorModel:
        if self._model is None:
            self._model = VerilatorModel(self.config, latency=self.latency, waves=self.waves)
        return self._model

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        try:
            res = self.model.run(device.dram, insn_addr, count, watchdog=self.watchdog, max_cycles=self.max_cycles,
                                 timeout=self.timeout)
        except Stuck as e:
            raise deadlock_error(e, "verilator") from None
        except MemoryFault as e:  # only unvalidated programs get here: name the instruction
            raise MemoryFault(f"verilator: {e}{faulting_instruction(device, insn_addr, count)}") from None
        return report_from_run(self.config, res, count, strict, "verilator")



def faulting_instruction(device: Device, insn_addr: int, count: int) -> str:
    """'; instruction N (...): DRAM range ...' for the first instruction whose DMA leaves DRAM, or ''."""
    try:
        insns = decode(device.dram[insn_addr: insn_addr + 16 * count].tobytes(), device.config)
        check_program(insns, device.config, device.dram.size)
    except (ISAError, ProgramError) as e:
        return f"; {e}"
    return ""


BACKEND = VerilatorBackend
