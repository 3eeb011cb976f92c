"""``tir.call_packed`` on the CPU: each call site becomes a C call of a site function the JIT
resolves to a ctypes callback, which wraps the buffers as NDArrays over the kernel's memory
and calls the registered Python function (:mod:`vdla.runtime.packed`).

A site passes, per buffer argument, its address and its dimensions (int64), and scalars as
they are; the callback knows each buffer's dtype from the site. A Python exception inside
is kept and raised by the built function after the kernel returns (:func:`take_error`).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....runtime.ndarray import NDArray, cpu
from ....runtime.packed import get_global_func
from ...tir import dtypes
from ...tir.nodes import AddressOf, Buffer, BufferLoad, CallExtern, Expr, IntImm, PrimFunc, convert
from ...tir.op import CallPacked
from ...tir.visitor import post_order_map
from . import jit

__all__ = ["PackedSite", "lower_packed_calls", "register_site", "take_error"]

_ids = itertools.count()
_local = threading.local()
_keep: dict[str, Any] = {}  # ctypes callbacks must outlive the kernels that call them


@dataclass(frozen=True)
class PackedSite:
    """One call site: the symbol the kernel calls, the function's name and its argument kinds."""

    symbol: str
    func: str
    args: tuple[tuple[str, str, int], ...]  # ("buffer", dtype, ndim) | ("scalar", dtype, 0)

    def to_json(self) -> list[Any]:
        return [self.symbol, self.func, [list(a) for a in self.args]]

    @staticmethod
    def from_json(v: list[Any]) -> PackedSite:
        return PackedSite(str(v[0]), str(v[1]), tuple((str(k), str(d), int(n)) for k, d, n in v[2]))


def _scalar_ctype(dtype: str) -> Any:
    if dtypes.is_bool(dtype):
        return ctypes.c_int32  # passed widened (lower_packed_calls), given to Python as a bool
    if dtypes.is_float(dtype):
        return ctypes.c_double if dtypes.bits(dtype) == 64 else ctypes.c_float
    return {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}[dtypes.bits(dtype)]


def register_site(site: PackedSite) -> None:
    """Make the kernel's call of ``site.symbol`` reach ``site.func`` (looked up at call time)."""
    argtypes: list[Any] = []
    for kind, dt, nd in site.args:
        argtypes += [ctypes.c_void_p] + [ctypes.c_int64] * nd if kind == "buffer" else [_scalar_ctype(dt)]

    def callback(*raw: Any) -> int:
        try:
            vals: list[Any] = []
            it = iter(raw)
            for kind, dt, nd in site.args:
                if kind == "scalar":
                    v = next(it)
                    vals.append(bool(v) if dt == "bool" else v)
                    continue
                ptr = next(it)
                shape = tuple(int(next(it)) for _ in range(nd))
                dtype = np.dtype(dt)
                count = int(np.prod(shape)) if shape else 1
                raw_arr = (ctypes.c_byte * (count * dtype.itemsize)).from_address(ptr)
                vals.append(NDArray(np.frombuffer(raw_arr, dtype).reshape(shape), cpu(0)))
            get_global_func(site.func)(*vals)
            return 0
        except BaseException as e:  # raised again by the built function, not lost in ctypes
            _local.error = e
            return -1

    cb = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(callback)
    _keep[site.symbol] = cb
    jit.register_extern(site.symbol, cb)


def lower_packed_calls(func: PrimFunc) -> tuple[PrimFunc, list[PackedSite]]:
    """Replace every CallPacked in ``func`` by a call of a new site function (registered here)."""
    sites: list[PackedSite] = []

    def fn(n: Any) -> Any:
        if not isinstance(n, CallPacked):
            return None
        args: list[Expr] = []
        kinds: list[tuple[str, str, int]] = []
        for a in n.args:
            if isinstance(a, Buffer):
                args.append(AddressOf(BufferLoad(a, IntImm(0), a.dtype)))
                args += [convert(s).astype("int64") for s in a.shape]
                kinds.append(("buffer", a.dtype, len(a.shape)))
            else:
                e = convert(a)
                dt = e.dtype
                args.append(e.astype("int32") if dtypes.is_bool(dt) else e)
                kinds.append(("scalar", dt, 0))
        site = PackedSite(f"vdla_packed_{next(_ids)}", n.name, tuple(kinds))
        register_site(site)
        sites.append(site)
        return CallExtern(site.symbol, args, "int32")

    body = post_order_map(func.body, fn)
    if not sites:
        return func, []
    return PrimFunc(func.name, func.params, body, func.attrs), sites


def take_error() -> BaseException | None:
    """The exception a packed function raised during the last kernel call on this thread (cleared)."""
    e = getattr(_local, "error", None)
    _local.error = None
    return e
