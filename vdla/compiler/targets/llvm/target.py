"""The CPU facts of a target: triple, CPU and features, the host, and ahead-of-time compilation.

:func:`llvm_options` reads an llvm :class:`~vdla.compiler.targets.target.Target` (parsed and
checked there: ``"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53 -mattr=+neon"``) into
:class:`LlvmOptions`. A target whose triple is not the host's, or with an explicit ``-mcpu`` or
``-mattr``, is *cross compiled*: :func:`cross_compile` optimises the module with that target
machine (LLVM must have a back end for the triple) and returns a :class:`CrossModule` holding
the object code and assembly (nothing is run). Kernels with ``parallel`` loops reference the
runtime symbol ``vdla_parallel_launch``, which the device's runtime must provide.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import llvmlite.binding as llvm

from ....compat.aliases import module_getattr
from ...tir.nodes import PrimFunc
from ..target import TargetError

if TYPE_CHECKING:  # not bound at run time: the old name Target here is a moved one (see the end)
    from ..target import Target

__all__ = ["LlvmOptions", "llvm_options", "CrossModule", "cross_compile", "TargetError", "AARCH64", "RISCV64"]

#: shorthand target strings for the paper's embedded CPU classes
AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53 -mattr=+neon"
RISCV64 = "llvm -mtriple=riscv64-unknown-linux-gnu -mcpu=generic-rv64 -mattr=+m,+a,+f,+d,+c,+v"

_lock = threading.Lock()
_all_targets = False


@dataclass(frozen=True)
class LlvmOptions:
    """What LLVM compiles a CPU target for; ``str()`` is its canonical target string."""

    triple: str | None = None
    cpu: str | None = None
    attrs: tuple[str, ...] = field(default_factory=tuple)

    kind = "llvm"

    def is_host(self) -> bool:
        """True when this target compiles for the machine we run on (JIT)."""
        if self.triple is None:
            return self.cpu is None and not self.attrs
        host = llvm.get_process_triple()
        return _arch(self.triple) == _arch(host) and self.cpu is None and not self.attrs

    def __str__(self) -> str:
        out = [self.kind]
        if self.triple:
            out.append(f"-mtriple={self.triple}")
        if self.cpu:
            out.append(f"-mcpu={self.cpu}")
        if self.attrs:
            out.append(f"-mattr={','.join(self.attrs)}")
        return " ".join(out)


def llvm_options(target: Target) -> LlvmOptions:
    """The triple, CPU and features of an llvm target (``-mtriple``, ``-mcpu``, ``-mattr``)."""
    if target.backend != "llvm":
        raise TargetError(f"{str(target)!r} is not a CPU (llvm) target")
    a = target.attrs
    return LlvmOptions(a.get("mtriple"), a.get("mcpu"), tuple(x for x in str(a.get("mattr", "")).split(",") if x))


def _arch(triple: str) -> str:
    return triple.split("-")[0]


def _target_machine(t: LlvmOptions, opt: int) -> llvm.TargetMachine:
    global _all_targets
    with _lock:
        if not _all_targets:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _all_targets = True
    triple = t.triple or llvm.get_process_triple()
    try:
        tgt = llvm.Target.from_triple(triple)
    except RuntimeError as err:
        raise TargetError(f"LLVM has no back end for triple {triple!r}: {err}") from None
    return tgt.create_target_machine(cpu=t.cpu or "", features=",".join(t.attrs), opt=opt, reloc="pic")


class CrossModule:
    """A kernel compiled ahead of time for another CPU: object code, assembly and IR."""

    def __init__(self, func: PrimFunc, symbol: str, target: LlvmOptions, llvm_ir: str, optimized_ir: str,
                 obj: bytes, asm: str) -> None:  # fmt: skip
        self.lowered = func
        self.name = func.name
        self.symbol = symbol
        self.target = target
        self.llvm_ir = llvm_ir
        self.optimized_ir = optimized_ir
        self.object_code = obj
        self.assembly = asm

    def get_source(self, fmt: str = "asm") -> str:
        """``"asm"`` (target assembly), ``"ll"`` (as generated) or ``"opt"`` (after O3)."""
        if fmt in ("asm", "s"):
            return self.assembly
        if fmt == "ll":
            return self.llvm_ir
        if fmt == "opt":
            return self.optimized_ir
        raise ValueError(f"unknown source format {fmt!r}; use 'asm', 'll' or 'opt'")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the object file (``.o``), assembly (``.s``) or LLVM IR (``.ll``), by extension."""
        p = os.fspath(path)
        if p.endswith(".o"):
            with open(p, "wb") as fh:
                fh.write(self.object_code)
            return
        text = {".s": self.assembly, ".S": self.assembly, ".ll": self.optimized_ir}.get(os.path.splitext(p)[1])
        if text is None:
            raise ValueError(f"save: unknown extension of {p!r}; use .o, .s or .ll")
        with open(p, "w") as fh:
            fh.write(text)

    def __call__(self, *args: object) -> None:
        raise RuntimeError(
            f"{self.name} was compiled for {self.target}, not for this machine; save() it and run it there"
        )

    def __repr__(self) -> str:
        return f"<CrossModule {self.name} target={self.target} {len(self.object_code)} bytes>"


def cross_compile(func: PrimFunc, llvm_ir: str, symbol: str, target: Target | LlvmOptions,
                  opt_level: int = 3) -> CrossModule:  # fmt: skip
    """Optimise ``llvm_ir`` for ``target`` and emit its object code and assembly."""
    t = target if isinstance(target, LlvmOptions) else llvm_options(target)
    tm = _target_machine(t, opt_level)
    mod = llvm.parse_assembly(llvm_ir)
    mod.triple = t.triple or llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    mod.verify()
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return CrossModule(func, symbol, t, llvm_ir, str(mod), tm.emit_object(mod), tm.emit_assembly(mod))


__getattr__ = module_getattr(__name__)  # Target (now vdla.compiler.targets.target.Target), for one release
