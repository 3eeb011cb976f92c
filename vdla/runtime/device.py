"""Device: DRAM, buffers, and a backend that runs Programs.

    dev = Device("fsim")                 # the golden simulator; "fsim:small" picks a preset
    a = dev.array(np_array)              # allocate + copy in
    report = dev.run(program)            # place uops and instructions in DRAM, run, report
    result = c.read(np.int8, (m, n))

A backend executes an instruction stream already placed in the device's DRAM and
returns a `vdla.simulator.Report`. The built-in backends live in `vdla.runtime.backends`
(fsim, pysim, verilator, serial) and are imported when a Device first names them; others
register by name with `register_backend`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from ..config import Config, ConfigError, preset
from ..isa import INSN_BYTES, decode_one, encode_one
from ..simulator import ProgramError, Report
from ..simulator.validate import Validator
from .dram import Allocator, Buffer, OutOfMemoryError, check_dram_size
from .program import Program

__all__ = ["Device", "DeviceError", "BACKENDS", "BUILTIN_BACKENDS", "register_backend", "backend_factory"]

DEFAULT_DRAM = 256 << 20
#: Backends whose device-name option (``fsim:small``) names a config preset (or JSON file).
PRESET_OPTION = ("fsim", "pysim", "verilator")


class DeviceError(RuntimeError):
    """The device cannot run what it was given (unknown backend, config mismatch)."""


#: Backends registered at run time (`register_backend`): name -> factory(device, arg).
BACKENDS: dict[str, Callable[..., object]] = {}

#: The built-in backends, imported when a Device first names them: each module's ``BACKEND``
#: is its factory. Loading them lazily keeps ``import vdla`` free of the RTL and its simulators.
BUILTIN_BACKENDS: dict[str, str] = {
    "fsim": "vdla.runtime.backends.fsim",
    "pysim": "vdla.runtime.backends.pysim",
    "verilator": "vdla.runtime.backends.verilator",
    "serial": "vdla.runtime.backends.serial",
}


def register_backend(name: str, factory: Callable[..., object]) -> None:
    """Make `Device(name)` use `factory(device, arg)`; arg is the text after ':' in the name."""
    BACKENDS[name] = factory


def backend_factory(kind: str) -> Callable[..., object]:
    """The factory of backend ``kind``: a registered one, else a built-in one (imported now)."""
    if kind not in BACKENDS and kind in BUILTIN_BACKENDS:
        BACKENDS[kind] = importlib.import_module(BUILTIN_BACKENDS[kind]).BACKEND
    if kind not in BACKENDS:
        names = sorted(set(BACKENDS) | set(BUILTIN_BACKENDS))
        raise DeviceError(f"unknown device {kind!r}; available: {', '.join(names)}")
    return BACKENDS[kind]


def _check_options(kind: str, factory: Callable[..., object], options: dict[str, object]) -> None:
    """A DeviceError naming the options backend `kind` does not take (instead of a TypeError deep inside)."""
    import inspect

    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    bad = [k for k in options if k not in params or params[k].kind is inspect.Parameter.POSITIONAL_ONLY]
    if bad:
        takes = [k for k, p in list(params.items())[2:] if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        raise DeviceError(f"device {kind!r} takes no option {', '.join(map(repr, bad))}"
                          f" (it takes: {', '.join(takes) or 'none'})")


class Device:
    """``options`` go to the backend: ``waves="run.vcd"`` (pysim, verilator), ``watchdog``, ``latency``
    (pysim, verilator); a backend that does not take one names it. ``dram_size``: bytes of device
    DRAM, more than one 4 KiB page and at most 4 GiB (the core's 32-bit addresses; 256 MiB by
    default). ``close()`` (or ``with``) ends the backend's simulation and finishes its trace file."""

    def __init__(self, backend: str = "fsim", config: Config | str | None = None, dram_size: int = DEFAULT_DRAM,
                 **options: object) -> None:
        kind, _, arg = backend.partition(":")
        try:
            factory = backend_factory(kind)
        except DeviceError:
            names = sorted(set(BACKENDS) | set(BUILTIN_BACKENDS))
            raise DeviceError(f"unknown device {backend!r}; available: {', '.join(names)}") from None
        named = None
        if arg and kind in PRESET_OPTION:  # "fsim:small", "pysim:small": the text after ':' names a preset
            try:
                named = preset(arg)
            except ConfigError as e:
                raise DeviceError(f"device {backend!r}: unknown option {arg!r}: {kind} takes a config ({e})") from None
        if config is None:
            config = named or preset("default")
        self.config = preset(config) if isinstance(config, str) else config
        if named is not None and named.architecture_differences(self.config):
            raise DeviceError(
                f"device {backend!r} names config {named.name!r}, but config {self.config.name!r} was asked for "
                f"(for instance by the program): {'; '.join(named.architecture_differences(self.config))}"
            )
        dram_size = check_dram_size(dram_size)  # before numpy sees it: its errors name no option
        self.dram = np.zeros(dram_size, dtype=np.uint8)  # calloc: untouched pages cost nothing
        big = max(self.config.wgt_elem_bytes, self.config.acc_elem_bytes, 4096)
        self.allocator = Allocator(dram_size, align=1 << (big - 1).bit_length())
        self.name = backend
        if options:
            _check_options(kind, factory, options)
        self.backend = factory(self, arg, **options)
        self.last_report: Report | None = None
        self._validator: Validator | None = None

    @property
    def validator(self) -> Validator:
        """The golden simulator's checks for this device (keeps its own copy of the uop buffer)."""
        if self._validator is None:
            self._validator = Validator(self.config)
        return self._validator

    def close(self) -> None:
        """End the backend's simulation (RTL devices: the trace file is complete afterwards)."""
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
    def run(self, program: Program, strict: bool = True, validate: bool = True) -> Report:
        """Place the program's uops and instructions in DRAM, check it, run it, free them, report.

        Every program goes through `vdla.simulator.validate.Validator` before the backend
        sees it, so every device rejects an invalid program the way the golden simulator
        does (same error, same instruction index) and none runs any of it (fsim included: on
        its own it would find a bad uop index only after running what comes before).
        ``validate=False`` hands the program to the backend unchecked (to test the RTL's own
        error codes); a backend whose ``validates`` attribute is true is trusted to check itself.
        """
        if len(program) == 0:
            raise ProgramError(f"program {program.name!r} is empty: it needs at least a FINISH")
        diff = program.config.architecture_differences(self.config)
        if diff:
            raise DeviceError(
                f"program {program.name!r} was built for config {program.config.name!r}, which {self!r} "
                f"(config {self.config.name!r}) cannot run: {'; '.join(diff)}"
            )
        segments: list[Buffer] = []
        reserved: list[int] = []
        try:
            for k, (addr, blob) in enumerate(program.data):
                try:
                    self.allocator.reserve(addr, len(blob))
                except OutOfMemoryError as e:  # which segment of which program, not only the range
                    raise OutOfMemoryError(f"program {program.name!r}: data segment {k} ({len(blob)} bytes at "
                                           f"{addr:#x}): {e}") from None
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
            if validate and not getattr(self.backend, "validates", False):
                self.validator.check(self.dram, ibuf.addr, len(insns))
            self.last_report = self.backend.execute(self, ibuf.addr, len(insns), strict)
            return self.last_report
        finally:
            for buf in segments:
                buf.free()
            for addr in reserved:
                self.allocator.free(addr)
