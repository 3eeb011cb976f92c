"""The ``pysim`` device: the Amaranth RTL of the core, run in Amaranth's simulator.

    dev = Device("pysim", config="small")      # or Device("pysim:small")
    report = dev.run(program)                  # same API and Report as Device("fsim")

The backend elaborates `vdla.hardware.Core` for the device's Config once and keeps one
simulation alive (on-chip buffers persist across runs, as on hardware and in fsim). Memory
requests are served from ``device.dram``; see `vdla.hardware.testbench` for the memory
timing and `vdla.simulator.rtl.pysim` for how a run becomes a Report or an error. With
``device.backend.trace = True`` the Report's ``trace`` holds, as fsim's does, (instruction,
module, start, end) per instruction (start: first cycle executing, after its pops; end: the
cycle its retire shows), derived from the per-cycle stage states and retire counts kept in
``report.rtl_trace`` (`vdla.hardware.testbench.TRACE_FIELDS`).

Device name arguments: ``pysim:PRESET`` picks a config preset (like fsim). Waveforms:
``Device("pysim", waves="run.vcd")`` records every signal of the core for the Device's life
(Amaranth's simulator writes VCD only: asking for ``.fst`` is an error); the file is complete
after ``dev.close()``.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from ...hardware.testbench import CoreSim, Stuck, instruction_timeline
from ...isa import decode, stage_of
from ...simulator import Report
from ...simulator.rtl.pysim import MODULE_OF_STAGE, PysimReport, deadlock_error, report_from_run
from ...simulator.rtl.waves import resolve as resolve_waves
from ..device import Device

__all__ = ["PysimBackend", "PysimReport", "BACKEND", "SUPPORTED_WAVES"]

#: Trace formats Amaranth's simulator writes ("": available, else why not).
SUPPORTED_WAVES = {"vcd": "", "fst": "Amaranth's simulator writes VCD only"}


class PysimBackend:
    """Runs programs on the core's RTL in Amaranth's simulator."""

    name = "pysim"

    def __init__(self, device: Device, arg: str = "", *, watchdog: int = 20000, latency: int | None = None,
                 waves: str | None = None, wgt_slices: int = 1) -> None:
        self.config = device.config
        self.watchdog, self.latency = watchdog, latency
        #: the core's WGT buffer in this many column slices (`Core`'s ``wgt_slices``, a board option)
        self.wgt_slices = wgt_slices
        self.trace = False  # record a per-cycle timeline in the next runs' reports
        #: The VCD file of every run (None: no trace).
        self.waves = str(resolve_waves(waves, "Device('pysim')", SUPPORTED_WAVES)) if waves else None
        self._sim: CoreSim | None = None
        self._traced = False  # a simulation writing `waves` was started (a restart would overwrite it)

    @property
    def sim(self) -> CoreSim:
        if self._sim is None:
            vcd = None
            if self.waves:
                # after a deadlock the stuck run's trace is kept: the restarted simulation writes NAME-restart.vcd
                w = Path(self.waves)
                vcd = self.waves if not self._traced else str(w.with_name(f"{w.stem}-restart{w.suffix}"))
                self._traced = True
            self._sim = CoreSim(self.config, latency=self.latency, watchdog=self.watchdog, vcd=vcd,
                                wgt_slices=self.wgt_slices)
            if vcd:  # a Device never closed still finishes its VCD: when collected, or at exit
                weakref.finalize(self, self._sim.close)
        return self._sim

    def close(self) -> None:
        """End the simulation (and finish its VCD file)."""
        if self._sim is not None:
            self._sim.close()
            self._sim = None

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        c = self.config
        try:
            self.sim.trace = self.trace
            res = self.sim.run(device.dram, insn_addr, count)
        except Stuck as e:
            self.close()  # the simulation is mid-instruction: start afresh next time
            raise deadlock_error(e, "pysim") from None
        rep = report_from_run(c, res, count, strict, "pysim")
        if res.trace is not None:
            words = device.dram[insn_addr : insn_addr + 16 * count]
            stages = [MODULE_OF_STAGE[stage_of(x)] for x in decode(words.tobytes(), c)]
            rep.rtl_trace = res.trace
            rep.trace = instruction_timeline(res.trace, stages)
        return rep


BACKEND = PysimBackend
