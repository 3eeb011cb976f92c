"""The ``fsim`` device: the golden functional simulator with its cycle model (`vdla.simulator`).

``Device("fsim")`` (or ``"fsim:PRESET"``) runs programs on `vdla.simulator.run`; the
machine's on-chip state persists across runs, as on hardware. It rejects an invalid
program itself (`Device.run` skips its separate validation for it): static errors before
anything runs, a uop index past a buffer when its instruction comes up.
"""

from __future__ import annotations

from ...simulator import Machine, Report, run
from ..device import Device

__all__ = ["FsimBackend", "BACKEND"]


class FsimBackend:
    """The golden functional + cycle simulator. On-chip state persists across runs."""

    name = "fsim"
    #: The golden simulator makes every check of `vdla.simulator.validate` itself, with the same
    #: errors and indices (it is their source), so `Device.run` does not check twice.
    validates = True

    def __init__(self, device: Device, arg: str = "") -> None:
        self.machine = Machine(device.config)

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        return run(device.config, device.dram, insn_addr, count, machine=self.machine, strict=strict)


BACKEND = FsimBackend
