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

A ``cuda`` task's points add what decides speed on a GPU (:func:`gpu_features`, from the same
loop IR): the block's threads per axis and in all, the grid's blocks, virtual threads, shared
memory bytes per block, the register tile (``local`` elements per thread), vector lanes of
loads and stores, the unrolled loops' count and copies, arithmetic intensity at each level
(FLOP per global load, per shared load, per register-tile element), waves of blocks over the
SMs, an occupancy estimate (blocks per SM as shared memory and registers allow), and the
registers per thread: ptxas's count where the point has been built (:func:`note_registers`:
the cuda builder reports it), else the register tile plus a constant, calibrated on this
task's built points by least squares (so the one feature has one scale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tir import nodes as N
from ..tir.arith import linear

__all__ = ["LEVELS", "BUFFERS", "loop_features", "config_features", "instantiable", "gpu_features", "GPU_FEATURES",
           "note_registers", "calibrated", "remote_features", "REGISTERS_AT"]

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
    return calibrated(task, config.index, got) if task.kind == "cuda" else got


def remote_features(name: str, args: list[Any], target: str, index: int) -> np.ndarray:
    """:func:`config_features` of point ``index`` of a task, uncalibrated (on a Dask worker: the
    tuner applies its register counts with :func:`calibrated`)."""
    from .task import create

    key = (name, repr(args), target)
    task = _REMOTE_TASKS.get(key)
    if task is None:
        task = _REMOTE_TASKS[key] = create(name, args, target)
    ck = (task.key(), index)
    if ck not in _CACHE:
        _CACHE[ck] = _features(task, task.config_space.get(index))
    return _CACHE[ck]


_REMOTE_TASKS: dict[tuple[str, str, str], Any] = {}

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
    gpu = task.kind == "cuda"
    try:
        s, tensors = task.instantiate(config)
        stmt = lower_loops(s, tensors)
        loops = loop_features(stmt)
        if gpu:
            loops = np.concatenate([loops, gpu_features(stmt, task.flop, _arch(task.target))])
    except Exception:  # noqa: BLE001 - an invalid point: the model learns it from the knobs alone
        loops = np.full(LEVELS * _PER_LOOP + _GLOBAL + (len(GPU_FEATURES) if gpu else 0), -1.0, np.float32)
    return np.concatenate([loops, knobs])


# ---------------------------------------------------------------------------- GPU features

#: the names of :func:`gpu_features`' entries, in order
GPU_FEATURES = ("threads_x", "threads_y", "threads_z", "threads", "blocks", "vthreads", "shared_bytes", "local_elems",
                "vector_lanes", "unrolled_loops", "unrolled_copies", "flop_per_global_load", "flop_per_shared_load",
                "flop_per_local_elem", "waves", "blocks_per_sm", "occupancy", "registers")
#: per architecture: SMs of the reference part (A100, H100 SXM), shared memory and most blocks per SM
_SM = {"sm_80": (108, 164 * 1024, 32), "sm_86": (84, 100 * 1024, 16), "sm_89": (128, 100 * 1024, 24),
       "sm_90": (132, 228 * 1024, 32)}
_REG_FILE = 65536


def _arch(target: str) -> str:
    for part in str(target).split():
        if part.startswith(("-arch=", "-mcpu=")):
            return part.split("=", 1)[1]
    return "sm_80"


def _elems(buf: Any) -> int:
    return math.prod(_const(d) for d in buf.shape) if buf.shape else 1


def _bytes(dtype: str) -> int:
    return max(1, int("".join(c for c in str(dtype) if c.isdigit()) or 32) // 8)


class _GpuWalker:
    """Thread extents, allocations by scope, unrolled / vectorised loops and loads by scope."""

    def __init__(self) -> None:
        self.extent: dict[str, int] = {}
        self.scope: dict[str, str] = {}
        self.alloc: dict[str, int] = {"shared": 0, "local": 0}
        self.unrolled = 0
        self.copies = 1
        self.lanes = 1
        self.loads: dict[str, float] = {"global": 0.0, "shared": 0.0, "local": 0.0}
        self.ops = 0.0

    def walk(self, s: Any, trips: float, bound: frozenset[str] = frozenset()) -> None:
        if s is None:
            return
        if isinstance(s, N.For):
            ext = _const(s.extent)
            if s.kind == "thread_binding" or s.thread_tag:
                tag = s.thread_tag or "vthread"
                self.extent[tag] = max(self.extent.get(tag, 1), ext)
                # a loop bound to a thread axis that an enclosing loop binds already (a cooperative
                # fetch inside the compute's threads) is the same threads: no more iterations
                again = tag in bound and tag != "vthread"
                self.walk(s.body, trips if again else trips * ext, bound | {tag})
                return
            if s.kind == "unrolled":
                self.unrolled += 1
                self.copies = max(self.copies, ext)
            elif s.kind == "vectorized":
                self.lanes = max(self.lanes, ext)
            self.walk(s.body, trips * ext, bound)
            return
        if isinstance(s, N.Allocate):
            sc = s.buffer.scope if s.buffer.scope in ("shared", "local") else "global"
            self.scope[s.buffer.name] = sc
            if sc in self.alloc:
                self.alloc[sc] = max(self.alloc[sc], _elems(s.buffer) * _bytes(s.buffer.dtype)) if sc == "local" else \
                    self.alloc[sc] + _elems(s.buffer) * _bytes(s.buffer.dtype)
            self.walk(s.body, trips, bound)
            return
        if isinstance(s, N.AttrStmt):
            if s.key in ("virtual_thread", "thread_extent") and hasattr(s.value, "var"):
                tag = getattr(s.value, "thread_tag", "") or "vthread"
                ext = _const(getattr(s.value.dom, "extent", 1)) if getattr(s.value, "dom", None) else 1
                self.extent[tag] = max(self.extent.get(tag, 1), ext)
                self.walk(s.body, trips * ext, bound | {tag})
                return
            self.walk(s.body, trips, bound)
            return
        if isinstance(s, N.Seq):
            for c in s.stmts:
                self.walk(c, trips, bound)
        elif isinstance(s, N.IfThenElse):
            self.walk(s.then_case, trips, bound)
            self.walk(s.else_case, trips, bound)
        elif isinstance(s, N.LetStmt | N.ProducerRealize):
            self.walk(s.body, trips, bound)
        elif isinstance(s, N.BufferStore):
            self.expr(s.value, trips)
            if isinstance(s.index, N.Ramp):
                self.lanes = max(self.lanes, _const(getattr(s.index, "lanes", 1)))
        elif isinstance(s, N.Evaluate):
            self.expr(s.value, trips)

    def expr(self, e: Any, w: float) -> None:
        """Arithmetic on values and loads by scope (index arithmetic is not the kernel's work)."""
        todo = [e]
        while todo:
            x = todo.pop()
            if isinstance(x, N.BinOp):
                self.ops += w
                todo += [x.a, x.b]
            elif isinstance(x, N.BufferLoad):
                name = getattr(x.buffer, "name", "")
                self.loads[self.scope.get(name, "global")] += w
                if isinstance(x.index, N.Ramp):
                    self.lanes = max(self.lanes, _const(getattr(x.index, "lanes", 1)))
            elif isinstance(x, N.Cast):
                todo.append(x.value)
            elif isinstance(x, N.Select):
                todo += [x.t, x.f]
            elif isinstance(x, N.Call | N.CallExtern):
                todo += list(x.args)


def gpu_features(stmt: Any, flop: float, arch: str = "sm_80", registers: float | None = None) -> np.ndarray:
    """The GPU features (:data:`GPU_FEATURES`) of a point's flat loop IR (counts log2)."""
    w = _GpuWalker()
    w.walk(stmt, 1.0)
    tx, ty, tz = (w.extent.get(f"threadIdx.{d}", 1) for d in "xyz")
    threads = tx * ty * tz
    blocks = math.prod(w.extent.get(f"blockIdx.{d}", 1) for d in "xyz")
    vthreads = w.extent.get("vthread", 1)
    local = w.alloc["local"] // 4
    regs = float(registers) if registers else _estimate_registers(local)
    sms, smem_sm, max_blocks = _SM.get(arch, _SM["sm_80"])
    by_smem = smem_sm // max(1, w.alloc["shared"]) if w.alloc["shared"] else max_blocks
    by_regs = _REG_FILE // max(1, int(regs) * max(32, threads))
    by_threads = 2048 // max(1, threads)
    per_sm = max(0, min(max_blocks, by_smem, by_regs, by_threads))
    occupancy = per_sm * threads / 2048.0
    waves = blocks / max(1.0, float(per_sm * sms))
    f = max(flop, w.ops, 1.0)
    row = [_l2(tx), _l2(ty), _l2(tz), _l2(threads), _l2(blocks), _l2(vthreads), _l2(w.alloc["shared"]), _l2(local),
           float(w.lanes), float(w.unrolled), _l2(w.copies), _l2(f / max(1.0, w.loads["global"])),
           _l2(f / max(1.0, w.loads["shared"])), _l2(f / max(1.0, local * blocks * threads)), _l2(waves),
           float(per_sm), occupancy, regs]
    return np.asarray(row, np.float32)


def _estimate_registers(local_elems: int) -> float:
    """Registers per thread from the register tile: the tile, plus addressing and loop state."""
    return float(local_elems + 24)


#: ptxas's registers per thread of built points: (task key, config index) -> registers
_REGISTERS: dict[tuple[str, int], int] = {}
#: per task: (slope, intercept) mapping the estimate to ptxas's count, refit as points are built
_CALIBRATION: dict[str, tuple[float, float]] = {}
_ESTIMATES: dict[tuple[str, int], float] = {}


def note_registers(task: Any, index: int | None, registers: int) -> None:
    """Record ptxas's register count of a built point (the cuda builder's report), and refit this
    task's calibration of the estimate (least squares over its built points)."""
    if index is None or registers <= 0:
        return
    key = task.key()
    _REGISTERS[(key, int(index))] = int(registers)
    pairs = [(_ESTIMATES[k], float(v)) for k, v in _REGISTERS.items() if k[0] == key and k in _ESTIMATES]
    if len(pairs) >= 3:
        x, y = np.array(pairs).T
        if np.ptp(x) > 0:
            slope, icpt = np.polyfit(x, y, 1)
            _CALIBRATION[key] = (float(slope), float(icpt))


def registers_of(task: Any, index: int | None) -> float | None:
    """ptxas's count for a built point, else None."""
    if index is None:
        return None
    return _REGISTERS.get((task.key(), int(index)))


#: where the registers sit in a cuda point's features (after the loop features, last of the GPU ones)
REGISTERS_AT = LEVELS * _PER_LOOP + _GLOBAL + len(GPU_FEATURES) - 1


def calibrated(task: Any, index: int | None, feats: np.ndarray) -> np.ndarray:
    """A cuda point's features with its registers: ptxas's count where the point was built, else
    the estimate mapped by this task's calibration (a copy; ``feats`` as computed, estimate in place)."""
    if feats[REGISTERS_AT] < 0:  # the point did not lower: nothing to calibrate
        return feats
    out = feats.copy()
    key = task.key()
    known = registers_of(task, index)
    if known is not None:
        out[REGISTERS_AT] = known
        return out
    if index is not None:
        _ESTIMATES[(key, int(index))] = float(feats[REGISTERS_AT])
    slope, icpt = _CALIBRATION.get(key, (1.0, 0.0))
    out[REGISTERS_AT] = max(1.0, slope * feats[REGISTERS_AT] + icpt)
    return out
