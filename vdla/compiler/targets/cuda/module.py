"""The built GPU function: PTX for every kernel, and a callable that launches them in order.

:func:`build_function` splits a function lowered for ``cuda`` into kernels
(:mod:`.lower`), generates them into one NVPTX module (:mod:`.codegen`) and emits PTX for
the target's architecture. The :class:`CUDAModule` it returns holds the PTX
(``get_source("ptx")``), the LLVM IR, and each kernel's launch shape. Calling it with numpy
arrays or CPU NDArrays (copied to the GPU and the outputs back), GPU NDArrays
(``vdla.nd.array(x, vdla.cuda(0))``, used in place) or :class:`~vdla.runtime.cuda_driver.DeviceArray` s checks
every argument's shape and dtype before anything touches a GPU, then loads the PTX and
launches; with no GPU it raises :class:`~vdla.runtime.cuda_driver.NoCudaDevice`. TVM's Module
methods apply (:class:`~vdla.runtime.module.ModuleMixin`); ``time_evaluator`` times with CUDA events.
"""

from __future__ import annotations

import ctypes
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ....runtime.module import BenchmarkResult, DeviceSourceModule, ModuleLoadError, ModuleMixin
from ... import fingerprint
from ...tir import dtypes
from ...tir.nodes import Buffer, IntImm, PrimFunc, Var
from ...tir.passes.simplify import simplify_expr
from ...tir.printer import to_str
from ...tir.visitor import substitute
from ..llvm.module import ArgumentError, BuiltFunction
from . import codegen
from .lower import DeviceModule, Kernel, lower_intrinsics, split_host_device
from .target import CudaLimits

_counter = itertools.count()
#: the kernel names NVPTX emits and ptxas assembles (other characters abort LLVM or fail in ptxas)
_PTX_NAME = re.compile(r"[A-Za-z_][\w$]*", re.ASCII)


class CUDAModule(ModuleMixin):
    """A function compiled for the GPU: call it like a CPU-built one (numpy arrays in argument order)."""

    def __init__(self, func: PrimFunc, dev: DeviceModule, target: CudaLimits, llvm_ir: str, optimized_ir: str,
                 ptx: str) -> None:  # fmt: skip
        self.lowered = func
        self.name = func.name
        self.device_module = dev
        self.kernels: list[Kernel] = dev.kernels
        self.target = target
        self.llvm_ir = llvm_ir
        self.optimized_ir = optimized_ir
        self.ptx = ptx
        self.shape_vars: list[Var] = list(func.attrs.get("shape_vars", []))
        self._key = next(_counter)

    def get_source(self, fmt: str = "ptx") -> str:
        """``"ptx"``, ``"ll"`` (as generated), ``"opt"`` (after O3) or ``"tir"`` (the kernels' loop IR)."""
        if fmt in ("ptx", "asm", "s"):
            return self.ptx
        if fmt == "ll":
            return self.llvm_ir
        if fmt == "opt":
            return self.optimized_ir
        if fmt == "tir":
            return "\n\n".join(f"kernel {k.name} grid={k.grid} block={k.block}\n{to_str(k.body)}" for k in self.kernels)
        raise ValueError(f"unknown source format {fmt!r}; use 'ptx', 'll', 'opt' or 'tir'")

    @property
    def imported_modules(self) -> list[Any]:
        """TVM's host/device split: ``f.imported_modules[0].get_source()`` is the kernels' PTX."""
        return [DeviceSourceModule("cuda", self.ptx, "ptx", [k.name for k in self.kernels])]

    def __repr__(self) -> str:
        sig = ", ".join(getattr(p, "name", "?") for p in self.lowered.params)
        return f"<CUDAModule {self.name}({sig}) target={self.target} kernels={len(self.kernels)}>"

    # ------------------------------------------------------------------ calling
    def check_args(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[Var, int]]:
        """Check the arguments' number, shapes and dtypes (no GPU needed); bind symbolic sizes."""
        from ....runtime.cuda_driver import DeviceArray

        params = self.lowered.params
        if len(args) != len(params):
            names = ", ".join(getattr(p, "name", "?") for p in params)
            raise ArgumentError(f"{self.name}() takes {len(params)} arguments ({names}), got {len(args)}")
        bound: dict[Var, int] = {}
        arrays: list[Any] = []
        for k, (p, a) in enumerate(zip(params, args, strict=True)):
            if isinstance(p, Buffer):
                if isinstance(a, DeviceArray):
                    if a.dtype != np.dtype(p.dtype):
                        raise ArgumentError(f"argument {k} ({p.name!r}): expected dtype {p.dtype}, got {a.dtype}")
                    if a.ndim != len(p.shape):
                        raise ArgumentError(
                            f"argument {k} ({p.name!r}): expected {len(p.shape)} dimension(s), got shape {a.shape}"
                        )
                    for s, n in zip(p.shape, a.shape, strict=True):
                        if isinstance(s, Var):
                            bound.setdefault(s, n)
                else:
                    BuiltFunction._check_array(self, k, p, a, bound, arrays)  # type: ignore[arg-type]
            else:
                if not isinstance(a, int | float | np.generic):
                    raise ArgumentError(f"argument {k} ({p.name!r}) must be a Python number, got {type(a).__name__}")
                bound[p] = a  # type: ignore[assignment]
        for k, (p, a) in enumerate(zip(params, args, strict=True)):
            if isinstance(p, Buffer):
                BuiltFunction._check_shape(self, k, p, a, bound)  # type: ignore[arg-type]
        # kernels take their buffers as noalias: two arguments may not share GPU memory
        spans = [(p.name, a.ptr, a.ptr + a.nbytes) for p, a in zip(params, args, strict=True) if isinstance(a, DeviceArray)]
        for i, (n1, lo1, hi1) in enumerate(spans):
            for n2, lo2, hi2 in spans[i + 1 :]:
                if lo1 < hi2 and lo2 < hi1:
                    raise ArgumentError(f"arguments {n1!r} and {n2!r} share GPU memory; pass distinct arrays")
        return args, bound

    def prepare(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Callable[[], None]], int]:
        """Take the call's arguments as users pass them: drop a leading device (``f(dev, a, b, c)``),
        use a GPU NDArray's memory in place, and give any other array with ``.numpy()`` (a CPU
        NDArray, say) as a host array to copy in, with the write-back into it. Returns the
        arguments (numpy arrays, device arrays, numbers), the write-backs and the GPU index."""
        from ....runtime.cuda_driver import DeviceArray
        from ....runtime.ndarray import CudaNDArray, DLDevice, host_view, is_array_like

        params = self.lowered.params
        index: int | None = None
        if len(args) == len(params) + 1 and isinstance(args[0], DLDevice):
            if args[0].kind != "cuda":
                raise ArgumentError(f"{self.name}() was built for the GPU (cuda), not for {args[0]}; use vdla.cuda(0)")
            index, args = args[0].device_id, args[1:]
        out: list[Any] = []
        backs: list[Callable[[], None]] = []
        for k, a in enumerate(args):
            if isinstance(a, CudaNDArray):
                a = a.device_array
            elif is_array_like(a) and not isinstance(a, DeviceArray):
                a, back = host_view(a)
                if back is not None:
                    backs.append(back)
            if isinstance(a, DeviceArray):
                if index is None:
                    index = a.device.index
                elif a.device.index != index:
                    name = getattr(params[k], "name", "?") if k < len(params) else "?"
                    raise ArgumentError(f"argument {k} ({name!r}) is on cuda({a.device.index}), the call runs on "
                                        f"cuda({index}); copy it over")  # fmt: skip
            out.append(a)
        return tuple(out), backs, index or 0

    def __call__(self, *args: Any) -> None:
        args, backs, index = self.prepare(args)
        self._run(args, sync=True, index=index)
        for back in backs:
            back()  # results into the caller's CPU NDArrays

    def _run(self, args: tuple[Any, ...], sync: bool, index: int = 0) -> None:
        """Check, copy numpy arrays in, launch every kernel (waiting after each when ``sync``, so
        a fault names its kernel) and copy numpy outputs back."""
        args, bound = self.check_args(args)  # before anything touches a GPU
        from ....runtime.cuda_driver import DeviceArray, get_device

        dev = get_device(index)
        copies: list[tuple[np.ndarray, DeviceArray]] = []
        dargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                d = DeviceArray(dev, a.shape, a.dtype).copyfrom(a)
                copies.append((a, d))
                a = d
            dargs.append(a)
        launches, _temps = self._launches(tuple(dargs), bound, index)
        for launch in launches:
            dev.launch(*launch)
            if sync or copies:
                dev.synchronize(launch[1])
        for host, d in copies:
            host[...] = d.numpy()

    def launches(self, args: tuple[Any, ...], index: int = 0) -> tuple[list[tuple[Any, ...]], list[Any]]:
        """The kernel launches of one call on GPU ``index``, its arrays already on that GPU (no copy):
        ``(function, name, grid, block, values, types)`` per kernel, in order, and the temporary
        arrays they use (keep them alive as long as the launches: a CUDA graph replays them)."""
        args, bound = self.check_args(args)
        return self._launches(args, bound, index)

    def _launches(self, args: tuple[Any, ...], bound: dict[Var, int],
                  index: int) -> tuple[list[tuple[Any, ...]], list[Any]]:
        from ....runtime.cuda_driver import CTYPES, DeviceArray, get_device

        dev = get_device(index)
        mod = dev.load(self._key, self.ptx)
        env: dict[Any, Any] = {}
        for p, a in zip(self.lowered.params, args, strict=True):
            if isinstance(p, Buffer) and not isinstance(a, DeviceArray):
                raise ArgumentError(f"{self.name}(): argument {p.name!r} is not on the GPU")
            env[p] = a
        for v in self.shape_vars:
            env[v] = bound[v]
        sizes = {v: IntImm(int(x), v.dtype) for v, x in bound.items()}
        temps = []
        for t in self.device_module.temps:
            shape = [_eval(s, sizes, t.name) for s in t.shape]
            env[t] = DeviceArray(dev, tuple(shape), t.dtype)
            temps.append(env[t])
        out = []
        for k in self.kernels:
            grid = tuple(_eval(g, sizes, k.name) for g in k.grid)
            if any(g <= 0 for g in grid):
                continue  # an empty launch (a zero-sized input)
            values, types = [], []
            for p in k.params:
                if isinstance(p, Buffer):
                    values.append(env[p].ptr)
                    types.append(ctypes.c_void_p)  # a device pointer
                else:
                    values.append(env[p])
                    types.append(CTYPES[p.dtype])
            out.append((dev.function(mod, k.name), k.name, grid, k.block, values, types))
        return out, temps

    def time_evaluator(self, func_name: str = "", dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **_: Any) -> Callable[..., BenchmarkResult]:
        """TVM's ``f.time_evaluator(name, vdla.cuda(0), number, repeat, min_repeat_ms)(*args)``: seconds per
        call of the kernels, by CUDA events, with the inputs copied to the GPU once (not timed);
        ``number`` doubles until a repeat lasts ``min_repeat_ms``."""
        from ....runtime.cuda_driver import get_device, to_device
        from ....runtime.ndarray import DLDevice

        if func_name:
            self.get_function(func_name)
        if number < 1 or repeat < 1:
            raise ValueError(f"time_evaluator: number ({number}) and repeat ({repeat}) must be >= 1")
        if isinstance(dev, DLDevice) and dev.kind != "cuda":
            raise ArgumentError(f"time_evaluator: {self.name} was built for the GPU (cuda), not for {dev}")

        def evaluate(*args: Any) -> BenchmarkResult:
            host, _, index = self.prepare(args)
            if isinstance(dev, DLDevice):
                index = dev.device_id
            self.check_args(host)  # wrong shapes are named before the GPU is asked for
            gpu = get_device(index)
            on_gpu = tuple(to_device(a, index) if isinstance(a, np.ndarray) else a for a in host)
            results = []
            for _ in range(repeat):
                n = number
                while True:
                    t = gpu.time(lambda: self._run(on_gpu, sync=False, index=index), n)
                    if t * n * 1e3 >= min_repeat_ms or n >= 1 << 20:
                        break
                    n *= 2
                results.append(t)
            return BenchmarkResult(tuple(results))

        return evaluate

    # -- files: the PTX and LLVM IR can be written; a module file that load_module reads is the CPU's and the accelerator's
    def save(self, path: str | Path, fmt: str = "") -> None:
        """``.ptx`` (or ``.s``) writes the PTX, ``.ll`` the LLVM IR."""
        p = Path(path)
        ext = fmt or p.suffix.lstrip(".")
        if ext in ("ptx", "s", "ll"):
            p.write_text(self.llvm_ir if ext == "ll" else self.ptx)
            return
        self._write_module(p)

    def _write_module(self, path: Path) -> None:
        raise ModuleLoadError(
            f"export: {self.name} is a cuda module; save it as .ptx or .ll (f.save('{self.name}.ptx')) -- "
            "vdla's module files (export_library/load_module) hold CPU and accelerator functions"
        )


def _eval(e: Any, sizes: dict[Var, IntImm], what: str) -> int:
    v = simplify_expr(substitute(e, sizes))
    if not isinstance(v, IntImm):
        raise ArgumentError(f"{what}: cannot evaluate extent {e} from the argument shapes")
    return v.value


def build_function(func: PrimFunc, target: CudaLimits, opt_level: int = 3,
                   kinds: tuple[str, ...] = ("cuda",)) -> CUDAModule:  # fmt: skip
    """Split ``func`` into kernels, generate NVPTX and emit PTX for ``target``'s architecture
    (the users' intrinsic lowering rules for the target ``kinds`` applied first)."""
    if not _PTX_NAME.fullmatch(func.name):  # NVPTX would abort the process on some
        raise ValueError(f"cuda: function name {func.name!r} has characters a PTX symbol cannot have "
                         "(use letters, digits, '_' and '$', not a digit first)")
    for p in func.params:
        if not isinstance(p, Buffer):
            dtypes.check(p.dtype)
    func = lower_intrinsics(func, kinds)
    dev = split_host_device(func, target)
    module, math = codegen.generate(dev)
    text = str(module)
    fingerprint.record("cuda", func.name, text + "\n" + str(target))
    opt, ptx = codegen.compile_ptx(text, math, target, opt_level, tuple(k.name for k in dev.kernels))
    return CUDAModule(func, dev, target, text, opt, ptx)
