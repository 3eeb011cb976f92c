"""The ``verilator`` device: the core's AXI top compiled by Verilator, driven from ``device.dram``.

    dev = Device("verilator", config="small")     # or Device("verilator:small")
    report = dev.run(program)                     # same API and Report as Device("fsim") / ("pysim")

The build, the C++ harness, memory timing, failures and waveforms are described in
`vdla.simulator.rtl.verilator`; this backend keeps one model per Device. Waveforms:
``Device("verilator", waves="run.vcd")`` (``.fst`` where the machine's Verilator can write it,
else an error saying why: `vdla.simulator.rtl.waves`), complete after ``dev.close()``;
``VDLA_WAVES=path`` (or ``=1``: a file in the build folder) in the environment when none is given.
Limits: ``dev.backend.max_cycles`` and ``dev.backend.timeout`` (seconds) stop a run with LimitError;
Ctrl-C stops one promptly.
"""

from __future__ import annotations

import os

from ...hardware.testbench import MemoryFault, Stuck
from ...isa import ISAError, decode
from ...simulator import ProgramError, Report
from ...simulator.check import check_program
from ...simulator.rtl.pysim import deadlock_error, report_from_run
from ...simulator.rtl.verilator import VerilatorModel, build_dir, wave_format, wave_support
from ...simulator.rtl.waves import resolve as resolve_waves
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
                waves = str(build_dir(self.config, True) / f"verilator.{wave_format()}")
        # Checked now (a format this machine cannot write fails at Device(...), not at the first run).
        self.waves = str(resolve_waves(waves, "Device('verilator')", wave_support())) if waves else None
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

    def close(self) -> None:
        """Free the model (and finish its trace file)."""
        if self._model is not None:
            self._model.close()
            self._model = None



def faulting_instruction(device: Device, insn_addr: int, count: int) -> str:
    """'; instruction N (...): DRAM range ...' for the first instruction whose DMA leaves DRAM, or ''."""
    try:
        insns = decode(device.dram[insn_addr: insn_addr + 16 * count].tobytes(), device.config)
        check_program(insns, device.config, device.dram.size)
    except (ISAError, ProgramError) as e:
        return f"; {e}"
    return ""


BACKEND = VerilatorBackend
