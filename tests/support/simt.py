"""A small SIMT interpreter of a cuda build's kernels, to check on the CPU what only a GPU has.

:func:`run_kernels` executes every kernel of a :class:`~vdla.compiler.targets.cuda.module.CUDAModule`
on numpy arrays the way the GPU would: each block's threads run as Python generators that
stop at every ``__syncthreads()`` until all threads of the block have reached it, ``local``
buffers are private to a thread and ``shared`` ones to a block. So a shared-memory exchange
between threads (a cross-thread reduction's tree, a cooperative tile fetch) and the barriers
around it are checked against numpy, which running the loop nest with threads as serial
loops cannot do. A barrier some threads of a block miss is an error, as it is a hang on a GPU.
Slow (pure Python): for kernels of a few blocks of a few hundred threads.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from vdla.compiler.targets.cuda.lower import SYNC, Kernel
from vdla.compiler.tir import nodes as N
from vdla.compiler.tir.passes.simplify import simplify_expr
from vdla.compiler.tir.visitor import substitute

_BIN = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "min": np.minimum, "max": np.maximum,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "truncdiv": lambda a, b: np.trunc(np.divide(a, b)).astype(np.result_type(a, b)),
    "truncmod": lambda a, b: np.fmod(a, b),
}  # fmt: skip
_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal}  # fmt: skip
_MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "fabs": np.abs, "floor": np.floor,
         "ceil": np.ceil, "exp2": np.exp2, "log2": np.log2}  # fmt: skip


class DivergentBarrier(AssertionError):
    """Some threads of a block reached a barrier that others never reach (a hang on a GPU)."""


def _np_dtype(dtype: str) -> np.dtype:
    base = dtype.split("x")[0]
    return np.dtype("bool" if base == "bool" else base)


class _Thread:
    def __init__(self, env: dict[Any, Any], bufs: dict[N.Buffer, np.ndarray]) -> None:
        self.env = env  # Var -> value
        self.bufs = bufs  # Buffer -> flat numpy array (globals and the block's shared ones are shared objects)

    def expr(self, e: Any) -> Any:  # noqa: C901 - one case per node kind
        if isinstance(e, N.IntImm | N.FloatImm):
            return _np_dtype(e.dtype).type(e.value)
        if isinstance(e, N.Var):
            return self.env[e]
        if isinstance(e, N.Cast):
            v = self.expr(e.value)
            return np.asarray(v).astype(_np_dtype(e.dtype))[()]
        if isinstance(e, N.BinOp):
            a, b = self.expr(e.a), self.expr(e.b)
            with np.errstate(all="ignore"):
                return np.asarray(_BIN[e.op](a, b)).astype(_np_dtype(e.dtype))[()]
        if isinstance(e, N.Cmp):
            return _CMP[e.op](self.expr(e.a), self.expr(e.b))
        if isinstance(e, N.Logic):
            a = self.expr(e.a)
            if e.op == "and":
                return np.logical_and(a, self.expr(e.b)) if np.ndim(a) or a else a
            return np.logical_or(a, self.expr(e.b)) if np.ndim(a) or not a else a
        if isinstance(e, N.Not):
            return np.logical_not(self.expr(e.a))
        if isinstance(e, N.Select):
            c = self.expr(e.cond)
            if np.ndim(c) == 0:
                return self.expr(e.t) if c else self.expr(e.f)
            return np.where(c, self.expr(e.t), self.expr(e.f))
        if isinstance(e, N.Ramp):
            base, stride = self.expr(e.base), self.expr(e.stride)
            return base + stride * np.arange(e.lanes, dtype=np.asarray(base).dtype)
        if isinstance(e, N.Broadcast):
            return np.full(e.lanes, self.expr(e.value), dtype=_np_dtype(e.dtype))
        if isinstance(e, N.BufferLoad):
            return self.bufs[e.buffer][self.expr(e.index)]
        if isinstance(e, N.Call) and e.name in _MATH:
            with np.errstate(all="ignore"):
                return np.asarray(_MATH[e.name](*[self.expr(a) for a in e.args])).astype(_np_dtype(e.dtype))[()]
        if isinstance(e, N.Call) and e.name == "pow":
            a, b = (self.expr(x) for x in e.args)
            return np.asarray(np.power(a, b)).astype(_np_dtype(e.dtype))[()]
        raise NotImplementedError(f"simt: {type(e).__name__} {e}")

    def run(self, s: Any, shared: dict[N.Buffer, np.ndarray]) -> Iterator[None]:
        """Execute ``s``; yield at every barrier."""
        if isinstance(s, N.Seq):
            for x in s.stmts:
                yield from self.run(x, shared)
        elif isinstance(s, N.BufferStore):
            self.bufs[s.buffer][self.expr(s.index)] = self.expr(s.value)
        elif isinstance(s, N.For):
            lo, ext = int(self.expr(s.min)), int(self.expr(s.extent))
            for i in range(lo, lo + ext):
                self.env[s.var] = _np_dtype(s.var.dtype).type(i)
                yield from self.run(s.body, shared)
            self.env.pop(s.var, None)
        elif isinstance(s, N.IfThenElse):
            if self.expr(s.cond):
                yield from self.run(s.then_case, shared)
            elif s.else_case is not None:
                yield from self.run(s.else_case, shared)
        elif isinstance(s, N.Allocate):
            buf = s.buffer
            size = math.prod(int(simplify_expr(d).value) for d in buf.shape)
            if buf.scope == "shared":
                if buf not in shared:  # one per block: the first thread to get here allocates it
                    shared[buf] = np.zeros(size, _np_dtype(buf.dtype))
                self.bufs[buf] = shared[buf]
            else:
                self.bufs[buf] = np.zeros(size, _np_dtype(buf.dtype))
            yield from self.run(s.body, shared)
        elif isinstance(s, N.AttrStmt):
            yield from self.run(s.body, shared)
        elif isinstance(s, N.LetStmt):
            self.env[s.var] = self.expr(s.value)
            yield from self.run(s.body, shared)
        elif isinstance(s, N.Evaluate):
            v = s.value
            if isinstance(v, N.CallExtern) and v.name == SYNC:
                yield None
            else:
                self.expr(v)
        else:
            raise NotImplementedError(f"simt: {type(s).__name__}")


def _run_block(k: Kernel, block_idx: tuple[int, int, int], env: dict[Any, Any],
               bufs: dict[N.Buffer, np.ndarray]) -> None:  # fmt: skip
    shared: dict[N.Buffer, np.ndarray] = {}
    threads = []
    for tz, ty, tx in itertools.product(range(k.block[2]), range(k.block[1]), range(k.block[0])):
        tenv = dict(env)
        ids = {"threadIdx.x": tx, "threadIdx.y": ty, "threadIdx.z": tz, "blockIdx.x": block_idx[0],
               "blockIdx.y": block_idx[1], "blockIdx.z": block_idx[2]}  # fmt: skip
        for tag, v in k.thread_vars.items():
            tenv[v] = np.int32(ids[tag])
        t = _Thread(tenv, dict(bufs))
        threads.append(t.run(k.body, shared))
    live = list(threads)
    while live:
        arrived, done = [], []
        for g in live:
            try:
                next(g)
                arrived.append(g)
            except StopIteration:
                done.append(g)
        if arrived and done:
            raise DivergentBarrier(f"kernel {k.name!r}, block {block_idx}: {len(arrived)} threads wait at a barrier "
                                   f"that {len(done)} others never reach")  # fmt: skip
        live = arrived


def run_kernels(f: Any, *arrays: np.ndarray) -> None:
    """Run every kernel of cuda module ``f`` on numpy ``arrays`` (outputs written in place)."""
    params = f.lowered.params
    bufs: dict[N.Buffer, np.ndarray] = {}
    sizes: dict[N.Var, N.IntImm] = {}
    for p, a in zip(params, arrays, strict=True):
        if isinstance(p, N.Buffer):
            bufs[p] = a.reshape(-1)  # a view: stores land in the caller's array
            for d, n in zip(p.shape, a.shape, strict=True):
                if isinstance(d, N.Var):
                    sizes[d] = N.IntImm(int(n), d.dtype)
        else:
            sizes[p] = N.IntImm(int(a), p.dtype)
    env: dict[Any, Any] = {v: _np_dtype(v.dtype).type(c.value) for v, c in sizes.items()}
    for t in f.device_module.temps:
        n = math.prod(int(simplify_expr(substitute(d, sizes)).value) for d in t.shape)
        bufs[t] = np.zeros(n, _np_dtype(t.dtype))
    for k in f.kernels:
        grid = [int(simplify_expr(substitute(g, sizes)).value) for g in k.grid]
        for bz, by, bx in itertools.product(range(grid[2]), range(grid[1]), range(grid[0])):
            _run_block(k, (bx, by, bz), env, bufs)
