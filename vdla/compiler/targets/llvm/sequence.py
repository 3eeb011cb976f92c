"""A run of built kernels as one native call: what a model's plan of llvm steps becomes.

Calling a built kernel from Python costs a few microseconds (ctypes, the argument checks) and
a graph executor's bookkeeping per step as much again: on a model of small layers (ShuffleNet
v2 runs 90 steps in about 5 ms on two cores) that is a seventh of the run. TVM's AOT executor
answers with a C function that calls the operators in order; :func:`compile_sequence` does the
same with the JIT: one LLVM function ``void vdla_sequence(ptr slots)`` whose body calls each
kernel at its address with pointers read from a table of slots, and writes the view steps'
pointers (a slot's pointer plus a byte offset) into theirs, in plan order. A timed twin of the
function reads the clock between the calls: each step's time inside the run, with its
neighbours' caches and the thread pool as the run leaves them.

The caller (the graph executor) owns the table: constants and planned buffers are written
into it once, the inputs and outputs of each run before the call. Kernels take only pointers
(constant-shape buffers: the fast path of :class:`~.module.BuiltFunction`).
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass

from . import jit
from .packed import take_error
from .timer import CLOCK, NOW_NS_IR

__all__ = ["Call", "View", "Sequence", "compile_sequence", "sequence_ir"]

_counter = itertools.count()


@dataclass(frozen=True)
class Call:
    """Call the kernel at ``address`` with the pointers of ``slots`` (in argument order)."""

    address: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class View:
    """Slot ``dst`` gets slot ``src``'s pointer plus ``offset`` bytes (a reshape or slice in place)."""

    src: int
    offset: int
    dst: int


def sequence_ir(ops: list[Call | View], symbol: str, timed: bool = False) -> str:
    """LLVM IR of ``void <symbol>(ptr slots)``: ``ops`` in order (see the module doc). ``timed``:
    ``void <symbol>(ptr slots, ptr times, i32 clock)`` also writes the clock's nanoseconds before
    the first op to ``times[0]`` and after op ``k`` to ``times[k + 1]``."""
    params = "ptr %slots, ptr %times, i32 %clk" if timed else "ptr %slots"
    lines = [f"define void @{symbol}({params}) {{", "entry:"]
    tmp = itertools.count()

    def load(slot: int) -> str:
        k = next(tmp)
        lines.append(f"  %s{k} = getelementptr ptr, ptr %slots, i64 {slot}")
        lines.append(f"  %v{k} = load ptr, ptr %s{k}")
        return f"%v{k}"

    def stamp(at: int) -> None:
        k = next(tmp)
        lines.append(f"  %t{k} = call i64 @vdla_now_ns(i32 %clk)")
        lines.append(f"  %tp{k} = getelementptr i64, ptr %times, i64 {at}")
        lines.append(f"  store i64 %t{k}, ptr %tp{k}")

    if timed:
        stamp(0)
    for i, op in enumerate(ops):
        if isinstance(op, Call):
            args = ", ".join(f"ptr {load(s)}" for s in op.slots)
            k = next(tmp)
            lines.append(f"  %f{k} = inttoptr i64 {op.address} to ptr")
            lines.append(f"  call void %f{k}({args})")
        else:
            src = load(op.src)
            k = next(tmp)
            lines.append(f"  %p{k} = getelementptr i8, ptr {src}, i64 {op.offset}")
            lines.append(f"  %d{k} = getelementptr ptr, ptr %slots, i64 {op.dst}")
            lines.append(f"  store ptr %p{k}, ptr %d{k}")
        if timed:
            stamp(i + 1)
    lines += ["  ret void", "}", ""]
    return "\n".join(lines)


class Sequence:
    """The compiled sequence: ``seq(slots)`` runs it on a ``ctypes`` array of ``nslots`` pointers."""

    def __init__(self, ops: list[Call | View], nslots: int) -> None:
        for i, op in enumerate(ops):
            used = op.slots if isinstance(op, Call) else (op.src, op.dst)
            bad = [s for s in used if not 0 <= s < nslots]
            if bad:
                raise ValueError(f"sequence op {i} ({op}) uses slot(s) {bad} outside the table of {nslots}")
        self.ops = list(ops)
        self.nslots = nslots
        self.symbol = f"vdla_sequence_{next(_counter)}"
        # the plain sequence and the timed one in one module
        self.llvm_ir = (sequence_ir(self.ops, self.symbol) + NOW_NS_IR
                        + sequence_ir(self.ops, self.symbol + "_timed", timed=True))
        # the body is calls and pointer moves: nothing for O3 to find
        self._compiled = jit.compile_module(self.llvm_ir, opt_level=0)
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._compiled.address(self.symbol))
        self._timed = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)(
            self._compiled.address(self.symbol + "_timed"))

    def slots(self) -> ctypes.Array:
        """A new, zeroed table of this sequence's slots."""
        return (ctypes.c_void_p * max(1, self.nslots))()

    def __call__(self, table: ctypes.Array, timed: bool = False) -> list[float] | None:
        """Run on ``table``; ``timed``: also the seconds each op took (reading the clock between
        ops costs tens of nanoseconds each)."""
        if len(table) < self.nslots:
            raise ValueError(f"sequence needs a table of {self.nslots} slots, got {len(table)}")
        times = None
        if timed:
            stamps = (ctypes.c_int64 * (len(self.ops) + 1))()
            self._timed(ctypes.addressof(table), ctypes.addressof(stamps), CLOCK)
            times = [(b - a) * 1e-9 for a, b in zip(stamps, stamps[1:], strict=False)]
        else:
            self._fn(ctypes.addressof(table))
        # what a kernel reported while it ran (a failed allocation, a packed call's error); the
        # caller knows which steps ran and can find the one by running them one at a time
        err = jit.take_alloc_failure() or take_error()
        if err is not None:
            raise err
        return times


def compile_sequence(ops: list[Call | View], nslots: int) -> Sequence:
    """JIT-compile ``ops`` over a table of ``nslots`` pointers (see the module doc)."""
    return Sequence(ops, nslots)
