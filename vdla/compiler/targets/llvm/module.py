"""The built CPU function: a JIT-compiled kernel callable on numpy arrays, or object code for another CPU.

:func:`build_function` turns a function lowered for ``llvm`` into LLVM IR
(:mod:`.codegen`), then either JIT-compiles it for the host (:mod:`.jit`) and wraps it
as a :class:`BuiltFunction`, or, for another CPU, compiles it ahead of time
(:func:`.target.cross_compile`). The callable takes numpy arrays in argument order (an
optional leading device argument is accepted and ignored on the CPU, to match
``f(dev, a, b, c)``), checks their shapes, dtypes and layout, binds symbolic sizes, and
runs the kernel in place on them. TVM's NDArrays (``vdla.nd.array``, or any array with
``.numpy()``) are accepted too, and the module methods of :class:`~vdla.runtime.module.ModuleMixin`
(``time_evaluator``, ``export_library``; ``vdla.runtime.load_module`` reads the file back and
JIT-compiles its LLVM IR again) apply.
"""

from __future__ import annotations

import ctypes
import dataclasses
import itertools
from pathlib import Path
from typing import Any

import numpy as np

from ....runtime import container
from ....runtime.module import BenchmarkResult, ModuleLoadError, ModuleMixin, register_loader
from ....runtime.ndarray import DLDevice, host_view, is_array_like
from ... import fingerprint
from ...tir import dtypes
from ...tir.nodes import AttrStmt, Buffer, Evaluate, IntImm, PrimFunc, Var
from ...tir.passes.partition import partition_loops
from ...tir.passes.simplify import simplify_expr
from ...tir.visitor import substitute, walk
from . import jit, timer
from .codegen import CodegenError, generate
from .packed import PackedSite, lower_packed_calls, register_site, take_error
from .target import CrossModule, LlvmOptions, cross_compile

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


MAGIC = b"VDLALLVM"
VERSION = 1


class BuiltFunction(ModuleMixin):
    """A compiled kernel: call it with numpy arrays or NDArrays (outputs are written in place)."""

    def __init__(self, func: PrimFunc, symbol: str, llvm_ir: str, compiled: jit.Compiled,
                 packed: list[PackedSite] | None = None) -> None:
        self.packed_sites = list(packed or [])
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
        # (dtype, shape) of each argument when all are buffers of constant shape: a call with
        # matching numpy arrays then skips the general checks (a 0.1 ms kernel, a ResNet-18
        # 1x1 layer, would otherwise spend 10-20% of its time in them)
        self._fixed: list[tuple[np.dtype, tuple[int, ...]]] | None = None
        if not self.shape_vars and all(isinstance(p, Buffer) and all(isinstance(d, IntImm) for d in p.shape)
                                       for p in func.params):
            try:
                self._fixed = [(np.dtype(p.dtype), tuple(d.value for d in p.shape)) for p in func.params]
            except TypeError:  # a dtype numpy has no name for: the general path explains
                self._fixed = None

    def native_entry(self) -> tuple[int, list[tuple[np.dtype, tuple[int, ...]]]] | None:
        """(address, each argument's (dtype, shape)) of a kernel whose arguments are all buffers of
        constant shape: callable natively as ``void f(ptr, ...)`` on C-contiguous, distinct arrays
        (:mod:`.sequence`); None for a kernel with scalar or symbolic-size arguments."""
        if self._fixed is None:
            return None
        return self._compiled.address(self.symbol), list(self._fixed)

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
        if self._fixed is not None and self._call_fixed(args):
            return
        params = self.lowered.params
        if (len(args) == len(params) + 1 and not isinstance(args[0], np.ndarray | int | float | np.generic)
                and not is_array_like(args[0])):
            if isinstance(args[0], DLDevice) and args[0].kind != "cpu":
                raise ArgumentError(f"{self.name}() was built for the CPU (llvm), not for {args[0]}")
            args = args[1:]  # f(dev, a, b, c): the device is the host CPU here
        views = [host_view(a) for a in args]
        self._run(tuple(v for v, _ in views))
        self._raise_run_error()
        for _, back in views:
            if back is not None:
                back()

    def _fixed_pointers(self, args: tuple[Any, ...]) -> list[int] | None:
        """The data pointers of numpy arrays of exactly the built dtypes and shapes, C-contiguous
        and distinct; None for anything else, which the general path checks and explains."""
        fixed = self._fixed
        if fixed is None or len(args) != len(fixed):
            return None
        ptrs = []
        for a, (dt, shape) in zip(args, fixed, strict=True):
            if type(a) is not np.ndarray or a.dtype != dt or a.shape != shape or not a.flags.c_contiguous:
                return None
            ptrs.append(a.ctypes.data)
        if len(args) > 1 and any(np.may_share_memory(x, y) for x, y in itertools.combinations(args, 2)):
            return None
        return ptrs

    def _call_fixed(self, args: tuple[Any, ...]) -> bool:
        """Run on arrays :meth:`_fixed_pointers` accepts; False (nothing run) for anything else."""
        ptrs = self._fixed_pointers(args)
        if ptrs is None:
            return False
        self._cfunc(*ptrs)
        self._raise_run_error()
        return True

    def time_evaluator(self, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **kw: Any) -> Any:
        """TVM's ``time_evaluator``: on arrays the fast path takes, the calls are looped and timed in
        native code (:mod:`.timer`), so Python's call overhead is not counted; otherwise as
        :class:`~vdla.runtime.module.ModuleMixin` does, a call at a time from Python."""
        generic = super().time_evaluator(func_name, dev, number, repeat, min_repeat_ms, **kw)

        def evaluate(*args: Any) -> BenchmarkResult:
            ptrs = self._fixed_pointers(args)
            if ptrs is None:
                return generic(*args)
            secs = timer.time_calls(self._compiled.address(self.symbol), ptrs, number, repeat, min_repeat_ms)
            self._raise_run_error()
            return BenchmarkResult(tuple(secs))

        return evaluate

    def _raise_run_error(self) -> None:
        """What the kernel reported while it ran: a failed allocation, else a packed call's error."""
        err = jit.take_alloc_failure() or (take_error() if self.packed_sites else None)
        if err is not None:
            raise err

    def _run(self, args: tuple[Any, ...]) -> None:
        params = self.lowered.params
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

    # -- files (TVM: f.save("x.o"), f.export_library("x.so"), vdla.runtime.load_module("x.so"))
    def save(self, path: str | Path, fmt: str = "") -> None:
        """``.o`` (host object code), ``.ll`` (LLVM IR), ``.s`` (assembly); any other name: the module file."""
        p = Path(path)
        ext = fmt or p.suffix.lstrip(".")
        if ext == "o":
            p.write_bytes(self._compiled.object_code())
        elif ext == "ll":
            p.write_text(self.llvm_ir)
        elif ext in ("s", "S"):
            p.write_text(self.get_source("asm"))
        else:
            self._write_module(p)

    def _write_module(self, path: Path) -> None:
        params = []
        for p in self.lowered.params:
            if isinstance(p, Buffer):
                params.append({"buffer": p.name, "dtype": p.dtype, "shape": [_dim(p, s) for s in p.shape]})
            else:
                params.append({"var": p.name, "dtype": p.dtype})
        head = {"name": self.name, "symbol": self.symbol, "params": params,
                "shape_vars": [[v.name, v.dtype] for v in self.shape_vars],
                "packed": [p.to_json() for p in self.packed_sites]}
        path.write_bytes(container.pack(MAGIC, VERSION, head, self.llvm_ir.encode()))

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "module") -> BuiltFunction:
        head, payload = container.unpack(blob, magic=MAGIC, version=VERSION, what="vdla CPU module", source=source,
                                         error=ModuleLoadError)
        try:
            svars = {n: Var(n, t) for n, t in head["shape_vars"]}
            params: list[Any] = []
            for p in head["params"]:
                if "buffer" in p:
                    shape = [svars[d] if isinstance(d, str) else IntImm(int(d)) for d in p["shape"]]
                    params.append(Buffer(p["buffer"], p["dtype"], shape))
                else:
                    params.append(Var(p["var"], p["dtype"]))
            name, old = str(head["name"]), str(head["symbol"])
            sites = [PackedSite.from_json(v) for v in head.get("packed", [])]
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ModuleLoadError(f"{source}: corrupt module header: {e}") from None
        # fresh symbols: the process-wide JIT may already hold ones of those names with other code
        symbol = f"vdla_{_safe(name)}_{next(_counter)}"
        text = payload.decode()
        new_sites = []
        for site in sites:
            fresh = PackedSite(f"{site.symbol}_ld{next(_counter)}", site.func, site.args)
            text = text.replace(f"@{site.symbol}(", f"@{fresh.symbol}(").replace(f"@\"{site.symbol}\"(", f"@\"{fresh.symbol}\"(")
            register_site(fresh)
            new_sites.append(fresh)
        text = text.replace(old, symbol)
        func = PrimFunc(name, params, Evaluate(IntImm(0)), {"shape_vars": list(svars.values())})
        return cls(func, symbol, text, jit.compile_module(text, 3), new_sites)

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


def build_function(func: PrimFunc, tgt: LlvmOptions, opt_level: int = 3) -> BuiltFunction | CrossModule:
    """LLVM IR for ``func``, JIT-compiled for the host or cross-compiled for ``tgt``."""
    for p in func.params:
        if not isinstance(p, Buffer):
            dtypes.check(p.dtype)
    symbol = f"vdla_{_safe(func.name)}_{next(_counter)}"
    imports = [str(n.value) for n in walk(func.body) if isinstance(n, AttrStmt) and n.key == "pragma_import_llvm"]
    func, sites = lower_packed_calls(func)
    # ragged tiles and padded borders: the guards out of the hot loops (tir.passes.partition)
    func = dataclasses.replace(func, body=partition_loops(func.body))
    if sites and not tgt.is_host():
        raise CodegenError(f"{func.name}: tir.call_packed calls Python, so it runs only on this machine (llvm), "
                           f"not on {tgt}")
    module = generate(func, symbol)
    text = str(module)
    stable = text.replace(symbol, "SYMBOL")
    for k, site in sorted(enumerate(sites), key=lambda e: -len(e[1].symbol)):  # numbered per process
        stable = stable.replace(site.symbol, f"PACKED{k}")
    fingerprint.record("llvm", func.name, stable + "\n" + str(tgt))
    if imports:
        text = jit.link_ir(text, imports, func.name)
    if not tgt.is_host():
        return cross_compile(func, text, symbol, tgt, opt_level)
    jit.check_externs(text, func.name)
    compiled = jit.compile_module(text, opt_level)
    return BuiltFunction(func, symbol, text, compiled, sites)


def _dim(p: Buffer, s: Any) -> int | str:
    if isinstance(s, IntImm):
        return s.value
    if isinstance(s, Var):
        return s.name
    raise ModuleLoadError(f"export: argument {p.name!r} has shape dimension {s}, an expression; only constants "
                          "and te.var sizes can be saved")


register_loader(MAGIC, "CPU modules (export_library of an llvm build)", BuiltFunction.from_bytes)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
