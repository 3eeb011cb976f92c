"""A native timing loop for built kernels: what ``time_evaluator`` runs on the host.

TVM's ``time_evaluator`` calls the kernel ``number`` times in C++ between two clock reads.
Calling a vdla kernel from Python costs a few microseconds (the argument checks, ``ctypes``):
10-15 % of a 40 us ResNet-18 1x1 layer on two threads, so a loop in Python times the call as
much as the kernel. :func:`time_calls` does what TVM does instead: a JIT-compiled loop
(:mod:`.jit`) reads the clock (``clock_gettime``), calls the kernel ``number`` times and reads
the clock again, once per repeat. One loop per argument count, for kernels whose arguments
are all pointers (constant-shape buffers: the fast path of
:class:`~vdla.compiler.targets.llvm.module.BuiltFunction`), compiled at first use.
"""

from __future__ import annotations

import ctypes
import threading
import time

from . import jit

__all__ = ["time_calls", "NOW_NS_IR", "CLOCK"]

_lock = threading.Lock()
_loops: dict[int, ctypes._CFuncPtr] = {}  # argument count -> the compiled loop

#: the clock the native loops read (CLOCK_MONOTONIC)
CLOCK = getattr(time, "CLOCK_MONOTONIC", 1)

#: the loop's signature: (kernel, argument pointers, number, repeat, clock id, nanoseconds out)
_LOOP_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64,
                              ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64))


#: ``i64 @vdla_now_ns(i32 clock)``: the clock's time in nanoseconds (``clock_gettime``), for a
#: module of its own (internal linkage; :mod:`.sequence` times its steps with it too)
NOW_NS_IR = """
%timespec = type { i64, i64 }
declare i32 @clock_gettime(i32, ptr)

define internal i64 @vdla_now_ns(i32 %clk) {
  %ts = alloca %timespec
  call i32 @clock_gettime(i32 %clk, ptr %ts)
  %sp = getelementptr %timespec, ptr %ts, i32 0, i32 0
  %np = getelementptr %timespec, ptr %ts, i32 0, i32 1
  %s = load volatile i64, ptr %sp
  %n = load volatile i64, ptr %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}
"""


def _loop_ir(nargs: int) -> str:
    """LLVM IR of ``vdla_time_calls_<nargs>``: per repeat, the nanoseconds ``number`` calls take."""
    loads = "".join(f"  %p{k} = getelementptr ptr, ptr %args, i64 {k}\n  %a{k} = load ptr, ptr %p{k}\n"
                    for k in range(nargs))
    call_args = ", ".join(f"ptr %a{k}" for k in range(nargs))
    return NOW_NS_IR + f"""
define void @vdla_time_calls_{nargs}(ptr %fn, ptr %args, i64 %number, i32 %repeat, i32 %clk, ptr %out) {{
entry:
{loads}  br label %rep
rep:
  %r = phi i32 [ 0, %entry ], [ %r1, %rep_end ]
  %t0 = call i64 @vdla_now_ns(i32 %clk)
  br label %body
body:
  %i = phi i64 [ 0, %rep ], [ %i1, %body ]
  call void %fn({call_args})
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %number
  br i1 %more, label %body, label %rep_end
rep_end:
  %t1 = call i64 @vdla_now_ns(i32 %clk)
  %dt = sub i64 %t1, %t0
  %rx = sext i32 %r to i64
  %op = getelementptr i64, ptr %out, i64 %rx
  store i64 %dt, ptr %op
  %r1 = add i32 %r, 1
  %again = icmp slt i32 %r1, %repeat
  br i1 %again, label %rep, label %done
done:
  ret void
}}
"""


def _loop(nargs: int) -> ctypes._CFuncPtr:
    with _lock:
        if nargs not in _loops:
            compiled = jit.compile_module(_loop_ir(nargs), opt_level=1)
            _loops[nargs] = _LOOP_TYPE(compiled.address(f"vdla_time_calls_{nargs}"))
        return _loops[nargs]


def time_calls(address: int, pointers: list[int], number: int, repeat: int,
               min_repeat_ms: float = 0) -> list[float]:
    """Seconds per call of the kernel at ``address`` (a ``void f(ptr, ...)``) on ``pointers``, for
    each of ``repeat`` repeats of ``number`` back-to-back calls; like TVM, ``number`` doubles
    until a repeat lasts ``min_repeat_ms``."""
    if number < 1 or repeat < 1:
        raise ValueError(f"time_evaluator: number ({number}) and repeat ({repeat}) must be >= 1")
    loop = _loop(len(pointers))
    argv = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
    clock = CLOCK
    if min_repeat_ms <= 0:
        out = (ctypes.c_int64 * repeat)()
        loop(address, argv, number, repeat, clock, out)
        return [ns * 1e-9 / number for ns in out]
    results = []
    one = (ctypes.c_int64 * 1)()
    for _ in range(repeat):
        n = number
        while True:
            loop(address, argv, n, 1, clock, one)
            if one[0] * 1e-6 >= min_repeat_ms or n >= 1 << 20:
                break
            n *= 2
        results.append(one[0] * 1e-9 / n)
    return results
