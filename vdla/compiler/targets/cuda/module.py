"""The built GPU function: PTX for every kernel, and a callable that launches them in order.

:func:`build_function` splits a function lowered for ``cuda`` into kernels
(:mod:`.lower`), generates them into one NVPTX module (:mod:`.codegen`) and emits PTX for
the target's architecture. The :class:`CUDAModule` it returns holds the PTX
(``get_source("ptx")``), the LLVM IR, and each kernel's launch shape. Calling it with numpy
arrays (copied to the GPU and the outputs back) or :class:`~.runtime.DeviceArray` s checks
every argument's shape and dtype before anything touches a GPU, then loads the PTX and
launches; with no GPU it raises :class:`~.runtime.NoCudaDevice`.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import numpy as np

from ... import fingerprint
from ...tir import dtypes
from ...tir.nodes import Buffer, IntImm, PrimFunc, Var
from ...tir.passes.simplify import simplify_expr
from ...tir.printer import to_str
from ...tir.visitor import substitute
from ..llvm.module import ArgumentError, BuiltFunction
from . import codegen
from .lower import DeviceModule, Kernel, split_host_device
from .target import CudaTarget

_counter = itertools.count()


class CUDAModule:
    """A function compiled for the GPU: call it like a CPU-built one (numpy arrays in argument order)."""

    def __init__(self, func: PrimFunc, dev: DeviceModule, target: CudaTarget, llvm_ir: str, optimized_ir: str,
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

    def __repr__(self) -> str:
        sig = ", ".join(getattr(p, "name", "?") for p in self.lowered.params)
        return f"<CUDAModule {self.name}({sig}) target={self.target} kernels={len(self.kernels)}>"

    # ------------------------------------------------------------------ calling
    def check_args(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[Var, int]]:
        """Check the arguments' number, shapes and dtypes (no GPU needed); bind symbolic sizes."""
        from .runtime import DeviceArray

        params = self.lowered.params
        if len(args) == len(params) + 1 and not isinstance(args[0], np.ndarray | DeviceArray | int | float | np.generic):
            args = args[1:]  # f(dev, a, b, c)
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

    def __call__(self, *args: Any) -> None:
        self._run(args, sync=True)

    def _run(self, args: tuple[Any, ...], sync: bool) -> None:
        """Check, copy numpy arrays in, launch every kernel (waiting after each when ``sync``, so
        a fault names its kernel) and copy numpy outputs back."""
        args, bound = self.check_args(args)
        from .runtime import CTYPES, DeviceArray, get_device

        dev = get_device(0)
        mod = dev.load(self._key, self.ptx)
        env: dict[Any, Any] = {}
        copies: list[tuple[np.ndarray, DeviceArray]] = []
        for p, a in zip(self.lowered.params, args, strict=True):
            if isinstance(p, Buffer):
                if isinstance(a, DeviceArray):
                    env[p] = a
                else:
                    d = DeviceArray(dev, a.shape, a.dtype).copyfrom(a)
                    env[p] = d
                    copies.append((a, d))
            else:
                env[p] = a
        for v in self.shape_vars:
            env[v] = bound[v]
        sizes = {v: IntImm(int(x), v.dtype) for v, x in bound.items()}
        for t in self.device_module.temps:
            shape = [_eval(s, sizes, t.name) for s in t.shape]
            env[t] = DeviceArray(dev, tuple(shape), t.dtype)
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
            dev.launch(dev.function(mod, k.name), k.name, grid, k.block, values, types)
            if sync or copies:
                dev.synchronize(k.name)
        for host, d in copies:
            host[...] = d.numpy()

    def time_evaluator(self, number: int = 10) -> Any:
        """``f(*arrays) -> mean seconds`` of the kernels (inputs copied to the GPU once), by CUDA events."""
        from .runtime import get_device

        def run(*args: Any) -> float:
            from .runtime import to_device

            dev_args = tuple(to_device(a) if isinstance(a, np.ndarray) else a for a in args)
            self.check_args(dev_args)
            return get_device(0).time(lambda: self._run(dev_args, sync=False), number)

        return run


def _eval(e: Any, sizes: dict[Var, IntImm], what: str) -> int:
    v = simplify_expr(substitute(e, sizes))
    if not isinstance(v, IntImm):
        raise ArgumentError(f"{what}: cannot evaluate extent {e} from the argument shapes")
    return v.value


def build_function(func: PrimFunc, target: CudaTarget, opt_level: int = 3) -> CUDAModule:
    """Split ``func`` into kernels, generate NVPTX and emit PTX for ``target``'s architecture."""
    for p in func.params:
        if not isinstance(p, Buffer):
            dtypes.check(p.dtype)
    dev = split_host_device(func, target)
    module, math = codegen.generate(dev)
    text = str(module)
    fingerprint.record("cuda", func.name, text + "\n" + str(target))
    opt, ptx = codegen.compile_ptx(text, math, target, opt_level, tuple(k.name for k in dev.kernels))
    return CUDAModule(func, dev, target, text, opt, ptx)
