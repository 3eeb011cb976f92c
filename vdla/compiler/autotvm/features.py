"""Features of the lowered loop IR for the cost model (TVM's "itervar" features, simplified).

A point is instantiated and lowered to the flat loop IR (loop nests built, buffers
flattened; before the target's own passes, so a few milliseconds). The heaviest loop nest
(the one around the most arithmetic) gives :data:`LEVELS` slots, innermost first; each slot
holds its loop's

* log2 extent and log2 trip count of the loops around it;
* annotation one-hot: serial, parallel, vectorized, unrolled, thread (``cthread`` /
  virtual threads and other thread bindings);
* log2 bytes each of the :data:`BUFFERS` most accessed buffers touches per iteration of
  the loop (the product of the inner extents its index depends on), log2 reuse
  (accesses / elements touched) and whether the loop var is its innermost stride-1 axis;
* log2 arithmetic operations, loads and stores under it (weighted by trip counts);

then whole-program counts (arithmetic, loads, stores, intrinsic calls, DMA/ALU pragmas,
all log2) and the knob values (:meth:`ConfigEntity.get_flatten_feature`). Fixed length,
so records of other tasks of a template train one model (transfer learning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tir import nodes as N
from ..tir.arith import linear

__all__ = ["LEVELS", "BUFFERS", "loop_features", "config_features", "instantiable"]

LEVELS = 6
BUFFERS = 3
_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread")
_PER_LOOP = 2 + len(_KINDS) + 3 * BUFFERS + 3
_GLOBAL = 5


def _l2(x: float) -> float:
    return math.log2(1.0 + max(0.0, x))


@dataclass
class _Loop:
    var: Any
    extent: int
    kind: str
    above: int  # trip count of the loops around it
    ops: float = 0.0
    loads: float = 0.0
    stores: float = 0.0
    touched: dict[str, list[tuple[Any, int]]] = field(default_factory=dict)  # buffer -> [(index, elem bytes)]


def _const(e: Any) -> int:
    v = getattr(e, "value", e)
    return int(v) if isinstance(v, int | float) else 1


class _Walker:
    def __init__(self) -> None:
        self.stack: list[_Loop] = []
        self.nests: list[list[_Loop]] = []
        self.total = {"ops": 0.0, "loads": 0.0, "stores": 0.0, "calls": 0.0, "pragmas": 0.0}
        self.access: dict[str, float] = {}

    def trips(self) -> int:
        return math.prod(lp.extent for lp in self.stack) if self.stack else 1

    def expr(self, e: Any, w: float) -> None:
        todo = [e]
        while todo:
            x = todo.pop()
            if isinstance(x, N.BinOp):
                self._add("ops", w)
                todo += [x.a, x.b]
            elif isinstance(x, N.BufferLoad):
                self._add("loads", w)
                self._touch(x.buffer, x.index, w)
                todo.append(x.index)
            elif isinstance(x, N.Call | N.CallExtern):
                self._add("calls", w)
                todo += list(x.args)
            elif isinstance(x, N.Cast):
                todo.append(x.value)
            elif isinstance(x, N.Select):
                todo += [x.cond, x.t, x.f]
            elif isinstance(x, N.Cmp | N.Logic):
                todo += [x.a, x.b]
            elif isinstance(x, N.Ramp | N.Broadcast):
                todo.append(x.base if isinstance(x, N.Ramp) else x.value)
            elif isinstance(x, N.Reduce):
                todo.append(x.source)

    def _add(self, what: str, w: float) -> None:
        self.total[what] += w
        for lp in self.stack:
            if what in ("ops", "loads", "stores"):
                setattr(lp, what, getattr(lp, what) + w)

    def _touch(self, buf: Any, index: Any, w: float) -> None:
        name = getattr(buf, "name", str(buf))
        self.access[name] = self.access.get(name, 0.0) + w
        eb = max(1, int("".join(c for c in str(getattr(buf, "dtype", "int8")) if c.isdigit()) or 8) // 8)
        for lp in self.stack:
            lp.touched.setdefault(name, []).append((index, eb))

    def stmt(self, s: Any) -> None:
        if s is None:
            return
        if isinstance(s, N.For):
            kind = "thread" if s.kind == "thread_binding" or s.thread_tag else s.kind
            lp = _Loop(s.var, _const(s.extent), kind if kind in _KINDS else "serial", self.trips())
            self.stack.append(lp)
            self.stmt(s.body)
            self.stack.pop()
            if not any(isinstance(c, N.For) for c in _children(s.body)):
                self.nests.append(self.stack + [lp])
            return
        if isinstance(s, N.AttrStmt):
            if s.key in ("virtual_thread", "thread_extent") and hasattr(s.value, "var"):
                lp = _Loop(s.value.var, _const(getattr(s.value.dom, "extent", 1)) if getattr(s.value, "dom", None)
                           else 1, "thread", self.trips())
                self.stack.append(lp)
                self.stmt(s.body)
                self.stack.pop()
                self.nests.append(self.stack + [lp])
                return
            if "pragma" in s.key:
                self._add("pragmas", self.trips())
            self.stmt(s.body)
            return
        w = float(self.trips())
        if isinstance(s, N.BufferStore):
            self._add("stores", w)
            self._touch(s.buffer, s.index, w)
            self.expr(s.value, w)
        elif isinstance(s, N.Evaluate):
            self.expr(s.value, w)
        elif isinstance(s, N.Seq):
            for c in s.stmts:
                self.stmt(c)
        elif isinstance(s, N.IfThenElse):
            self.stmt(s.then_case)
            self.stmt(s.else_case)
        elif isinstance(s, N.LetStmt | N.Allocate | N.ProducerRealize):
            self.stmt(s.body)
        elif isinstance(s, N.ProducerStore):
            self._add("stores", w)
            self.expr(s.value, w)


def _children(s: Any) -> list[Any]:
    if isinstance(s, N.Seq):
        return [c for x in s.stmts for c in [x, *_children(x)]]
    body = getattr(s, "body", None)
    return [body, *_children(body)] if body is not None else []


def _touched_bytes(lp: _Loop, inner: list[_Loop], accesses: list[tuple[Any, int]]) -> tuple[float, float]:
    """(bytes of one buffer touched per iteration of ``lp``'s parent = over lp and the loops inside it,
    stride of lp's var in the index)."""
    if not accesses:
        return 0.0, 0.0
    index, eb = accesses[0]
    try:
        lin = linear(index)
        coef = {id(v): c for v, c in lin.terms.values()}
    except Exception:  # noqa: BLE001 - a non-affine index: count every loop as touching
        coef = None
    elems = 1
    for q in [lp, *inner]:
        if coef is None or coef.get(id(q.var), 0):
            elems *= q.extent
    stride = abs(coef.get(id(lp.var), 0)) if coef is not None else 0
    return float(elems * eb), float(stride)


def loop_features(stmt: Any) -> np.ndarray:
    """The fixed-length loop-IR feature vector of one lowered statement."""
    w = _Walker()
    w.stmt(stmt)
    top = sorted(w.access, key=lambda b: -w.access[b])[:BUFFERS]
    feats = np.zeros(LEVELS * _PER_LOOP + _GLOBAL, np.float32)
    if w.nests:
        nest = max(w.nests, key=lambda ls: (ls[0].ops if ls else 0.0, len(ls)))
        seen: list[_Loop] = []
        for lp in nest:
            if lp not in seen:
                seen.append(lp)
        nest = seen
        for slot, lp in enumerate(reversed(nest[-LEVELS:])):
            i = len(nest) - 1 - slot
            inner = nest[i + 1:]
            row = [_l2(lp.extent), _l2(lp.above)] + [float(lp.kind == k) for k in _KINDS]
            for b in top:
                acc = lp.touched.get(b, [])
                nbytes, stride = _touched_bytes(lp, inner, acc)
                count = w.access[b] / max(1, lp.above)
                row += [_l2(nbytes), _l2(count / max(1.0, nbytes)), float(stride == 1)]
            row += [0.0] * (3 * (BUFFERS - len(top)))
            row += [_l2(lp.ops / max(1, lp.above)), _l2(lp.loads / max(1, lp.above)), _l2(lp.stores / max(1, lp.above))]
            feats[slot * _PER_LOOP:(slot + 1) * _PER_LOOP] = row
    t = w.total
    feats[LEVELS * _PER_LOOP:] = [_l2(t["ops"]), _l2(t["loads"]), _l2(t["stores"]), _l2(t["calls"]), _l2(t["pragmas"])]
    return feats


def lower_loops(s: Any, tensors: list[Any]) -> Any:
    """The flat loop IR of a schedule (loop nests + storage flattening, no target passes)."""
    from ..schedule.loop_nest import schedule_to_stmt
    from ..tir.nodes import Buffer
    from ..tir.passes import storage_flatten

    stmt = schedule_to_stmt(s, tensors)
    binds = {}
    for a in tensors:
        t = s.resolve(a)
        binds[t] = Buffer(a.name, t.dtype, list(t.shape))
    return storage_flatten(stmt, binds)


_CACHE: dict[tuple[str, Any], np.ndarray] = {}
_CACHE_MAX = 200_000


def config_features(task: Any, config: Any) -> np.ndarray:
    """Loop-IR features + knob values of one point (-1 for the loop part when it does not lower);
    kept per (task, point) for this process (tuners of one task share them)."""
    key = (task.key(), config.index if config.index is not None else repr(config))
    got = _CACHE.get(key)
    if got is None:
        got = _features(task, config)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = got
    return got


_VALID: dict[tuple[str, Any], bool] = {}


def instantiable(task: Any, config: Any) -> bool:
    """Whether the template accepts the point: the VDLA templates raise at instantiation for
    tiles that fit no buffer or loops too fine for the micro-op cache, which is known in a
    millisecond or two, before any build or measurement (kept per (task, point) like the features)."""
    key = (task.key(), config.index if config.index is not None else repr(config))
    got = _VALID.get(key)
    if got is None:
        try:
            task.instantiate(config)
            got = True
        except Exception:  # noqa: BLE001 - any rejection by the template
            got = False
        if len(_VALID) >= _CACHE_MAX:
            _VALID.clear()
        _VALID[key] = got
    return got


def _features(task: Any, config: Any) -> np.ndarray:
    knobs = np.asarray(config.get_flatten_feature(), np.float32)
    try:
        s, tensors = task.instantiate(config)
        loops = loop_features(lower_loops(s, tensors))
    except Exception:  # noqa: BLE001 - an invalid point: the model learns it from the knobs alone
        loops = np.full(LEVELS * _PER_LOOP + _GLOBAL, -1.0, np.float32)
    return np.concatenate([loops, knobs])
