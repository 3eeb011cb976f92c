"""Requantisation tails into the GEMMs: CFG's epilogue and GEMM init replace the ALU passes.

A layer's tile computes, per accumulator row, ``GEMM reset``, one GEMM per input-channel
block, then the tail on the tensor ALU: ``ADD`` of the bias row (loaded by a ``LOAD ACC``
just before), ``SHR imm``, ``MAX imm``, ``MIN imm``, one cycle per row each. With VDLA's
CFG the GEMMs do the same work themselves: the first GEMM of the tile starts from the bias
row (``init``: ACC[d] = ACC[init_base + wgt index] + dot) instead of zero, and every GEMM
write puts ``min(max(ACC >> shift, lo), hi)`` into OUT (the epilogue), so the reset and the
four ALU instructions go. A first GEMM that writes each row several times (all the
input-channel blocks of the tile, or a depthwise tile's taps) splits in two or three with
the same loops: its first part (a loop's first iteration, then the uops that write only
rows no uop before them wrote) writes each row once and starts from the bias, the others
accumulate. Where that part's WGT index steps by S > 1 per bias row (``S`` = input-channel
blocks x taps of a tile), the bias load pads its rows S apart, above every row the program
uses. A tile none of that fits keeps its reset as a ``reset + init`` (a copy of the bias row)
and drops the ALU tail alike.

:func:`fuse_requant_tails` rewrites the task list of code generation (program order, before
the dependency tokens are planned, so the tokens, micro-op loads and relocations of what
it writes are made as for any other task). It rewrites only a tile it proves equivalent
on the task list as it stands, enumerating every uop-iteration's rows with numpy (as the
golden model's ``Machine._indices``):

* the tail is exactly ``ADD`` (tensor operand), ``SHR imm`` (0 <= imm < acc_width, or no
  SHR: shift 0), ``MAX imm``, ``MIN imm``, consecutive compute tasks, each writing the
  same row set D once per row, both immediates inside OUT's signed range (with them the
  low bits the ALU writes are the value, as the epilogue's clip makes it); the ADD maps
  each row d to one bias row b(d), none of them in D;
* going back from the ADD, the first task that touches D is a reset whose rows are D,
  and every one between is a plain GEMM writing rows of D (the members); no other task
  between the reset and the MIN reads or writes ACC or OUT rows of D;
* init: the first member writes each row of D exactly once, or splits (:func:`_split_first`:
  parts K1, K2[, K3] with its loops whose iterations, enumerated, are its own, K1 writing
  each row of D once), and b(d) - K1's WGT index is one constant init_base >= 0 (the reset
  goes, K1 gets init, the rest stay plain GEMMs after it: sums wrap, so the order of the
  additions does not matter), or (:func:`_relayout`) the bias load is n contiguous rows, row
  r(d) of it is d's bias and K1's WGT index is c + S * r(d), S >= 2: a load padding each row
  to S (:func:`_padded_load`) puts the bias rows at start + S * r(d), start above every ACC
  row a task touches, and init_base = start - c. A split or padding must cost less than the
  reset it replaces (``WEIGH``: a GEMM instruction's overhead per extra part, a cycle per
  zero row, against a cycle per row of D). The bias load then goes unless another task
  reads its rows; otherwise reset + init: the reset writes each row once, and its WGT indices (a reset reads no
  weights) become b(d) - init_base where that is affine in its loops with non-negative
  factors and below wgt_depth (init_base the previous tile's where it fits: one CFG for
  the layer);
* the latest write of the bias rows before the ADD is a ``LOAD ACC`` covering them; when
  it comes after the GEMM that now reads them, it moves to just before it, past tasks
  that touch none of its rows and no store to the DRAM tensor it reads;
* after the MIN, no task reads an ACC row of D before writing it whole: the GEMMs leave
  ACC[d] unclipped (OUT is the same), so only OUT may be read.

Sums wrap at acc_width either way, so adding the bias first gives the same ACC. Then
:func:`place_cfg` puts a CFG before each GEMM whose state (epilogue off for every GEMM
not rewritten, shift/clip/init_base for the rewritten) is not the current one; a program
without a rewritten tile is returned unchanged. ``ENABLED = False`` (or the environment
variable ``VDLA_FUSE_TAIL=0`` at import) turns the pass off, for comparison.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ....config import Config
from ....isa import FORMATS, AluOp, Mem, Stage
from ....runtime import KernelError, Loop, StreamError, UopKernel
from ....simulator.timing import pipeline_latency
from .env import VDLAError
from .sync import Task

__all__ = ["ENABLED", "TaskInsn", "fuse_requant_tails", "place_cfg"]

#: the pass's switch (code generation runs it when True); ``VDLA_FUSE_TAIL=0`` starts it off
ENABLED = os.environ.get("VDLA_FUSE_TAIL", "1") != "0"

#: when a list: every tile the pass looked at and left alone appends why (tests, debugging)
REJECTED: list[str] | None = None

#: whether a split first GEMM or a padded bias load must cost less than the reset it replaces
#: (its instruction, a cycle a row) by the model of :func:`_fuse_one` (tests of small tiles turn it off)
WEIGH = True

#: how many tasks back from a tail's ADD the search for its reset looks
WINDOW = 256

# a GEMM's CFG need: None (epilogue off) or (init_base or None for "any", shift, clip_lo, clip_hi)
Need = tuple[int | None, int, int, int] | None


@dataclass(frozen=True)
class TaskInsn:
    """What a task's instruction does, for passes that prove a rewrite: kind "gemm", "alu",
    "load", "store" or "cfg"; the uop kernel (absolute indices) of a GEMM or ALU; GEMM's
    reset/init and the CFG state it needs (`need`, see `place_cfg`); ALU's opcode and immediate
    (None: tensor operand); a DMA's memory type and DRAM argument; a CFG's state (`need`)."""

    kind: str
    kernel: UopKernel | None = None
    reset: bool = False
    init: bool = False
    alu_op: AluOp | None = None
    imm: int | None = None
    mem: Mem | None = None
    arg: int | None = None
    need: Need = None
    #: a load's SRAM start and shape (s0, x_size, y_size, x_stride, x_pad_0, y_pad_0, x_pad_1, y_pad_1)
    load: tuple[int, ...] | None = field(default=None, compare=False)
    #: a load's emit for another SRAM start and shape: (s0, x_size, y_size, x_stride, x_pad, y_pad) -> emit
    remake: Any = field(default=None, compare=False)


@lru_cache(maxsize=4096)
def _iterations(kernel: UopKernel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dst, src, wgt) of every uop-iteration of `kernel`, in execution order (outer loop,
    inner loop, uop), as `vdla.simulator.machine.Machine._indices` enumerates them."""
    u = np.array(kernel.uops, dtype=np.int64)
    loops = [(lp.extent, lp.dst, lp.src, lp.wgt) for lp in kernel.loops] + [(1, 0, 0, 0)] * (2 - len(kernel.loops))
    (eo, *fo), (ei, *fi) = loops
    i = np.arange(eo)[:, None, None]
    j = np.arange(ei)[None, :, None]
    out = tuple((u[:, k] + i * fo[k] + j * fi[k]).ravel() for k in range(3))
    for a in out:
        a.flags.writeable = False
    return out  # type: ignore[return-value]


def _span(regions: list[tuple[str, int, int]], names: tuple[str, ...]) -> np.ndarray:
    rows = [np.arange(lo, hi) for r, lo, hi in regions if r in names and hi > lo]
    if len(rows) == 1:
        return rows[0]
    return np.unique(np.concatenate(rows)) if rows else _EMPTY


_EMPTY = np.zeros(0, np.int64)


class _Rows:
    """The rows a task reads of ACC (`reads`) and of OUT (`out_reads`), writes of either
    (`writes`), and writes whole (`whole`: its value afterwards does not depend on the
    value before): exact for GEMM, ALU and LOAD tasks, their regions (a superset) for
    others, which write nothing whole. `lo`..`hi` bound them all (a quick test first)."""

    def __init__(self, t: Task) -> None:
        ins = t.insn
        empty = _EMPTY
        self.out_reads = empty
        if ins is not None and ins.kind == "gemm":
            dst, _, wgt = _iterations(ins.kernel)
            init = ins.need[0] + wgt if ins.init and ins.need is not None and ins.need[0] is not None else empty
            plain = not ins.reset and not ins.init
            self.reads = dst if plain and not init.size else np.concatenate([dst if plain else empty, init])
            self.writes, self.whole = dst, empty if plain else dst
        elif ins is not None and ins.kind == "alu":
            dst, src, _ = _iterations(ins.kernel)
            self.reads = dst if ins.imm is not None else np.concatenate([dst, src])
            self.writes, self.whole = dst, empty
        elif ins is not None and ins.kind == "load" and ins.mem in (Mem.ACC, Mem.ACC_8BIT):
            self.reads, self.writes = empty, _span(t.writes, ("ACC",))
            self.whole = self.writes
        elif ins is not None and ins.kind in ("load", "cfg"):  # INP/WGT/UOP loads, CFG: no ACC/OUT rows
            self.reads = self.writes = self.whole = empty
        else:
            self.reads, self.out_reads = _span(t.reads, ("ACC",)), _span(t.reads, ("OUT",))
            self.writes, self.whole = _span(t.writes, ("ACC", "OUT")), empty
        parts = [a for a in (self.reads, self.out_reads, self.writes) if a.size]
        self.lo = min(int(a.min()) for a in parts) if parts else 1
        self.hi = max(int(a.max()) for a in parts) if parts else 0
        self.reads_lo = int(self.reads.min()) if self.reads.size else 1
        self.reads_hi = int(self.reads.max()) if self.reads.size else 0

    def touches(self, rows: _Set) -> bool:
        if self.hi < rows.lo or self.lo > rows.hi:
            return False
        m = rows.mask
        return bool(m[self.reads].any() or m[self.out_reads].any() or m[self.writes].any())

    def reads_any(self, rows: _Set) -> bool:
        if self.reads_hi < rows.lo or self.reads_lo > rows.hi:
            return False
        return bool(rows.mask[self.reads].any())


@lru_cache(maxsize=4096)
def _cached_rows(ins: TaskInsn | None, reads: tuple, writes: tuple) -> _Rows:
    """`_Rows` of a task, by what they depend on: a GEMM's or ALU's instruction, or (other
    tasks) its kind and regions."""
    return _Rows(Task(Stage.COMPUTE, None, list(reads), list(writes), insn=ins))


def _rows(t: Task) -> _Rows:
    if t.insn is not None and t.insn.kind in ("gemm", "alu"):
        return _cached_rows(t.insn, (), ())
    kind = None if t.insn is None else TaskInsn(t.insn.kind, mem=t.insn.mem)
    return _cached_rows(kind, tuple(t.reads), tuple(t.writes))


class _Set:
    """A set of rows: its mask over the buffer and its bounds."""

    def __init__(self, rows: np.ndarray, depth: int) -> None:
        self.mask = np.zeros(depth, bool)
        self.mask[rows] = True
        self.lo, self.hi = (int(rows.min()), int(rows.max())) if rows.size else (1, 0)


def _mask(rows: np.ndarray, depth: int) -> np.ndarray:
    m = np.zeros(depth, bool)
    m[rows] = True
    return m


def _once(rows: np.ndarray, depth: int) -> bool:
    """Whether no row repeats."""
    return int(np.count_nonzero(_mask(rows, depth))) == rows.size


def _is_alu(t: Task, op: AluOp, imm: bool) -> bool:
    return t.insn is not None and t.insn.kind == "alu" and t.insn.alu_op == op and (t.insn.imm is not None) == imm


def _is_gemm(t: Task) -> bool:
    return t.insn is not None and t.insn.kind == "gemm"


def _gemm_task(t: Task, label: str, reset: bool, init: bool, need: Need, reads: list,
               kernel: UopKernel | None = None) -> Task:
    """A copy of GEMM task `t` with reset/init and the CFG state it needs (and `kernel` instead of its own)."""
    kernel = kernel or t.insn.kernel
    what = f"GEMM {label} ({kernel.name!r})"

    def emit(s: Any) -> None:
        try:
            s.gemm(kernel, reset=reset, init=init)
        except StreamError as e:
            raise VDLAError(f"{what}: {e}") from None

    same = not init and reset == t.insn.reset and kernel is t.insn.kernel
    return replace(t, emit=t.emit if same else emit, reads=reads, label=label,
                   insn=replace(t.insn, kernel=kernel, reset=reset, init=init, need=need), pops=[], pushes=[])


def _tail(tasks: list[Task], a: int, config: Config) -> tuple[list[int], int, int, int] | None:
    """The tail starting at the ADD at `a`: (its task indices, shift, clip_lo, clip_hi), or None."""
    comp = [k for k in range(a, min(len(tasks), a + 16)) if tasks[k].stage == Stage.COMPUTE][:4]
    if len(comp) >= 4 and _is_alu(tasks[comp[1]], AluOp.SHR, True):
        idx, shift = comp[:4], tasks[comp[1]].insn.imm
    elif len(comp) >= 3:
        idx, shift = comp[:3], 0
    else:
        return None
    mx, mn = tasks[idx[-2]], tasks[idx[-1]]
    if not (_is_alu(mx, AluOp.MAX, True) and _is_alu(mn, AluOp.MIN, True)):
        return None
    lo_ok, hi_ok = -(1 << (config.out_width - 1)), (1 << (config.out_width - 1)) - 1
    lo, hi = mx.insn.imm, mn.insn.imm
    if not (0 <= shift < min(config.acc_width, 1 << config.epilogue_shift_bits)
            and lo_ok <= lo <= hi_ok and lo_ok <= hi <= hi_ok):
        return None
    return idx, shift, lo, hi


def _copy_kernel(kernel: UopKernel, bias_of: np.ndarray, prefer: int | None,
                 config: Config) -> tuple[UopKernel, int] | None:
    """The reset `kernel` as a reset + init that copies bias row ``bias_of[d]`` into every row d
    it writes, and its init_base: the same dst/src indices, WGT indices (which a reset never
    reads) ``bias_of[d] - init_base`` when those are affine in the loops with non-negative
    factors and below wgt_depth (as any WGT index). init_base is `prefer` where it fits (no
    CFG needed between tiles), else the lowest bias row. None: not expressible."""
    dst = _iterations(kernel)[0]
    if not _once(dst, bias_of.size) or (bias_of[dst] < 0).any():
        return None
    loops = list(kernel.loops) + [Loop(1)] * (2 - len(kernel.loops))
    b = bias_of[dst].reshape(loops[0].extent, loops[1].extent, len(kernel.uops))
    fo = int(b[1, 0, 0] - b[0, 0, 0]) if b.shape[0] > 1 else 0
    fi = int(b[0, 1, 0] - b[0, 0, 0]) if b.shape[1] > 1 else 0
    i, j = np.arange(b.shape[0])[:, None, None], np.arange(b.shape[1])[None, :, None]
    if fo < 0 or fi < 0 or not (b == b[:1, :1, :] + i * fo + j * fi).all():
        return None
    lo, hi = int(b.min()), int(b.max())
    base = prefer if prefer is not None and prefer <= lo and hi - prefer < config.wgt_depth else lo
    if hi - base >= config.wgt_depth or max(fo, fi) >= config.wgt_depth or base >= 1 << config.log_acc_depth:
        return None
    uops = tuple((d, s_, int(c) - base) for (d, s_, _), c in zip(kernel.uops, b[0, 0], strict=True))
    new_loops = tuple(replace(lp, wgt=f) for lp, f in zip(kernel.loops, (fo, fi)))
    return UopKernel(uops, new_loops, kernel.name), base


def _split_uops(kernel: UopKernel, depth: int) -> tuple[UopKernel, UopKernel] | None:
    """`kernel` as K1, the uops whose rows (over the loops) no uop before them writes, and K2, the
    others in their order (None: K1 misses a row or K2 is empty, or a part breaks the rules)."""
    dst = _iterations(kernel)[0]
    nu = len(kernel.uops)
    per = dst.reshape(-1, nu)
    seen = np.zeros(depth, bool)
    first: list[int] = []
    for u in range(nu):
        r = per[:, u]
        if not seen[r].any() and _once(r, depth):
            seen[r] = True
            first.append(u)
    rest = [u for u in range(nu) if u not in set(first)]
    if not rest or not first or not seen[dst].all():
        return None
    try:
        return (UopKernel(tuple(kernel.uops[u] for u in first), kernel.loops, kernel.name),
                UopKernel(tuple(kernel.uops[u] for u in rest), kernel.loops, kernel.name))
    except KernelError:
        return None


def _split_loop(kernel: UopKernel) -> tuple[UopKernel, UopKernel] | None:
    """`kernel` with a loop that moves no dst index (an input-channel loop) as K1, its first
    iteration, and K2, the others (the uops advanced one iteration, the extent one less)."""
    for n, lp in enumerate(kernel.loops):
        if lp.extent > 1 and lp.dst == 0:
            first = tuple(replace(x, extent=1) if m == n else x for m, x in enumerate(kernel.loops))
            rest = tuple(replace(x, extent=x.extent - 1) if m == n else x for m, x in enumerate(kernel.loops))
            uops = tuple((d, s_ + lp.src, w + lp.wgt) for d, s_, w in kernel.uops)
            try:
                return UopKernel(kernel.uops, first, kernel.name), UopKernel(uops, rest, kernel.name)
            except KernelError:
                return None
    return None


def _split_first(kernel: UopKernel, depth: int) -> list[UopKernel] | None:
    """A GEMM kernel that writes some row more than once as kernels K1, K2[, K3] run in turn:
    K1 writes every row of the kernel exactly once (the others then accumulate: sums wrap, so
    the order of the additions does not change ACC). First a loop that moves no dst index
    splits off its first iteration, then K1's uops split into those whose rows no uop before
    them writes and the rest. Their iterations, enumerated, are the kernel's (checked). None:
    no such split."""
    parts = [kernel]
    for split in (_split_loop, lambda k: _split_uops(k, depth)):
        if not _once(_iterations(parts[0])[0], depth):
            got = split(parts[0])
            if got is not None:
                parts = [*got, *parts[1:]]
    d1 = _iterations(parts[0])[0]
    if len(parts) == 1 or not _once(d1, depth):
        return None
    whole = np.stack(_iterations(kernel))
    split_ = np.concatenate([np.stack(_iterations(k)) for k in parts], axis=1)
    if (whole.shape != split_.shape or not _mask(d1, depth)[whole[0]].all()
            or not (whole[:, np.lexsort(whole)] == split_[:, np.lexsort(split_)]).all()):
        return None
    return parts


def _relayout(li: TaskInsn, bias_of: np.ndarray, dst: np.ndarray, wgt: np.ndarray, free_lo: int,
              prefer: int | None, config: Config) -> tuple[int, int, int, int] | None:
    """Where the bias load `li` could put its rows so that an init GEMM writing rows `dst` with
    WGT indices `wgt` reads row d's bias at init_base + wgt: row i of the load (DRAM element
    i after its start) at start + S*i, the S - 1 rows between zero padding, with row d's
    bias ``bias_of[d]`` the load's row r(d) and wgt(d) = c + S*r(d) for one c and S >= 2.
    (start, S, rows, init_base), start at or above `free_lo` (ACC rows no task touches), or None."""
    if li.load is None or li.remake is None:
        return None
    s0, xn, yn, xs, *pads = li.load
    if any(pads) or not (yn == 1 or xs == xn):
        return None
    n = xn * yn
    r = bias_of[dst] - s0
    if not r.size or (r < 0).any() or (r >= n).any() or r.max() == r.min():
        return None
    i0, i1 = int(np.argmin(r)), int(np.argmax(r))
    S, rem = divmod(int(wgt[i1] - wgt[i0]), int(r[i1] - r[i0]))
    c = wgt - S * r
    if rem or S < 2 or not (c == c[0]).all():
        return None
    if S - 1 > 2 * _PAD_MAX:  # the padding of a row: x_pad_0 + x_pad_1
        return None
    c0, p0 = int(c[0]), max(0, S - 1 - _PAD_MAX)  # p0: the zeros before each row (see _padded_load)
    start = max(free_lo + p0, c0)
    if prefer is not None and prefer + c0 - p0 >= free_lo and prefer + c0 - p0 + n * S <= config.acc_depth:
        start = prefer + c0
    base = start - c0
    if base < 0 or base >= 1 << config.log_acc_depth or start - p0 + n * S > config.acc_depth:
        return None
    return start, S, n, base


#: the most zero elements a load puts before (or after) each row
_PAD_MAX = (1 << next(f.width for f in FORMATS["mem"] if f.name == "x_pad_1")) - 1


def _padded_load(t: Task, li: TaskInsn, start: int, S: int, n: int) -> Task:
    """Load task `t` (`li`: its instruction, n contiguous rows) as a load of row i to ACC row
    start + S * i, the others zero: rows of one element padded to S (the zeros after it, those
    past the pad field's range before it, the first row then starting that much earlier)."""
    p0 = max(0, S - 1 - _PAD_MAX)
    lo = start - p0
    return replace(t, emit=li.remake(lo, 1, n, 1, (p0, S - 1 - p0), (0, 0)), writes=[("ACC", lo, lo + n * S)],
                   label="load ACC bias padded", insn=replace(li, load=(lo, 1, n, 1, p0, 0, S - 1 - p0, 0)),
                   pops=[], pushes=[])


def _fuse_one(tasks: list[Task], a: int, config: Config, prefer: int | None = None,
              cache: dict[int, tuple[Task, _Rows]] | None = None, free_lo: int | None = None) -> tuple[list[Task], int, int] | str:
    """`tasks` with the tile whose tail's ADD is at index `a` rewritten, its init_base and the
    index of the first task after it there, or the precondition (of the module docstring's)
    that fails, in words. `prefer`: the
    init_base a reset + init takes where it can (the previous tile's); `cache`: the tasks'
    rows, by task (kept across calls); `free_lo`: the first ACC row above every row a task
    touches (where a padded bias load may go; None: none)."""
    depth = max(config.acc_depth, config.out_depth)
    found = _tail(tasks, a, config)
    if found is None:
        return "tail: not ADD, [SHR imm], MAX imm, MIN imm with the epilogue's ranges"
    idx, shift, lo, hi = found
    add_d, add_s, _ = _iterations(tasks[a].insn.kernel)
    if not _once(add_d, depth):
        return 'tail: the ADD writes a row twice'
    Ds = _Set(add_d, depth)
    D = Ds.mask
    if D[add_s].any():  # a bias row the tail itself writes
        return 'tail: the ADD reads a row it writes'
    for k in idx[1:]:
        d = _iterations(tasks[k].insn.kernel)[0]
        if not (d.size == add_d.size and _once(d, depth) and D[d].all()):
            return "tail: an instruction's rows differ from the ADD's (or repeat)"
    bias_of = np.full(depth, -1, np.int64)
    bias_of[add_d] = add_s
    Bs = _Set(add_s, depth)
    B = Bs.mask
    cache = {} if cache is None else cache

    def rows_of(k: int) -> _Rows:
        t = tasks[k]
        hit = cache.get(id(t))
        if hit is None or hit[0] is not t:
            hit = cache[id(t)] = (t, _rows(t))
        return hit[1]

    # the tile: back from the ADD to its reset, collecting the GEMMs that accumulate on D
    members: list[int] = []
    reset = None
    for k in range(a - 1, max(-1, a - 1 - WINDOW), -1):
        t = tasks[k]
        if not rows_of(k).touches(Ds):
            continue
        if not _is_gemm(t) or t.insn.init:
            return "tile: a task other than a plain GEMM or the reset writes the tail's rows"
        dst = rows_of(k).writes
        if t.insn.reset:
            if _mask(dst, depth).tolist() != D.tolist():
                return "tile: the reset's rows are not the tail's"
            reset = k
            break
        if not D[dst].all():
            return "tile: a GEMM writes rows outside the tail's"
        members.insert(0, k)
    if reset is None or not members:
        return 'tile: no reset (in the window) or no GEMM after it'
    inside = set(idx) | set(members) | {reset}
    if any(rows_of(k).touches(Ds) for k in range(reset, idx[-1] + 1) if k not in inside):
        return "tile: another task touches the tail's rows"
    # the bias rows' load: the latest write of them before the ADD
    load = next((k for k in range(a - 1, max(-1, a - 1 - WINDOW), -1)
                 if rows_of(k).hi >= Bs.lo and rows_of(k).lo <= Bs.hi and B[rows_of(k).writes].any()), None)
    if load is None:
        return 'bias: no write of the bias rows before the ADD'
    li = tasks[load].insn
    if li is None or li.kind != "load" or li.mem != Mem.ACC or not _mask(rows_of(load).whole, depth)[B].all():
        return 'bias: not loaded whole by one LOAD ACC'
    # init: the first GEMM (or, where it writes a row twice, its first part) starts from the
    # bias row, read where the load puts it or where a padded load puts it; else the reset copies it
    first = tasks[members[0]]
    split = None
    g_dst, _, g_w = _iterations(first.insn.kernel)
    if not _once(g_dst, depth):
        split = _split_first(first.insn.kernel, depth)
        g_dst, _, g_w = _iterations(split[0]) if split is not None else (g_dst, None, g_w)
    base, reset_kernel, relaid = None, None, None
    # what the reset costs (an instruction, a cycle a row of D) against what replaces it: the
    # split's extra GEMMs, the padding (a cycle a row); a tile of a few rows keeps its reset
    insn = config.timing.insn_overhead + pipeline_latency(config, "gemm") if WEIGH else 0
    extra = (len(split) - 1) * insn if split is not None else 0
    if g_dst.size == add_d.size and _once(g_dst, depth) and D[g_dst].all() and extra <= add_d.size:
        b = bias_of[g_dst] - g_w
        if (b == b[0]).all() and 0 <= b[0] < 1 << config.log_acc_depth:
            base, reader = int(b[0]), members[0]
        else:
            relaid = None if free_lo is None else _relayout(li, bias_of, g_dst, g_w, free_lo, prefer, config)
            if relaid is not None and (extra + relaid[2] * (relaid[1] - 1) < add_d.size or not WEIGH):
                base, reader = relaid[3], members[0]
            else:
                relaid = None
    if base is None:
        split = None
        found_reset = _copy_kernel(tasks[reset].insn.kernel, bias_of, prefer, config)
        if found_reset is None:
            return 'init: no constant init_base for the first GEMM, no WGT indices for the reset'
        reset_kernel, base = found_reset
        reader = reset
    keep_load = False
    if relaid is not None:  # the padded load goes just before the init GEMM; the bias load goes unless read elsewhere
        for k in range(min(load, reader) + 1, max(load, reader)):
            if tasks[k].stage == Stage.STORE and (tasks[k].insn is None or tasks[k].insn.arg == li.arg):
                return 'bias: a store between the bias load and the GEMM that reads it'
        for k in range(load + 1, len(tasks)):
            r = rows_of(k)
            if k != a and r.reads_any(Bs):
                keep_load = True
                break
            if r.whole.size and r.hi >= Bs.lo and r.lo <= Bs.hi and _mask(r.whole, depth)[B].all():
                break
    elif load > reader:
        L = _Set(rows_of(load).writes, depth)
        for k in range(reader + 1, load):
            t = tasks[k]
            if rows_of(k).touches(L) or (t.stage == Stage.STORE and (t.insn is None or t.insn.arg == li.arg)):
                return 'bias: the load cannot move before the GEMM that reads it'
    # after the tail, ACC rows of D are read only after being written whole
    dirty = _Set(add_d, depth)
    left = add_d.size
    for k in range(idx[-1] + 1, len(tasks)):
        r = rows_of(k)
        if r.reads_any(dirty):
            return "after: the tail's ACC rows are read before being rewritten"
        if r.whole.size and r.hi >= dirty.lo and r.lo <= dirty.hi and dirty.mask[r.whole].any():
            dirty.mask[r.whole] = False
            left = int(np.count_nonzero(dirty.mask))
            if not left:
                break
    # the rewrite, of tasks[reset .. the MIN]
    bias_lo, bias_hi = int(add_s.min()), int(add_s.max()) + 1
    out: dict[int, Any] = {}
    epi = (None, shift, lo, hi)
    for k in members:
        out[k] = [_gemm_task(tasks[k], tasks[k].label, False, False, epi, tasks[k].reads)]
    moved = [tasks[load]] if relaid is None and load > reader else []
    if reader == reset:
        t = tasks[reset]
        out[reset] = [*moved, _gemm_task(t, "gemm reset init", True, True, (base, shift, lo, hi), [("ACC", bias_lo, bias_hi)],
                                 reset_kernel)]
    else:
        t = tasks[reader]
        got = []
        if relaid is not None:
            padded = _padded_load(tasks[load], li, *relaid[:3])
            got.append(padded)
            bias_lo, bias_hi = padded.writes[0][1:]
        got += moved
        k1 = split[0] if split is not None else None
        got.append(_gemm_task(t, "gemm init", False, True, (base, shift, lo, hi),
                              [*t.reads, ("ACC", bias_lo, bias_hi)], k1))
        got += [_gemm_task(t, t.label, False, False, epi, t.reads, k) for k in (split or [])[1:]]
        out[reader] = got
    drop = set(idx) | ({reset} if reader != reset else set())
    if moved or (relaid is not None and not keep_load):
        drop.add(load)
    first_k = min(reset, load)
    middle = []
    for k in range(first_k, idx[-1] + 1):
        if k in out:
            middle += out[k]
        elif k not in drop:
            middle.append(tasks[k])
    return [*tasks[:first_k], *middle, *tasks[idx[-1] + 1:]], base, first_k + len(middle)


def fuse_requant_tails(tasks: list[Task], config: Config) -> list[Task]:
    """Rewrite every tile whose requantisation tail the GEMMs can do (the module docstring
    says when); then place the CFGs (`place_cfg`). Unchanged when no tile qualifies."""
    out = list(tasks)
    fused, base = 0, None
    cache: dict[int, tuple[Task, _Rows]] = {}
    free_lo = max((hi for t in tasks for r, _, hi in (*t.reads, *t.writes) if r in ("ACC", "OUT")), default=0)
    k = 0
    while k < len(out):
        t = out[k]
        if _is_alu(t, AluOp.ADD, False):
            got = _fuse_one(out, k, config, base, cache, free_lo)
            if REJECTED is not None and isinstance(got, str):
                REJECTED.append(f"{t.insn.kernel.name}: {got}")
            if not isinstance(got, str):
                out, base, k = got  # k: the first task after the tile's tail
                fused += 1
                continue
        k += 1
    return place_cfg(out) if fused else out


def place_cfg(tasks: list[Task]) -> list[Task]:
    """Put a CFG task before every GEMM whose need (its `TaskInsn.need`) the CFG state there does
    not meet, starting from the state every run starts in (all 0): need None, a GEMM not
    rewritten (or any task not known to be no GEMM), runs with the epilogue off; (init_base,
    shift, lo, hi) with it on and those values (init_base None: any). A CFG changes only what
    it must (the other fields keep their values)."""
    state = (0, 0, 0, 0, False)  # init_base, shift, clip_lo, clip_hi, epilogue
    out: list[Task] = []
    for t in tasks:
        ins = t.insn
        if t.stage == Stage.COMPUTE and (ins is None or ins.kind == "gemm"):
            need = ins.need if ins is not None else None
            base, sh, lo, hi, epi = state
            if need is None:
                want = (base, sh, lo, hi, False)
            else:
                want = (base if need[0] is None else need[0], need[1], need[2], need[3], True)
            if want != state and (need is not None or epi):
                out.append(_cfg_task(want, t))
                state = want
        out.append(t)
    return out


def _cfg_task(state: tuple[int, int, int, int, bool], before: Task) -> Task:
    base, sh, lo, hi, epi = state

    def emit(s: Any) -> None:
        try:
            s.cfg(init_base=base, shift=sh, clip_lo=lo, clip_hi=hi, epilogue=epi)
        except StreamError as e:
            raise VDLAError(f"CFG before {before.label!r}: {e}") from None

    need = (base, sh, lo, hi) if epi else None
    return Task(Stage.COMPUTE, emit, [], [], "cfg", vt=before.vt, epoch=before.epoch,
                insn=TaskInsn("cfg", need=need))
