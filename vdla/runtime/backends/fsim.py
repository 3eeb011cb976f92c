"""The ``fsim`` device: the golden functional simulator with its cycle model (`vdla.simulator`).

``Device("fsim")`` (or ``"fsim:PRESET"``) runs programs on `vdla.simulator.run`; the
machine's on-chip state persists across runs, as on hardware. `Device.run` validates every
program before this backend runs it, as for every device: the golden simulator would find
a uop index past a buffer or a deadlock only when it comes up, after earlier instructions
changed DRAM and SRAM; a rejected program must leave every device as it was.
"""

from __future__ import annotations

from ...simulator import Machine, Report, run
from ..device import Device

__all__ = ["FsimBackend", "BACKEND"]


class FsimBackend:
    """The golden functional + cycle simulator. On-chip state persists across runs."""

    name = "fsim"

    def __init__(self, device: Device, arg: str = "") -> None:
        self.machine = Machine(device.config)

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        return run(device.config, device.dram, insn_addr, count, machine=self.machine, strict=strict)


BACKEND = FsimBackend
