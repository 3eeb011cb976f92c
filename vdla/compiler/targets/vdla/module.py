"""The built VDLA function: instruction stream, micro-ops and the DRAM layout of the
arguments; callable on any Device, saved and loaded without recompiling.

    f = vdla.build(s, [data, kernel, out], target="vdla", config=cfg)
    report = f(dev, data_np, kernel_np, out_np)     # out_np is filled in place
    print(f.disassemble()); f.save("conv.vdlaf"); g = VDLAFunction.load("conv.vdlaf")

Instructions that address an argument carry its element offset; each call allocates the
arguments in the device's DRAM and adds their base addresses (relocation).

As TVM/VTA write it, the arrays may be NDArrays on ``vdla.ext_dev()`` and the device left
out: ``f(a_nd, b_nd, c_nd)`` runs on the ext_dev backend (``fsim`` unless
``vdla.runtime.ndarray.set_ext_dev_backend`` says otherwise). ``vdla.runtime.load_module``
reads a saved function back; ``time_evaluator`` reports the cycle model's time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ....config import Config
from ....isa import Mem, elem_bytes, encode
from ....runtime import Program, container
from ....runtime.module import ModuleMixin, register_loader
from ....runtime.ndarray import DLDevice, ext_dev, host_view, is_array_like, record_ext_dev_run
from ... import fingerprint
from ...tir.nodes import Buffer, CallExtern, PrimFunc
from ...tir.visitor import walk
from .codegen import generate
from .env import VDLAError
from .sync import TokenReport, check_tokens

MAGIC = b"VDLAFUNC"
VERSION = 1


class VDLAFileError(ValueError):
    """A built-function file is not one, is from another version, truncated or corrupt."""


def _is_device(x: Any) -> bool:
    """A vdla Device (anything with ``run``) or a DLDevice (``vdla.ext_dev()``): what ``f(dev, ...)`` takes first."""
    return isinstance(x, DLDevice) or callable(getattr(x, "run", None))


@dataclass
class ArgLayout:
    name: str
    shape: tuple[int, ...]
    dtype: str
    output: bool  # written by the program (copied back after a call)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


class VDLAFunction(ModuleMixin):
    def __init__(self, name: str, program: Program, args: list[ArgLayout], relocs: list[tuple[int, int, Mem]],
                 lowered: Any = None, info: dict[str, Any] | None = None) -> None:
        self.name = name
        self.program = program
        self.args = args
        self.relocs = [(int(i), int(a), Mem(m)) for i, a, m in relocs]
        self.lowered = lowered
        self.info = dict(info or {})
        self.last_report: Any = None
        self._decoded = program.instructions()

    @property
    def config(self) -> Config:
        return self.program.config

    def __repr__(self) -> str:
        sig = ", ".join(f"{a.name}: {a.dtype}{list(a.shape)}" for a in self.args)
        return (f"<VDLAFunction {self.name}({sig}) config={self.config.name} "
                f"{len(self.program)} instructions, {self.program.uops.size} uops>")

    # -- inspection -------------------------------------------------------------------
    def disassemble(self) -> str:
        """The instruction stream with dependency flags and micro-ops (DRAM offsets relative to each argument)."""
        return self.program.disassemble()

    def get_source(self, fmt: str = "asm") -> str:
        if fmt in ("asm", "s"):
            return self.disassemble()
        if fmt == "ir":
            return str(self.lowered)
        if fmt == "host":
            return self.info.get("host_source", "")
        raise ValueError(f"unknown source format {fmt!r}; use 'asm', 'ir' or 'host'")

    def check_tokens(self) -> TokenReport:
        """Static token balance of the instruction stream (see :func:`sync.check_tokens`)."""
        return check_tokens(self.program)

    # -- running ------------------------------------------------------------------------
    def bind(self, addrs: list[int]) -> Program:
        """The program with the arguments at DRAM byte addresses ``addrs``."""
        insns = list(self._decoded)
        for i, a, mem in self.relocs:
            eb = elem_bytes(self.config, mem)
            if addrs[a] % eb:
                raise ValueError(f"argument {self.args[a].name!r} at {addrs[a]:#x} is not aligned to {eb} bytes")
            insns[i] = insns[i].replace(dram_base=insns[i].dram_base + addrs[a] // eb)
        p = self.program
        return Program(p.config, encode(insns, p.config), p.uops, p.uop_relocs, (), p.name)

    def __call__(self, *args: Any) -> Any:
        """``f(dev, a, b, c)`` on a Device, or ``f(a, b, c)`` (TVM's way) on the arrays' ext_dev.
        Arrays are numpy arrays or NDArrays; outputs are written into them. Returns the Report."""
        n, names = len(self.args), ", ".join(a.name for a in self.args)
        given_device = bool(args) and _is_device(args[0])
        if given_device:
            dev, arrays = args[0], args[1:]
        elif len(args) == n + 1:
            raise TypeError(f"{self.name}() takes {n} arrays ({names}); the extra first argument must be a device, "
                            f"got {type(args[0]).__name__}")
        else:
            dev, arrays = None, args
            on = [a.device for a in args if isinstance(getattr(a, "device", None), DLDevice)]
            if on:
                dev = on[0]
        if len(arrays) != n:  # say which arrays are missing (or how many are extra), not a type error on the first
            after = " after the device" if given_device else ""
            which = (f"missing {', '.join(a.name for a in self.args[len(arrays):])}" if len(arrays) < n
                     else f"{len(arrays) - n} too many")
            raise TypeError(f"{self.name}() takes {n} arrays ({names}){after}, got {len(arrays)} ({which})")
        dl_run = dev is None or isinstance(dev, DLDevice)
        if dl_run:
            dl = dev or ext_dev(0)
            if dl.kind != "ext_dev":
                raise TypeError(f"{self.name}() runs on the accelerator (vdla.ext_dev()), but its arrays are on {dl}")
            dev = dl.accelerator(self.config)
        views = [host_view(a) for a in arrays]
        report = self._run(dev, tuple(v for v, _ in views))
        if dl_run:
            record_ext_dev_run(report)
        for (_, back), a, spec in zip(views, arrays, self.args, strict=True):
            if back is not None and spec.output and is_array_like(a):
                back()
        return report

    def _device_seconds(self) -> float | None:
        return None if self.last_report is None else float(self.last_report.seconds)

    def _run(self, dev: Any, arrays: tuple[Any, ...]) -> Any:
        for k, (a, spec) in enumerate(zip(arrays, self.args, strict=True)):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"argument {k} ({spec.name!r}) must be a numpy array or an NDArray, "
                                f"got {type(a).__name__}")
            if a.shape != spec.shape or a.dtype != np.dtype(spec.dtype):
                raise TypeError(
                    f"argument {k} ({spec.name!r}): expected {spec.dtype}{list(spec.shape)}, got {a.dtype}{list(a.shape)}"
                )
        bufs = []
        try:
            for a, spec in zip(arrays, self.args, strict=True):
                bufs.append(dev.array(a, spec.name) if not spec.output else dev.alloc(spec.nbytes, spec.name))
            report = dev.run(self.bind([b.addr for b in bufs]))
            for a, spec, b in zip(arrays, self.args, bufs, strict=True):
                if spec.output:
                    a[...] = b.read(np.dtype(spec.dtype), spec.shape)
        finally:
            for b in bufs:
                b.free()
        self.last_report = report
        return report

    # -- files ----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        # the payload is the Program's own framed bytes: it carries its own version and checksum
        header = {
            "name": self.name,
            "args": [{"name": a.name, "shape": list(a.shape), "dtype": a.dtype, "output": a.output} for a in self.args],
            "relocs": [[i, a, int(m)] for i, a, m in self.relocs],
            "info": {k: v for k, v in self.info.items() if isinstance(v, int | float | str)},
        }
        return container.pack(MAGIC, VERSION, header, self.program.to_bytes())

    def save(self, path: str | Path, fmt: str = "") -> None:
        """Write the function file (any extension: TVM's ``f.save("gemm.o")`` writes this too)."""
        Path(path).write_bytes(self.to_bytes())

    def _write_module(self, path: Path) -> None:
        self.save(path)

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "function") -> VDLAFunction:
        # no payload_size: the nested Program checks its own length (and trailing bytes)
        head, prog_bytes = container.unpack(
            blob, magic=MAGIC, version=VERSION, what="built VDLA function", source=source, error=VDLAFileError,
        )
        try:
            name = str(head["name"])
            args = [ArgLayout(a["name"], tuple(a["shape"]), a["dtype"], bool(a["output"])) for a in head["args"]]
            relocs = [tuple(r) for r in head["relocs"]]
            info = dict(head.get("info", {}))
        except (ValueError, KeyError, TypeError) as e:
            raise VDLAFileError(f"{source}: corrupt header: {e}") from None
        prog = Program.from_bytes(prog_bytes, source)
        return cls(name, prog, args, relocs, None, info)  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: str | Path) -> VDLAFunction:
        return cls.from_bytes(Path(path).read_bytes(), str(path))


register_loader(MAGIC, "VDLA functions (save/export_library of a vdla build)", VDLAFunction.from_bytes)


def build_function(func: PrimFunc, cfg: Config, lower_s: float = 0.0) -> VDLAFunction:
    """Generate the program of a function lowered for VDLA and wrap it as a :class:`VDLAFunction`."""
    t1 = time.perf_counter()
    gen = generate(func, cfg)
    written = _stored(func)
    layouts = []
    for p in func.params:
        assert isinstance(p, Buffer)
        shape = tuple(int(getattr(s, "value", s)) for s in p.shape)
        layouts.append(ArgLayout(p.name, shape, p.dtype, p in written))
    t2 = time.perf_counter()
    info = {
        "lower_s": lower_s, "codegen_s": t2 - t1, "tasks": gen.tasks, "host_source": gen.host_source,
        **{f"tokens_{q}": n for q, n in gen.tokens.counts.items()},
    }
    f = VDLAFunction(func.name, gen.program, layouts, gen.relocs, func, info)
    fingerprint.record("vdla", func.name, gen.program.to_bytes() + repr((gen.relocs, layouts)).encode())
    rep = check_tokens(gen.program)
    if not rep.ok:  # pragma: no cover - plan_tokens is balanced by construction
        raise VDLAError(f"internal error: unbalanced dependency tokens\n{rep}")
    return f


def _stored(func: PrimFunc) -> set[Buffer]:
    """The argument buffers the program writes (copied back to the caller's arrays)."""
    out: set[Buffer] = set()
    for n in walk(func.body):
        if isinstance(n, CallExtern) and n.name == "VDLAStoreBuffer2D":
            out.add(n.args[1].value.buffer)
    return out
