"""What TVM calls a runtime Module, for vdla's built functions: ``f.entry_name``,
``f.get_function(name)``, ``f.time_evaluator(name, dev, number, repeat)``,
``f.export_library(path)`` and ``vdla.runtime.load_module(path)``.

:class:`ModuleMixin` is shared by the CPU function (:mod:`vdla.compiler.targets.llvm.module`)
and the accelerator function (:mod:`vdla.compiler.targets.vdla.module`). Loading goes through
a registry keyed by the file's 8-byte magic, which each built-function kind fills when it
is imported, so the runtime loads files without importing the compiler itself.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BenchmarkResult", "DeviceSourceModule", "ModuleMixin", "ModuleLoadError", "register_loader", "load_module", "time_calls",
           "enabled"]


class ModuleLoadError(ValueError):
    """A file that is not a module vdla can load (the message names the file and what it is)."""


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per call of each repeat (TVM's ``BenchmarkResult``: ``.mean``, ``.median`` ...)."""

    results: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    def __str__(self) -> str:
        ms = [1e3 * r for r in (self.mean, self.median, self.max, self.min, self.std)]
        return ("Execution time summary:\n mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)\n"
                + "".join(f"{m:>12.4f} " for m in ms))


def time_calls(call: Callable[..., Any], number: int, repeat: int, min_repeat_ms: float = 0,
               device_seconds: Callable[[], float | None] | None = None) -> Callable[..., BenchmarkResult]:
    """A function that runs ``call(*args)`` ``number`` times per repeat, ``repeat`` times, and reports
    seconds per call. ``device_seconds()`` (if it gives a number) is the device's own time of the
    last call -- a simulator's cycle model -- used instead of the host's clock."""
    if number < 1 or repeat < 1:
        raise ValueError(f"time_evaluator: number ({number}) and repeat ({repeat}) must be >= 1")

    def evaluate(*args: Any) -> BenchmarkResult:
        results = []
        for _ in range(repeat):
            n = number
            while True:
                dev_total = 0.0
                t0 = time.perf_counter()
                for _ in range(n):
                    call(*args)
                    d = device_seconds() if device_seconds else None
                    dev_total += d if d is not None else 0.0
                host = time.perf_counter() - t0
                if host * 1e3 >= min_repeat_ms or n >= 1 << 20:
                    break
                n *= 2  # TVM's rule: grow `number` until a repeat lasts min_repeat_ms
            d = device_seconds() if device_seconds else None
            results.append((dev_total if d is not None else host) / n)
        return BenchmarkResult(tuple(results))

    return evaluate


class ModuleMixin:
    """TVM's Module methods over a built function's ``__call__``, ``name`` and ``save``."""

    name: str

    @property
    def entry_name(self) -> str:
        return self.name

    @property
    def type_key(self) -> str:
        return type(self).__name__

    @property
    def imported_modules(self) -> list[Any]:
        return []

    def get_function(self, name: str, query_imports: bool = False) -> Any:
        if name not in (self.name, "__tvm_main__", "default_function", "main"):
            raise AttributeError(f"module {self.name!r} has no function {name!r} (it holds {self.name!r})")
        return self

    def __getitem__(self, name: str) -> Any:
        return self.get_function(name)

    def _device_seconds(self) -> float | None:
        """The device's time of the last call, or None to use the host clock."""
        return None

    def time_evaluator(self, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **_: Any) -> Callable[..., BenchmarkResult]:
        """Time ``func_name`` (TVM's signature; ``dev`` is where its arrays live)."""
        fn = self.get_function(func_name)
        return time_calls(fn, number, repeat, min_repeat_ms, self._device_seconds)

    def save(self, path: str | Path, fmt: str = "") -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def export_library(self, path: str | Path, fcompile: Any = None, **_: Any) -> None:
        """Write the module to ``path`` in vdla's own file format (whatever the extension, e.g. ``.so``);
        :func:`load_module` reads it back without recompiling the schedule."""
        if fcompile is not None:
            raise ModuleLoadError(
                "export_library: fcompile is not supported; vdla writes its own module file that load_module reads"
            )
        self._write_module(Path(path))

    def _write_module(self, path: Path) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class DeviceSourceModule:
    """The device part of a GPU build, as TVM's ``f.imported_modules[0]`` is: ``get_source()``
    gives its code (PTX for vdla's cuda target, which generates PTX rather than CUDA C) and
    ``type_key`` its kind; the kernels are launched through the host module that imports it."""

    def __init__(self, type_key: str, source: str, fmt: str, functions: list[str]) -> None:
        self.type_key = type_key
        self.format = fmt
        self.functions = list(functions)
        self._source = source

    def get_source(self, fmt: str = "") -> str:
        """The device code; ``fmt`` may name its format (``"ptx"``; ``""`` or ``"cuda"`` for the default)."""
        if fmt not in ("", self.format, self.type_key):
            raise ValueError(f"{self.type_key} device module: no {fmt!r} source; it holds {self.format}")
        return self._source

    @property
    def imported_modules(self) -> list[Any]:
        return []

    def __repr__(self) -> str:
        return f"<{self.type_key} device module: {', '.join(self.functions)}>"


_LOADERS: dict[bytes, tuple[str, Callable[[bytes, str], Any]]] = {}


def register_loader(magic: bytes, what: str, loader: Callable[[bytes, str], Any]) -> None:
    """Make :func:`load_module` read files starting with ``magic`` with ``loader(blob, source)``."""
    if len(magic) != 8:
        raise ValueError(f"magic must be 8 bytes, got {magic!r}")
    _LOADERS[magic] = (what, loader)


def load_module(path: str | Path, fmt: str = "") -> Any:
    """Load a module written by ``export_library``/``save`` (TVM's ``tvm.runtime.load_module``)."""
    p = Path(path)
    if not p.is_file():
        raise ModuleLoadError(f"load_module: no such file {str(p)!r}")
    blob = p.read_bytes()
    entry = _LOADERS.get(blob[:8])
    if entry is None:
        kinds = ", ".join(w for w, _ in _LOADERS.values()) or "none registered (import vdla first)"
        raise ModuleLoadError(
            f"load_module: {str(p)!r} is not a vdla module file (starts with {blob[:8]!r}); vdla loads "
            f"the files its own export_library/save write ({kinds}), not native shared libraries"
        )
    return entry[1](blob, str(p))


def enabled(target: str) -> bool:
    """Whether this build supports ``target`` (TVM's ``tvm.runtime.enabled``): the CPU and the accelerator
    yes, ``cuda`` when a GPU is there, ``rpc`` no (vdla has none)."""
    from .ndarray import cuda

    kind = str(target).split()[0] if str(target).split() else ""
    if kind in ("cuda", "gpu", "nvptx"):
        return cuda(0).exist
    return kind in ("llvm", "cpu", "c", "ext_dev", "vdla", "vta")
