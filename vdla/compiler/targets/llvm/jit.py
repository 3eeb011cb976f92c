"""The host JIT: one llvmlite MCJIT engine per process, the O3 pipeline, and the runtime symbols.

``compile_module(text)`` parses, verifies and optimises LLVM IR for the host CPU (its name
and features), adds it to the process-wide MCJIT engine and returns the engine's view of
it.  Parallel loops call ``vdla_parallel_launch(task, closure, n)``, which runs ``task``
on up to :func:`get_num_threads` threads: :mod:`.threadpool` provides it (a native pool,
or a Python one when no C compiler is found); ctypes releases the GIL during each call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

from .threadpool import backend as parallel_backend
from .threadpool import get_num_threads, launch_address, set_num_threads, workspace_addresses

__all__ = ["compile_module", "host_info", "link_ir", "check_externs", "register_extern", "take_alloc_failure",
           "LinkError", "Compiled", "set_num_threads", "get_num_threads", "parallel_backend"]

_lock = threading.RLock()
_state: dict[str, object] = {}


def _init() -> None:
    if "tm" in _state:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    target = llvm.Target.from_default_triple()
    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    tm = target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    _state.update(tm=tm, engine=engine, cpu=cpu, features=features, triple=llvm.get_process_triple())
    _register_symbols()


def host_info() -> dict[str, str]:
    """Triple, CPU name and features of the host target machine."""
    with _lock:
        _init()
        tm = _state["tm"]
        return {
            "triple": str(_state["triple"]),
            "cpu": str(_state["cpu"]),
            "features": str(_state["features"]),
            "data_layout": str(tm.target_data),  # type: ignore[attr-defined]
        }


#: float32 lanes of a vector register -> how many vector registers there are (AVX-512: 32 of 16
#: lanes; AVX/AVX2: 16 of 8; SSE/NEON: 16 of 4)
VECTOR_REGISTERS = {16: 32, 8: 16, 4: 16}


def vector_registers() -> tuple[int, int]:
    """(float32 lanes of a vector register, vector registers) of the host: what a register
    tile of a CPU schedule may hold (:data:`VECTOR_REGISTERS`)."""
    feats = set(host_info()["features"].split(","))
    lanes = 16 if "+avx512f" in feats else 8 if "+avx" in feats else 4
    return lanes, VECTOR_REGISTERS[lanes]


def _optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pto.loop_interleaving = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


@dataclass
class Compiled:
    module: llvm.ModuleRef
    optimized_ir: str

    def address(self, name: str) -> int:
        with _lock:
            return int(_state["engine"].get_function_address(name))  # type: ignore[attr-defined]

    def object_code(self) -> bytes:
        with _lock:
            return bytes(_state["tm"].emit_object(self.module))  # type: ignore[attr-defined]

    def assembly(self) -> str:
        with _lock:
            return str(_state["tm"].emit_assembly(self.module))  # type: ignore[attr-defined]


#: functions defined by modules already in the JIT (later kernels may call them by name)
_defined: set[str] = set()


def compile_module(text: str, opt_level: int = 3) -> Compiled:
    """Parse, verify, optimise and JIT-load an LLVM IR module for the host."""
    with _lock:
        _init()
        mod = llvm.parse_assembly(text)
        mod.verify()
        tm = _state["tm"]
        mod.triple = str(_state["triple"])
        mod.data_layout = str(tm.target_data)  # type: ignore[attr-defined]
        if opt_level > 0:
            _optimize(mod, tm, opt_level)  # type: ignore[arg-type]
        _defined.update(f.name for f in mod.functions if not f.is_declaration)
        engine = _state["engine"]
        engine.add_module(mod)  # type: ignore[attr-defined]
        engine.finalize_object()  # type: ignore[attr-defined]
        return Compiled(mod, str(mod))


class LinkError(ValueError):
    """LLVM IR given with ``pragma(ax, "import_llvm", ir)`` that cannot be linked, or a kernel calling
    an external function nothing defines."""


def link_ir(text: str, imports: list[str], name: str) -> str:
    """The kernel module ``text`` with the LLVM IR modules ``imports`` linked in (their functions
    made internal, so that two kernels importing the same code do not clash in the JIT)."""
    with _lock:
        _init()
        mod = llvm.parse_assembly(text)
        for k, ir_text in enumerate(imports):
            try:
                other = llvm.parse_assembly(ir_text)
                other.verify()
            except RuntimeError as err:
                raise LinkError(f"{name}: the LLVM IR of import_llvm pragma {k} does not parse: {err}") from None
            defined = [f.name for f in other.functions if not f.is_declaration]
            mod.link_in(other)
            for fname in defined:
                mod.get_function(fname).linkage = "internal"
        return str(mod)


def check_externs(text: str, name: str) -> None:
    """Every function the kernel declares must resolve (an LLVM intrinsic, the runtime, libm, a
    registered extern): an unresolved one would be a null call at run time."""
    with _lock:
        _init()
        mod = llvm.parse_assembly(text)
        for f in mod.functions:
            if (f.is_declaration and not f.name.startswith("llvm.") and f.name not in _defined
                    and llvm.address_of_symbol(f.name) is None):
                raise LinkError(
                    f"{name}: external function {f.name!r} is not defined: give its LLVM IR with "
                    f"s[stage].pragma(axis, 'import_llvm', ir_text), or register it (jit.register_extern)"
                )


# ---------------------------------------------------------------------------- runtime symbols

_ALLOC_FAILED = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int64)
_alloc_failures: list[tuple[str, int]] = []


def _alloc_failed(name: bytes, nbytes: int) -> None:
    with _lock:
        _alloc_failures.append((name.decode(errors="replace"), int(nbytes)))


_alloc_failed_c = _ALLOC_FAILED(_alloc_failed)


def take_alloc_failure() -> MemoryError | None:
    """The MemoryError for an allocation a kernel could not make since the last call, if any.

    A kernel whose allocation fails calls ``vdla_alloc_failed`` (recorded here) and returns
    without touching the buffer; its caller raises what this returns."""
    with _lock:
        if not _alloc_failures:
            return None
        name, nbytes = _alloc_failures[0]
        _alloc_failures.clear()
    size = f"{nbytes} bytes" if 0 < nbytes <= (1 << 62) else "a size that overflows 64 bits or is negative"
    return MemoryError(f"cannot allocate buffer {name!r}: {size} (reduce the stage's extent or split it)")


_externs: dict[str, object] = {}


def register_extern(name: str, fn: object) -> None:
    """Make ``name`` resolvable by JIT-compiled kernels (``te.call_extern``): ``fn`` is a
    ctypes function (kept alive here) or an address.  Functions defined in LLVM IR can
    instead be added with :func:`compile_module`; later kernels find them by name."""
    with _lock:
        _init()
        addr = fn if isinstance(fn, int) else ctypes.cast(fn, ctypes.c_void_p).value
        if not addr:
            raise ValueError(f"register_extern({name!r}): no address")
        _externs[name] = fn
        llvm.add_symbol(name, addr)


def _register_symbols() -> None:
    llvm.add_symbol("vdla_parallel_launch", launch_address())
    alloc, free = workspace_addresses()
    llvm.add_symbol("vdla_workspace_alloc", alloc)
    llvm.add_symbol("vdla_workspace_free", free)
    llvm.add_symbol("vdla_alloc_failed", ctypes.cast(_alloc_failed_c, ctypes.c_void_p).value)
    libc = ctypes.CDLL(None)
    for name in ("malloc", "free", "aligned_alloc", "clock_gettime"):  # clock_gettime: timer.py's loop
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    libm_name = ctypes.util.find_library("m")
    libm = ctypes.CDLL(libm_name) if libm_name else libc
    for base in ("exp", "log", "tanh", "pow", "sqrt", "floor", "ceil", "fabs", "exp2", "log2", "expm1", "log1p"):
        for name in (base, base + "f"):
            try:
                llvm.add_symbol(name, ctypes.cast(getattr(libm, name), ctypes.c_void_p).value)
            except AttributeError:  # pragma: no cover
                pass
