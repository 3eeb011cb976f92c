"""The built CPU function: a JIT-compiled kernel callable on numpy arrays, or object code for another CPU.

:func:`build_function` turns a function lowered for ``llvm`` into LLVM IR
(:mod:`.codegen`), then either JIT-compiles it for the host (:mod:`.jit`) and wraps it
as a :class:`BuiltFunction`, or, for another CPU, compiles it ahead of time
(:func:`.target.cross_compile`). The callable takes numpy arrays in argument order (an
optional leading device argument is accepted and ignored on the CPU, to match
``f(dev, a, b, c)``), checks their shapes, dtypes and layout, binds symbolic sizes, and
runs the kernel in place on them.
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
from ...tir.visitor import substitute
from . import jit
from .codegen import generate
from .target import CrossModule, Target, cross_compile

_counter = itertools.count()


class ArgumentError(TypeError):
    """A built function was called with arrays of the wrong number, shape, dtype or layout."""


def _ctype(dtype: str) -> Any:
    return {
        "bool": ctypes.c_bool,
        "int8": ctypes.c_int8,
        "int16": ctypes.c_int16,
        "int32": ctypes.c_int32,
        "int64": ctypes.c_int64,
        "uint8": ctypes.c_uint8,
        "uint16": ctypes.c_uint16,
        "uint32": ctypes.c_uint32,
        "uint64": ctypes.c_uint64,
        "float32": ctypes.c_float,
        "float64": ctypes.c_double,
    }[dtype]


class BuiltFunction:
    """A compiled kernel: call it with numpy arrays (outputs are written in place)."""

    def __init__(self, func: PrimFunc, symbol: str, llvm_ir: str, compiled: jit.Compiled) -> None:
        self.lowered = func
        self.name = func.name
        self.symbol = symbol
        self.llvm_ir = llvm_ir
        self.optimized_ir = compiled.optimized_ir
        self._compiled = compiled
        self.shape_vars: list[Var] = list(func.attrs.get("shape_vars", []))
        argtypes = []
        for p in list(func.params) + self.shape_vars:
            argtypes.append(ctypes.c_void_p if isinstance(p, Buffer) else _ctype(p.dtype))
        self._cfunc = ctypes.CFUNCTYPE(None, *argtypes)(compiled.address(symbol))

    def get_source(self, fmt: str = "ll") -> str:
        """``"ll"`` (as generated), ``"opt"`` (after O3) or ``"asm"`` (host assembly)."""
        if fmt == "ll":
            return self.llvm_ir
        if fmt == "opt":
            return self.optimized_ir
        if fmt in ("asm", "s"):
            return self._compiled.assembly()
        raise ValueError(f"unknown source format {fmt!r}; use 'll', 'opt' or 'asm'")

    def __repr__(self) -> str:
        sig = ", ".join(getattr(p, "name", "?") for p in self.lowered.params)
        return f"<BuiltFunction {self.name}({sig}) target=llvm>"

    def __call__(self, *args: Any) -> None:
        params = self.lowered.params
        if len(args) == len(params) + 1 and not isinstance(args[0], np.ndarray | int | float | np.generic):
            args = args[1:]  # f(dev, a, b, c): the device is the host CPU here
        if len(args) != len(params):
            names = ", ".join(getattr(p, "name", "?") for p in params)
            raise ArgumentError(f"{self.name}() takes {len(params)} arguments ({names}), got {len(args)}")
        bound: dict[Var, int] = {}
        cargs: list[Any] = []
        arrays: list[tuple[str, np.ndarray]] = []
        for k, (p, a) in enumerate(zip(params, args, strict=True)):
            if isinstance(p, Buffer):
                cargs.append(self._check_array(k, p, a, bound, arrays))
            else:
                if not isinstance(a, int | float | np.generic):
                    raise ArgumentError(f"argument {k} ({p.name!r}) must be a Python number, got {type(a).__name__}")
                bound[p] = a  # type: ignore[assignment]
                cargs.append(a)
        for k, (p, a) in enumerate(zip(params, args, strict=True)):
            if isinstance(p, Buffer):
                self._check_shape(k, p, a, bound)
        for v in self.shape_vars:
            cargs.append(bound[v])
        for (n1, a1), (n2, a2) in itertools.combinations(arrays, 2):
            if np.may_share_memory(a1, a2):
                raise ArgumentError(f"arguments {n1!r} and {n2!r} share memory; pass distinct arrays")
        self._cfunc(*cargs)
        err = jit.take_alloc_failure()
        if err is not None:
            raise err

    def _check_array(self, k: int, p: Buffer, a: Any, bound: dict[Var, int], arrays: list[Any]) -> int:
        if not isinstance(a, np.ndarray):
            raise ArgumentError(f"argument {k} ({p.name!r}) must be a numpy array, got {type(a).__name__}")
        want = np.dtype(p.dtype)
        if a.dtype != want:
            raise ArgumentError(f"argument {k} ({p.name!r}): expected dtype {p.dtype}, got {a.dtype}")
        if a.ndim != len(p.shape):
            raise ArgumentError(f"argument {k} ({p.name!r}): expected {len(p.shape)} dimension(s), got shape {a.shape}")
        if not a.flags.c_contiguous:
            raise ArgumentError(f"argument {k} ({p.name!r}) must be C-contiguous (use np.ascontiguousarray)")
        for d, (s, n) in enumerate(zip(p.shape, a.shape, strict=True)):
            if isinstance(s, Var) and s not in bound:
                bound[s] = n
            elif isinstance(s, Var) and bound[s] != n:
                raise ArgumentError(
                    f"argument {k} ({p.name!r}): dimension {d} is {n} but {s.name!r} was bound to {bound[s]} "
                    "by an earlier argument"
                )
        arrays.append((p.name, a))
        return a.ctypes.data

    def _check_shape(self, k: int, p: Buffer, a: np.ndarray, bound: dict[Var, int]) -> None:
        want = []
        for s in p.shape:
            if isinstance(s, IntImm):
                want.append(s.value)
                continue
            v = simplify_expr(substitute(s, {var: IntImm(int(x), var.dtype) for var, x in bound.items()}))
            want.append(v.value if isinstance(v, IntImm) else None)
        if any(w is not None and w != n for w, n in zip(want, a.shape, strict=True)):
            shown = tuple("?" if w is None else w for w in want)
            raise ArgumentError(f"argument {k} ({p.name!r}): expected shape {shown}, got {a.shape}")


def build_function(func: PrimFunc, tgt: Target, opt_level: int = 3) -> BuiltFunction | CrossModule:
    """LLVM IR for ``func``, JIT-compiled for the host or cross-compiled for ``tgt``."""
    for p in func.params:
        if not isinstance(p, Buffer):
            dtypes.check(p.dtype)
    symbol = f"vdla_{_safe(func.name)}_{next(_counter)}"
    module = generate(func, symbol)
    text = str(module)
    fingerprint.record("llvm", func.name, text.replace(symbol, "SYMBOL") + "\n" + str(tgt))
    if not tgt.is_host():
        return cross_compile(func, text, symbol, tgt, opt_level)
    compiled = jit.compile_module(text, opt_level)
    return BuiltFunction(func, symbol, text, compiled)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
