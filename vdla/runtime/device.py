"""Device: DRAM, buffers, and a backend that runs Programs.

    dev = Device("fsim")                 # the golden simulator; "fsim:small" picks a preset
    a = dev.array(np_array)              # allocate + copy in
    report = dev.run(program)            # place uops and instructions in DRAM, run, report
    result = c.read(np.int8, (m, n))

A backend executes an instruction stream already placed in the device's DRAM and
returns a `vdla.simulator.Report`. Backends register by name in `BACKENDS`; the
hardware simulators (pysim, verilator) and boards (serial) plug in the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..config import Config, preset
from ..isa import INSN_BYTES, decode_one, encode_one
from ..simulator import Machine, Report, run
from .dram import Allocator, Buffer
from .program import Program

__all__ = ["Device", "DeviceError", "BACKENDS", "register_backend"]

DEFAULT_DRAM = 256 << 20


class DeviceError(RuntimeError):
    """The device cannot run what it was given (unknown backend, config mismatch)."""


class FsimBackend:
    """The golden functional + cycle simulator. On-chip state persists across runs."""

    name = "fsim"

    def __init__(self, device: Device, arg: str = "") -> None:
        self.machine = Machine(device.config)

    def execute(self, device: Device, insn_addr: int, count: int, strict: bool = True) -> Report:
        return run(device.config, device.dram, insn_addr, count, machine=self.machine, strict=strict)


BACKENDS: dict[str, Callable[..., object]] = {"fsim": FsimBackend}


def register_backend(name: str, factory: Callable[..., object]) -> None:
    """Make `Device(name)` use `factory(device, arg)`; arg is the text after ':' in the name."""
    BACKENDS[name] = factory


class Device:
    def __init__(self, backend: str = "fsim", config: Config | str | None = None, dram_size: int = DEFAULT_DRAM) -> None:
        kind, _, arg = backend.partition(":")
        if kind not in BACKENDS:
            raise DeviceError(f"unknown device {backend!r}; available: {', '.join(sorted(BACKENDS))}")
        if config is None:  # "fsim:small", "pysim:small": the text after ':' names a preset
            config = preset(arg) if arg and kind in ("fsim", "pysim", "verilator") else preset("default")
        self.config = preset(config) if isinstance(config, str) else config
        self.dram = np.zeros(dram_size, dtype=np.uint8)  # calloc: untouched pages cost nothing
        big = max(self.config.wgt_elem_bytes, self.config.acc_elem_bytes, 4096)
        self.allocator = Allocator(dram_size, align=1 << (big - 1).bit_length())
        self.name = backend
        self.backend = BACKENDS[kind](self, arg)
        self.last_report: Report | None = None

    def __repr__(self) -> str:
        return f"Device({self.name!r}, config={self.config.name!r})"

    # -- memory --------------------------------------------------------------------
    def alloc(self, nbytes: int, name: str = "") -> Buffer:
        return Buffer(self.dram, self.allocator, self.allocator.alloc(nbytes), nbytes, name)

    def array(self, data: np.ndarray, name: str = "") -> Buffer:
        """Allocate a buffer holding a copy of `data`."""
        data = np.ascontiguousarray(data)
        buf = self.alloc(max(1, data.nbytes), name)
        buf.write(data)
        return buf

    def free(self, buf: Buffer) -> None:
        buf.free()

    # -- running ---------------------------------------------------------------------
    def run(self, program: Program, strict: bool = True) -> Report:
        """Place the program's uops and instructions in DRAM, run it, free them, report."""
        diff = program.config.architecture_differences(self.config)
        if diff:
            raise DeviceError(
                f"program {program.name!r} was built for config {program.config.name!r}, which {self!r} "
                f"(config {self.config.name!r}) cannot run: {'; '.join(diff)}"
            )
        segments: list[Buffer] = []
        reserved: list[int] = []
        try:
            for addr, blob in program.data:
                self.allocator.reserve(addr, len(blob))
                reserved.append(addr)
                self.dram[addr : addr + len(blob)] = np.frombuffer(blob, np.uint8)
            insns = program.insns.copy()
            if program.uops.size:
                ubuf = self.array(program.uops, f"{program.name}.uops")
                segments.append(ubuf)
                for i in program.uop_relocs:
                    w = int(insns[i, 0]) | (int(insns[i, 1]) << 64)
                    insn = decode_one(w, self.config, i)
                    w = encode_one(insn.replace(dram_base=insn.dram_base + ubuf.addr // 4), self.config, i)
                    insns[i] = (w & 0xFFFF_FFFF_FFFF_FFFF, w >> 64)
            ibuf = self.alloc(len(insns) * INSN_BYTES, f"{program.name}.insns")
            segments.append(ibuf)
            ibuf.write(insns.astype("<u8"))
            self.last_report = self.backend.execute(self, ibuf.addr, len(insns), strict)
            return self.last_report
        finally:
            for buf in segments:
                buf.free()
            for addr in reserved:
                self.allocator.free(addr)
