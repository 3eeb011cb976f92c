"""Code generation: lowered IR -> task stream -> dependency tokens -> Program.

The lowered function is host code in the IR: loops around VDLA intrinsics. It is
translated to a Python function and run once at build time (ahead of time; VTA's
runtime does the same at every call), calling an :class:`Emitter` that checks every
instruction against the buffers and records it as a task with the on-chip regions it
reads and writes (and what it does, for :mod:`.fuse_tail`, which then moves requantisation
tails into the GEMMs). :func:`vdla.compiler.targets.vdla.sync.plan_tokens` then places the
dependency tokens, and the tasks are written through the runtime's
:class:`~vdla.runtime.CommandStream` (which caches micro-op kernels on chip and applies
VTA's flag rules) into a Program. DRAM addresses of the arguments are left relative and
recorded as relocations; the built function patches them per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....config import Config
from ....isa import AluOp, ISAError, Mem, Stage
from ....runtime import CommandStream, Loop, Program, StreamError, UopKernel
from ....runtime.kernel import KernelError
from ...tir.nodes import (
    Allocate,
    AttrStmt,
    BinOp,
    Buffer,
    BufferLoad,
    BufferStore,
    CallExtern,
    Cast,
    Cmp,
    Evaluate,
    Expr,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Logic,
    Not,
    PrimFunc,
    Select,
    Seq,
    Stmt,
    Var,
)
from ...tir.visitor import walk
from . import fuse_tail
from .dma import LOAD, STORE
from .env import SCOPE_MEM, VDLAError, get_env
from .fuse_tail import TaskInsn
from .kernel import GEMM, KernelSpec
from .sync import Task, TokenPlan, plan_tokens

_PYOP = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@dataclass
class SramBuffer:
    buffer: Buffer
    mem: Mem
    base: int
    elems: int
    lanes: int


@dataclass
class ArgSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


class _PyGen:
    """IR -> Python source of ``def host(em):``."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.consts: list[Any] = []
        self.lines: list[str] = []

    def var(self, v: Var) -> str:
        n = self.names.get(v)
        if n is None:
            n = f"v{len(self.names)}"
            self.names[v] = n
        return n

    def const(self, x: Any) -> str:
        self.consts.append(x)
        return f"K[{len(self.consts) - 1}]"

    def expr(self, e: Expr) -> str:
        if isinstance(e, IntImm):
            return str(e.value)
        if isinstance(e, Var):
            if e not in self.names:
                raise VDLAError(f"variable {e.name!r} is not bound in the VDLA host code")
            return self.names[e]
        if isinstance(e, Cast):
            return self.expr(e.value)
        if isinstance(e, BinOp):
            a, b = self.expr(e.a), self.expr(e.b)
            if e.op in _PYOP:
                return f"({a} {_PYOP[e.op]} {b})"
            if e.op in ("min", "max"):
                return f"{e.op}({a}, {b})"
            if e.op == "truncdiv":
                return f"_tdiv({a}, {b})"
            if e.op == "truncmod":
                return f"_tmod({a}, {b})"
        if isinstance(e, Cmp):
            return f"({self.expr(e.a)} {_CMP[e.op]} {self.expr(e.b)})"
        if isinstance(e, Logic):
            return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Not):
            return f"(not {self.expr(e.a)})"
        if isinstance(e, Select):
            return f"({self.expr(e.t)} if {self.expr(e.cond)} else {self.expr(e.f)})"
        raise VDLAError(f"expression {e} cannot be evaluated by the VDLA host code")

    def addr(self, e: Expr) -> str:
        if isinstance(e, IntImm):
            return "None"
        if hasattr(e, "value") and isinstance(e.value, BufferLoad):
            return f"({self.const(e.value.buffer)}, {self.expr(e.value.index)})"
        raise VDLAError(f"operand {e} is not an address")

    def stmt(self, s: Stmt, ind: str) -> None:
        out = self.lines.append
        if isinstance(s, Seq):
            for x in s.stmts:
                self.stmt(x, ind)
        elif isinstance(s, For):
            v = self.var(s.var)
            lo = self.expr(s.min)
            out(f"{ind}for {v} in range({lo}, {lo} + {self.expr(s.extent)}):")
            out(f"{ind}    em.epoch += 1")
            self.stmt(s.body, ind + "    ")
        elif isinstance(s, Allocate):
            self.stmt(s.body, ind)
        elif isinstance(s, LetStmt):
            out(f"{ind}{self.var(s.var)} = {self.expr(s.value)}")
            self.stmt(s.body, ind)
        elif isinstance(s, IfThenElse):
            out(f"{ind}if {self.expr(s.cond)}:")
            self.stmt(s.then_case, ind + "    ")
            if s.else_case is not None:
                out(f"{ind}else:")
                self.stmt(s.else_case, ind + "    ")
        elif isinstance(s, AttrStmt) and s.key == "vdla_kernel":
            # one kernel, one or more calls (virtual threads replicate the call inside the attribute)
            k = self.const(s.value)
            calls = s.body.stmts if isinstance(s.body, Seq) else [s.body]
            for vt, c in enumerate(calls):
                call = c.value if isinstance(c, Evaluate) else None
                if not isinstance(call, CallExtern):
                    raise VDLAError(f"malformed kernel statement {s}")
                a = call.args
                # the calls of a replicated kernel are the virtual threads' copies, in thread order
                tag = vt if len(calls) > 1 else None
                if call.name == GEMM:
                    out(f"{ind}em.gemm({k}, {self.expr(a[0])}, {self.addr(a[1])}, {self.addr(a[2])}, {self.addr(a[3])}, "
                        f"{tag})")
                else:
                    out(f"{ind}em.alu({k}, {self.expr(a[0])}, {self.expr(a[1])}, {self.expr(a[2])}, "
                        f"{self.addr(a[3])}, {self.addr(a[4])}, {tag})")
        elif isinstance(s, AttrStmt) and s.key == "vdla_thread":
            out(f"{ind}em.thread = {self.expr(s.value)}")
            out(f"{ind}em.vt = em.thread")
            self.stmt(s.body, ind)
            out(f"{ind}em.thread = 0")
            out(f"{ind}em.vt = None")
        elif isinstance(s, AttrStmt):
            self.stmt(s.body, ind)
        elif isinstance(s, Evaluate) and isinstance(s.value, CallExtern) and s.value.name in (LOAD, STORE):
            a = s.value.args
            if s.value.name == LOAD:
                rest = ", ".join(self.expr(x) for x in a[3:])
                out(f"{ind}em.load({self.expr(a[0])}, {self.addr(a[1])}, {self.addr(a[2])}, {rest})")
            else:
                rest = ", ".join(self.expr(x) for x in a[2:])
                out(f"{ind}em.store({self.addr(a[0])}, {self.addr(a[1])}, {rest})")
        elif isinstance(s, BufferStore):
            raise VDLAError(
                f"stage {s.buffer.name!r}: a store to {s.buffer.name!r} ({s.buffer.scope}) was not lowered to VDLA; "
                "copies need pragma dma_copy, element-wise stages pragma alu in the accumulator scope, "
                "reductions tensorize with env.gemm"
            )
        elif isinstance(s, Evaluate):
            raise VDLAError(f"statement {s} cannot run on VDLA")
        else:
            raise VDLAError(f"{type(s).__name__} statement cannot run on VDLA")


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - b * _tdiv(a, b)


class Emitter:
    """Receives the instructions of the host code, checks them, records tasks."""

    def __init__(self, config: Config, sram: dict[Buffer, SramBuffer], args: dict[Buffer, int]) -> None:
        self.config = config
        self.env = get_env(config)
        self.sram = sram
        self.args = args
        self.tasks: list[Task] = []
        self.relocs: list[tuple[int, int, Mem]] = []  # filled while writing the stream
        self._kcache: dict[Any, UopKernel] = {}
        self.thread = 0  # virtual thread of the DMA being emitted
        self.vt: int | None = None  # the same, None outside virtual threads
        self.epoch = 0  # loop iterations begun so far (a task's epoch: the innermost loop iteration it is in)

    def _sram(self, a: tuple[Buffer, int], what: str) -> tuple[SramBuffer, int]:
        buf, idx = a
        sb = self.sram.get(buf)
        if sb is None:
            raise VDLAError(f"{what}: {buf.name!r} ({buf.scope}) is not an on-chip buffer")
        if idx % sb.lanes:
            raise VDLAError(f"{what}: offset {idx} into {buf.name!r} is not a whole {sb.lanes}-lane element")
        return sb, sb.base + idx // sb.lanes

    def _in(self, sb: SramBuffer, lo: int, hi: int, what: str) -> None:
        if lo < sb.base or hi > sb.base + sb.elems:
            raise VDLAError(
                f"stage {sb.buffer.name!r}: {what} touches {sb.mem.name} elements [{lo}, {hi}) outside its buffer "
                f"{sb.buffer.name!r} [{sb.base}, {sb.base + sb.elems})"
            )

    def _dram(self, a: tuple[Buffer, int], lanes: int, what: str) -> tuple[int, int]:
        buf, idx = a
        if buf not in self.args:
            raise VDLAError(f"{what}: {buf.name!r} is not an argument of the function (DRAM tensor)")
        if idx % lanes:
            raise VDLAError(f"{what}: DRAM offset {idx} of {buf.name!r} is not a whole {lanes}-lane element")
        return self.args[buf], idx // lanes

    def load(self, mem: int, sram: Any, dram: Any, xn: int, yn: int, xs: int, xp0: int, yp0: int, xp1: int, yp1: int) -> None:
        mem = Mem(mem)
        what = f"load of {sram[0].name!r}"
        sb, s0 = self._sram(sram, what)
        lanes = self.env.elem_scalars(mem)
        arg, d0 = self._dram(dram, lanes, what)
        if xn <= 0 or yn <= 0:
            raise VDLAError(f"stage {sb.buffer.name!r}: a DMA tile lies entirely in the padding ({xn}x{yn} elements)")
        rows, cols = yp0 + yn + yp1, xp0 + xn + xp1
        self._in(sb, s0, s0 + rows * cols, "a load")
        stage = Stage.LOAD if mem in (Mem.INP, Mem.WGT) else Stage.COMPUTE
        res = {Mem.INP: "INP", Mem.WGT: "WGT"}.get(mem, "ACC")

        def remake(s0: int, xn: int, yn: int, xs: int, x_pad: tuple[int, int], y_pad: tuple[int, int]) -> Any:
            """The emit of this load with another SRAM start and shape (the same DRAM start)."""

            def emit(s: CommandStream) -> None:
                try:
                    s.load_2d(mem, s0, 0, x_size=xn, y_size=yn, x_stride=xs, offset=d0, x_pad=x_pad, y_pad=y_pad)
                except StreamError as e:
                    raise VDLAError(f"stage {sb.buffer.name!r}: {e}") from None
                self.relocs.append((len(s.insns) - 1, arg, mem))

            return emit

        emit = remake(s0, xn, yn, xs, (xp0, xp1), (yp0, yp1))
        shape = (s0, xn, yn, xs, xp0, yp0, xp1, yp1)
        self.tasks.append(Task(stage, emit, [], [(res, s0, s0 + rows * cols)], f"load {mem.name}", thread=self.thread,
                               vt=self.vt, epoch=self.epoch,
                               insn=TaskInsn("load", mem=mem, arg=arg, load=shape, remake=remake)))

    def store(self, sram: Any, dram: Any, xn: int, yn: int, xs: int) -> None:
        what = f"store of {sram[0].name!r}"
        sb, s0 = self._sram(sram, what)
        arg, d0 = self._dram(dram, self.env.elem_scalars(Mem.OUT), what)
        self._in(sb, s0, s0 + xn * yn, "a store")

        def emit(s: CommandStream) -> None:
            try:
                s.store_2d(s0, 0, x_size=xn, y_size=yn, x_stride=xs, offset=d0)
            except StreamError as e:
                raise VDLAError(f"stage {sb.buffer.name!r}: {e}") from None
            self.relocs.append((len(s.insns) - 1, arg, Mem.OUT))

        self.tasks.append(Task(Stage.STORE, emit, [("OUT", s0, s0 + xn * yn)], [], "store", thread=self.thread,
                               vt=self.vt, epoch=self.epoch, insn=TaskInsn("store", mem=Mem.OUT, arg=arg)))

    def _kernel(self, spec: KernelSpec, bases: tuple[int, int, int], what: str) -> UopKernel:
        key = (id(spec), bases)
        k = self._kcache.get(key)
        if k is None:
            d, s_, w = bases
            try:
                k = UopKernel(
                    tuple((d + u[0], s_ + u[1], w + u[2]) for u in spec.uops),
                    tuple(Loop(e, fd, fs, fw) for e, fd, fs, fw in spec.loops),
                    spec.name,
                )
            except KernelError as e:
                raise VDLAError(f"{what}: {e}") from None
            self._kcache[key] = k
        return k

    def gemm(self, spec: KernelSpec, reset: int, dst: Any, src: Any, wgt: Any, vt: int | None = None) -> None:
        what = f"stage {dst[0].name!r}: GEMM"
        db, d0 = self._sram(dst, what)
        lo, hi = spec.span(0)
        self._in(db, d0 + lo, d0 + hi + 1, "a GEMM")
        reads = []
        s0 = w0 = 0
        if not reset:
            sb, s0 = self._sram(src, what)
            wb, w0 = self._sram(wgt, what)
            slo, shi = spec.span(1)
            wlo, whi = spec.span(2)
            self._in(sb, s0 + slo, s0 + shi + 1, "a GEMM")
            self._in(wb, w0 + wlo, w0 + whi + 1, "a GEMM")
            reads = [("INP", s0 + slo, s0 + shi + 1), ("WGT", w0 + wlo, w0 + whi + 1)]
        kernel = self._kernel(spec, (d0, s0, w0), what)
        writes = [("ACC", d0 + lo, d0 + hi + 1), ("OUT", d0 + lo, d0 + hi + 1)]

        def emit(s: CommandStream) -> None:
            try:
                s.gemm(kernel, reset=bool(reset))
            except StreamError as e:
                raise VDLAError(f"{what}: {e}") from None

        self.tasks.append(Task(Stage.COMPUTE, emit, reads, writes, "gemm reset" if reset else "gemm", vt=vt,
                               epoch=self.epoch, insn=TaskInsn("gemm", kernel=kernel, reset=bool(reset))))

    def alu(self, spec: KernelSpec, op: int, use_imm: int, imm: int, dst: Any, src: Any,
            vt: int | None = None) -> None:
        what = f"stage {dst[0].name!r}: ALU {AluOp(op).name}"
        db, d0 = self._sram(dst, what)
        lo, hi = spec.span(0)
        self._in(db, d0 + lo, d0 + hi + 1, "an ALU op")
        s0 = 0
        reads = [("ACC", d0 + lo, d0 + hi + 1)]
        if not use_imm:
            sb, s0 = self._sram(src, what)
            slo, shi = spec.span(1)
            self._in(sb, s0 + slo, s0 + shi + 1, "an ALU op")
            reads.append(("ACC", s0 + slo, s0 + shi + 1))
        kernel = self._kernel(spec, (d0, s0, 0), what)
        writes = [("ACC", d0 + lo, d0 + hi + 1), ("OUT", d0 + lo, d0 + hi + 1)]
        aop = AluOp(op)

        def emit(s: CommandStream) -> None:
            try:
                s.alu(kernel, aop, imm if use_imm else None)
            except StreamError as e:
                raise VDLAError(f"{what}: {e}") from None

        self.tasks.append(Task(Stage.COMPUTE, emit, reads, writes, f"alu {aop.name}", vt=vt, epoch=self.epoch,
                               insn=TaskInsn("alu", kernel=kernel, alu_op=aop, imm=imm if use_imm else None)))


def allocate_sram(func: PrimFunc, config: Config) -> dict[Buffer, SramBuffer]:
    """Static allocation of every on-chip buffer; errors name the buffer and the limit."""
    env = get_env(config)
    tops = {m: 0 for m in (Mem.INP, Mem.WGT, Mem.ACC)}
    out: dict[Buffer, SramBuffer] = {}
    per_mem: dict[Mem, list[str]] = {m: [] for m in tops}
    nthreads = 1
    for n in walk(func.body):
        if isinstance(n, AttrStmt) and n.key == "virtual_thread":
            nthreads = max(nthreads, int(str(n.value).rsplit("=", 1)[-1]))
    for n in walk(func.body):
        if not isinstance(n, Allocate) or n.buffer.scope == "global":
            continue
        b = n.buffer
        if b.scope not in SCOPE_MEM:
            raise VDLAError(f"stage {b.name!r}: scope {b.scope!r} is not a VDLA buffer ({', '.join(SCOPE_MEM)})")
        mem = SCOPE_MEM[b.scope]
        lanes = env.elem_scalars(mem)
        size = 1
        for d in b.shape:
            if not isinstance(d, IntImm):
                raise VDLAError(f"stage {b.name!r}: on-chip buffer with a symbolic size {b.shape}")
            size *= d.value
        if size % lanes:
            raise VDLAError(f"stage {b.name!r}: {size} scalars are not whole {lanes}-lane {mem.name} elements")
        elems = size // lanes
        out[b] = SramBuffer(b, mem, tops[mem], elems, lanes)
        tops[mem] += elems
        per_mem[mem].append(f"{b.name} {elems}")
    for mem, used in tops.items():
        depth = env.depth(mem)
        if used > depth:
            vt = f" (with {nthreads} virtual threads, each holding its own copy)" if nthreads > 1 else ""
            raise VDLAError(
                f"{mem.name} buffer overflow: stages need {used} elements{vt} but config {config.name!r} has "
                f"{depth} ({', '.join(per_mem[mem])} elements); tile larger than a buffer: reduce the tile "
                "sizes or the virtual threads"
            )
    return out


def group_thread_loads(tasks: list[Task]) -> list[Task]:
    """Within a run of consecutive load-module tasks, put each virtual thread's loads together
    (thread 0's data and weights, then thread 1's), so one thread's compute can start while the
    other thread's loads run. Loads in a run write disjoint buffers, so the order is free."""
    out: list[Task] = []
    i = 0
    while i < len(tasks):
        j = i
        while j < len(tasks) and tasks[j].stage == Stage.LOAD:
            j += 1
        if j == i:
            out.append(tasks[i])
            i += 1
            continue
        run = tasks[i:j]
        spans = sorted((r, lo, hi) for t in run for r, lo, hi in t.writes)
        disjoint = all(a[0] != b[0] or a[2] <= b[1] for a, b in zip(spans, spans[1:], strict=False))
        if disjoint and len({t.thread for t in run}) > 1:
            run = sorted(run, key=lambda t: t.thread)
        out.extend(run)
        i = j
    return out


def _conflict(a: Task, b: Task) -> bool:
    """Whether two tasks touch a common on-chip region and one of them writes it."""
    for ra, wa, rb, wb in ((a.writes, True, b.writes, True), (a.writes, True, b.reads, False),
                           (a.reads, False, b.writes, True)):
        for r, lo, hi in ra:
            for r2, lo2, hi2 in rb:
                if r == r2 and lo < hi2 and lo2 < hi and (wa or wb):
                    return True
    return False


#: how many tasks ahead :func:`sink_resets` looks for a reset's first conflicting task
SINK_WINDOW = 64


def sink_resets(tasks: list[Task]) -> list[Task]:
    """Move each accumulator reset (a GEMM with reset) down to just before the first later task
    it conflicts with (the GEMM that accumulates there): the reset of a tile is emitted at the
    start of the tile, before the other virtual thread's work, and would wait there for the
    store of that thread's previous tile, stalling the compute module; just before its own
    GEMM, that store has long finished. It moves past tasks it touches no common region with,
    so the program computes the same; it takes the loop iteration (epoch) of its new place."""
    out = list(tasks)
    i = len(out) - 1
    while i >= 0:
        t = out[i]
        if t.label == "gemm reset":
            j = i + 1
            while j < len(out) and j - i <= SINK_WINDOW and not _conflict(t, out[j]):
                j += 1
            if j < len(out) and j - i <= SINK_WINDOW and j > i + 1:
                t.epoch = out[j].epoch
                if out[j].vt is None:
                    t.vt = None
                del out[i]
                out.insert(j - 1, t)
        i -= 1
    return out


def group_threads(tasks: list[Task]) -> list[Task]:
    """Within one loop iteration of the host code, put each virtual thread's tasks together
    (thread 0's loads, GEMM, ALU tail and store, then thread 1's) instead of interleaving the
    threads statement by statement, as the virtual-thread pass leaves them. Interleaved, both
    threads' ALU tails end together and the next tile's first GEMM waits for the store of a
    tail that just ended; grouped, one thread's store runs while the other thread computes.
    Only tasks of different threads change order, and only where they touch no common region
    (checked; a run with a conflict keeps its order), so the program computes the same."""
    out: list[Task] = []
    i = 0
    while i < len(tasks):
        j = i
        while j < len(tasks) and tasks[j].vt is not None and tasks[j].epoch == tasks[i].epoch:
            j += 1
        if j - i < 2:
            out.append(tasks[i])
            i += 1
            continue
        run = tasks[i:j]
        order = sorted(range(len(run)), key=lambda k: run[k].vt)  # type: ignore[arg-type,return-value]
        pos = {k: p for p, k in enumerate(order)}
        ok = all(not _conflict(run[a], run[b]) for a in range(len(run)) for b in range(a + 1, len(run))
                 if pos[a] > pos[b])
        out.extend([run[k] for k in order] if ok else run)
        i = j
    return out


@dataclass
class Generated:
    program: Program
    relocs: list[tuple[int, int, Mem]]
    tokens: TokenPlan
    tasks: int
    sram: dict[Buffer, SramBuffer]
    host_source: str


def generate(func: PrimFunc, config: Config) -> Generated:
    sram = allocate_sram(func, config)
    args = {p: k for k, p in enumerate(func.params) if isinstance(p, Buffer)}
    gen = _PyGen()
    for k, p in enumerate(func.params):
        if not isinstance(p, Buffer):
            raise VDLAError(f"argument {k} ({p}) is a scalar; VDLA functions take tensors only")
    gen.lines.append("def host(em):")
    gen.lines.append("    pass")
    gen.stmt(func.body, "    ")
    src = "\n".join(gen.lines)
    ns: dict[str, Any] = {"K": gen.consts, "_tdiv": _tdiv, "_tmod": _tmod}
    exec(compile(src, f"<vdla host {func.name}>", "exec"), ns)  # noqa: S102 - our own generated code
    em = Emitter(config, sram, args)
    ns["host"](em)
    em.tasks = group_thread_loads(group_threads(sink_resets(em.tasks)))
    if fuse_tail.ENABLED and config.gemm_epilogue:  # a core without CFG keeps the tail on the ALU
        em.tasks = fuse_tail.fuse_requant_tails(em.tasks, config)
    prog, plan = write_program(em.tasks, config, func.name)
    return Generated(prog, em.relocs, plan, len(em.tasks), sram, src)


def write_program(tasks: list[Task], config: Config, name: str) -> tuple[Program, TokenPlan]:
    """The Program of a task list in program order: dependency tokens planned
    (:func:`.sync.plan_tokens`), each task written with its pops before and pushes after it,
    then FINISH. The tasks' emits record their own relocations."""
    plan = plan_tokens(tasks, config)
    s = CommandStream(config, name)
    for t in tasks:
        for a in t.pops:
            s.dep_pop(a, t.stage)
        t.emit(s)
        for b in t.pushes:
            s.dep_push(t.stage, b)
    try:
        prog = s.finish()
    except (StreamError, ISAError) as e:
        raise VDLAError(str(e)) from None
    return prog, plan
