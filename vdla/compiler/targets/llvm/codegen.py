"""LLVM IR generation from the loop IR (llvmlite.ir, opaque pointers).

One :class:`PrimFunc` becomes one LLVM function ``void name(ptr A, ptr B, ..., scalars...)``.
Vector expressions (Ramp/Broadcast lanes) become LLVM vector types; contiguous vector
accesses are single vector loads/stores.  A ``parallel`` loop is outlined into a task
function ``void task(ptr closure, i64 task_id, i64 num_tasks)`` started through
``vdla_parallel_launch`` (see :mod:`.threadpool`).  ``if_then_else`` is lowered to branches so
only the taken side is evaluated.

Nothing traps: an ``Allocate`` that cannot be satisfied (size overflow or a NULL from
``vdla_workspace_alloc``, the runtime's caching ``aligned_alloc``) calls
``vdla_alloc_failed(name, bytes)`` and returns, and the caller raises ``MemoryError`` naming the buffer (`jit.take_alloc_failure`); integer division and
remainder by zero give 0 and ``MIN // -1`` wraps, as numpy defines them, instead of SIGFPE.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...tir import dtypes
from ...tir.nodes import (
    AddressOf,
    Allocate,
    AttrStmt,
    BinOp,
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    CallExtern,
    Cast,
    Cmp,
    Evaluate,
    Expr,
    FloatImm,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Logic,
    Not,
    PrimFunc,
    Ramp,
    Select,
    Seq,
    Stmt,
    Var,
)
from ...tir.visitor import free_vars, walk

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
#: The runtime function a kernel calls when an allocation fails (`jit` records the failure).
ALLOC_FAILED = "vdla_alloc_failed"
VOID = ir.VoidType()

_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_INTRIN = {"exp", "log", "sqrt", "tanh", "floor", "ceil", "fabs", "pow", "exp2", "log2"}


class CodegenError(ValueError):
    """The loop IR uses something this back end cannot generate."""


def scalar_type(dtype: str) -> ir.Type:
    s = dtypes.scalar(dtype)
    if s == "bool":
        return I1
    if s == "handle":
        return PTR
    if s == "void":
        return VOID
    if s == "float16":
        return ir.HalfType()
    if s == "float32":
        return ir.FloatType()
    if s == "float64":
        return ir.DoubleType()
    return ir.IntType(dtypes.bits(s))


def llvm_type(dtype: str) -> ir.Type:
    base, n = dtypes.split(dtype)
    t = scalar_type(base)
    return t if n == 1 else ir.VectorType(t, n)


def storage_type(dtype: str) -> ir.Type:
    """In-memory element type (bool is one byte)."""
    return I8 if dtypes.is_bool(dtype) else scalar_type(dtype)


def _suffix(dtype: str) -> str:
    base, n = dtypes.split(dtype)
    s = {"float16": "f16", "float32": "f32", "float64": "f64"}[base]
    return s if n == 1 else f"v{n}{s}"


class _Func:
    """Per-LLVM-function state: the function, its entry (alloca) block and builder."""

    def __init__(self, fn: ir.Function) -> None:
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.alloca_b = ir.IRBuilder(self.entry)
        body = fn.append_basic_block("body")
        self.first = body
        self.b = ir.IRBuilder(body)

    def finish(self) -> None:
        self.b.ret_void()
        self.alloca_b.branch(self.first)


class LLVMCodegen:
    """Generates an ``ir.Module`` holding one kernel (plus its outlined parallel tasks)."""

    def __init__(self, func: PrimFunc, symbol: str) -> None:
        self.func = func
        self.symbol = symbol
        self.module = ir.Module(name=symbol)
        self.env: dict[Var, ir.Value] = {}
        self.bufs: dict[Buffer, ir.Value] = {}
        self.intrinsics: dict[str, ir.Function] = {}
        self.n_tasks = 0
        self.in_parallel = False
        self.launch = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR, I64]), name="vdla_parallel_launch")
        # aligned_alloc/free's signatures; the runtime keeps freed buffers for the next call (threadpool.c)
        self.malloc = ir.Function(self.module, ir.FunctionType(PTR, [I64, I64]), name="vdla_workspace_alloc")
        self.free = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), name="vdla_workspace_free")
        self.alloc_failed = ir.Function(self.module, ir.FunctionType(VOID, [PTR, I64]), name=ALLOC_FAILED)
        self.n_names = 0
        self.param_vars: list[Var] = []

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    # ------------------------------------------------------------------ entry
    def generate(self) -> ir.Module:
        f = self.func
        types: list[ir.Type] = []
        shape_vars = list(f.attrs.get("shape_vars", []))
        for p in f.params:
            types.append(PTR if isinstance(p, Buffer) else llvm_type(p.dtype))
        for v in shape_vars:
            types.append(llvm_type(v.dtype))
        fn = self.declare_function(types)
        for p, arg in zip(list(f.params) + shape_vars, fn.args, strict=True):
            if isinstance(p, Buffer):
                arg.add_attribute("noalias")
                self.bufs[p] = arg
                arg.name = _ident(p.name)
            else:
                self.env[p] = arg
                arg.name = _ident(p.name)
        self.ctx = _Func(fn)
        self.stmt(f.body)
        self.ctx.finish()
        return self.module

    def declare_function(self, types: list[ir.Type]) -> ir.Function:
        """The LLVM function for the kernel (a GPU back end overrides it: calling convention)."""
        return ir.Function(self.module, ir.FunctionType(VOID, types), name=self.symbol)

    def vector_align(self, buf: Buffer, index: Ramp, elem_align: int) -> int:
        """Alignment of a contiguous vector access; the element's unless a subclass proves more."""
        return elem_align

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt | None) -> None:
        if s is None:
            return
        m = getattr(self, "_s_" + type(s).__name__, None)
        if m is None:
            raise CodegenError(f"the llvm back end cannot generate a {type(s).__name__} statement")
        m(s)

    def _s_Seq(self, s: Seq) -> None:
        for x in s.stmts:
            self.stmt(x)

    def _s_AttrStmt(self, s: AttrStmt) -> None:
        self.stmt(s.body)

    def _s_Evaluate(self, s: Evaluate) -> None:
        self.expr(s.value)

    def _s_LetStmt(self, s: LetStmt) -> None:
        self.env[s.var] = self.expr(s.value)
        self.stmt(s.body)
        del self.env[s.var]

    def _s_IfThenElse(self, s: IfThenElse) -> None:
        c = self.expr(s.cond)
        if s.else_case is None:
            with self.b.if_then(c):
                self.stmt(s.then_case)
        else:
            with self.b.if_else(c) as (then, other):
                with then:
                    self.stmt(s.then_case)
                with other:
                    self.stmt(s.else_case)

    def _s_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        ety = storage_type(buf.dtype)
        size: Expr | None = None
        n_const = 1
        for d in buf.shape:
            if isinstance(d, IntImm):
                n_const *= d.value
            else:
                size = d if size is None else BinOp("mul", size, d, d.dtype)
        esize = max(1, dtypes.bits(buf.dtype) // 8)
        if size is None and n_const * esize <= 256 * 1024:
            ptr = _alloca(self.ctx.alloca_b, ety, ir.Constant(I64, max(1, n_const)), _ident(buf.name))
            ptr.align = 64
            self.bufs[buf] = ptr
            self.stmt(s.body)
            del self.bufs[buf]
            return
        # Sizes are checked: a product that overflows 64 bits, a negative extent (huge unsigned)
        # or a failed allocation calls vdla_alloc_failed(name, bytes) and returns; the caller
        # raises MemoryError naming the buffer (`jit.take_alloc_failure`).
        b = self.b
        nbytes: ir.Value = ir.Constant(I64, n_const * esize)
        bad: ir.Value = ir.Constant(ir.IntType(1), 0)
        for d in buf.shape:  # each extent in 64 bits: their product in the index type could wrap
            if not isinstance(d, IntImm):
                prod = b.umul_with_overflow(nbytes, self._to_i64(self.expr(d), d.dtype))
                nbytes, bad = b.extract_value(prod, 0), b.or_(bad, b.extract_value(prod, 1))
        bad = b.or_(bad, b.icmp_unsigned(">", nbytes, ir.Constant(I64, (1 << 62))))
        nbytes = b.and_(b.add(nbytes, ir.Constant(I64, 63)), ir.Constant(I64, ~63))
        nbytes = b.select(b.icmp_unsigned("==", nbytes, ir.Constant(I64, 0)), ir.Constant(I64, 64), nbytes)
        ptr = b.call(self.malloc, [ir.Constant(I64, 64), nbytes], name=_ident(buf.name))
        bad = b.or_(bad, b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)))
        with b.if_then(bad, likely=False):
            b.call(self.free, [ptr])  # free(NULL) is a no-op; non-NULL when only the size was bad
            b.call(self.alloc_failed, [self._cstring(buf.name), nbytes])
            b.ret_void()
        self.bufs[buf] = ptr
        self.stmt(s.body)
        del self.bufs[buf]
        self.b.call(self.free, [ptr])

    def _cstring(self, text: str) -> ir.Value:
        """A pointer to a NUL-terminated constant holding ``text``."""
        data = bytearray(text.encode()) + b"\0"
        ty = ir.ArrayType(I8, len(data))
        self.n_names += 1
        g = ir.GlobalVariable(self.module, ty, name=f"{self.symbol}.name{self.n_names}")
        g.global_constant, g.linkage, g.initializer = True, "internal", ir.Constant(ty, data)
        return self.b.bitcast(g, PTR)

    def _s_BufferStore(self, s: BufferStore) -> None:
        buf = s.buffer
        val = self.expr(s.value)
        if dtypes.is_bool(buf.dtype):
            n = dtypes.lanes(s.value.dtype)
            val = self.b.zext(val, I8 if n == 1 else ir.VectorType(I8, n))
        self._access(buf, s.index, store=val)

    def _s_For(self, s: For) -> None:
        if s.kind == "thread_binding":
            raise CodegenError(
                f"loop {s.var.name!r} is bound to {s.thread_tag!r}; thread binding needs a GPU target, not llvm"
            )
        if s.kind == "parallel" and not self.in_parallel:
            self._parallel(s)
            return
        ty = llvm_type(s.var.dtype)
        mn = self._cast_to(self.expr(s.min), s.min.dtype, s.var.dtype)
        ext = self._cast_to(self.expr(s.extent), s.extent.dtype, s.var.dtype)
        end = self.b.add(mn, ext)
        self._loop(s.var, mn, end, ty, lambda: self.stmt(s.body))

    def _loop(self, var: Var, start: ir.Value, end: ir.Value, ty: ir.Type, body: Any) -> None:
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"for_{_ident(var.name)}")
        loop_body = b.append_basic_block(f"for_{_ident(var.name)}_body")
        done = b.append_basic_block(f"for_{_ident(var.name)}_end")
        b.branch(head)
        b.position_at_end(head)
        phi = b.phi(ty, name=_ident(var.name))
        phi.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", phi, end), loop_body, done)
        b.position_at_end(loop_body)
        old = self.env.get(var)
        self.env[var] = phi
        body()
        if old is None:
            del self.env[var]
        else:
            self.env[var] = old
        nxt = self.b.add(phi, ir.Constant(ty, 1), flags=["nsw"])
        phi.add_incoming(nxt, self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)

    def _parallel(self, s: For) -> None:
        """Outline the loop into a task function and launch it on the thread pool."""
        mn = self._to_i64(self.expr(s.min), s.min.dtype)
        ext = self._to_i64(self.expr(s.extent), s.extent.dtype)
        captured_vars = [v for v in free_vars(s.body) if v is not s.var and v in self.env]
        used_bufs: list[Buffer] = []
        for n in walk(s.body):
            if isinstance(n, BufferLoad | BufferStore) and n.buffer in self.bufs and n.buffer not in used_bufs:
                used_bufs.append(n.buffer)
        values = [mn, ext] + [self.env[v] for v in captured_vars] + [self.bufs[x] for x in used_bufs]
        sty = ir.LiteralStructType([v.type for v in values])
        clo = _alloca(self.ctx.alloca_b, sty, None, "closure")
        for k, v in enumerate(values):
            p = self.b.gep(clo, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True, source_etype=sty)
            self.b.store(v, p)
        self.n_tasks += 1
        task = ir.Function(self.module, ir.FunctionType(VOID, [PTR, I64, I64]), name=f"{self.symbol}_par{self.n_tasks}")
        task.linkage = "internal"
        self.b.call(self.launch, [task, clo, ext])
        # generate the task body
        saved = (self.ctx, self.env, self.bufs, self.in_parallel)
        self.ctx = _Func(task)
        self.in_parallel = True
        cl, tid, ntasks = task.args
        loaded = []
        for k, v in enumerate(values):
            p = self.b.gep(cl, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True, source_etype=sty)
            loaded.append(self.b.load(p, typ=v.type))
        tmn, text = loaded[0], loaded[1]
        self.env = dict(zip(captured_vars, loaded[2 : 2 + len(captured_vars)], strict=True))
        self.bufs = dict(zip(used_bufs, loaded[2 + len(captured_vars) :], strict=True))
        b = self.b
        chunk = b.sdiv(b.sub(b.add(text, ntasks), ir.Constant(I64, 1)), ntasks)
        lo = b.add(tmn, b.mul(tid, chunk))
        hi = b.add(lo, chunk)
        lim = b.add(tmn, text)
        hi = b.select(b.icmp_signed("<", hi, lim), hi, lim)
        ty = llvm_type(s.var.dtype)
        lo = self._cast_int(lo, I64, ty, False)
        hi = self._cast_int(hi, I64, ty, False)
        self._loop(s.var, lo, hi, ty, lambda: self.stmt(s.body))
        self.ctx.finish()
        self.ctx, self.env, self.bufs, self.in_parallel = saved

    # ------------------------------------------------------------------ memory
    def _addr(self, buf: Buffer, index: ir.Value, idx_dtype: str) -> ir.Value:
        base = self.bufs.get(buf)
        if base is None:
            raise CodegenError(f"buffer {buf.name!r} is used outside its allocation")
        return self.b.gep(base, [self._to_i64(index, idx_dtype)], inbounds=True, source_etype=storage_type(buf.dtype))

    def _access(self, buf: Buffer, index: Expr, store: ir.Value | None = None) -> ir.Value | None:
        ety = storage_type(buf.dtype)
        align = max(1, dtypes.bits(buf.dtype) // 8)
        b = self.b
        if isinstance(index, Ramp) and isinstance(index.stride, IntImm) and index.stride.value == 1:
            n = index.lanes
            p = self._addr(buf, self.expr(index.base), index.base.dtype)
            vty = ir.VectorType(ety, n)
            valign = self.vector_align(buf, index, align)
            if store is not None:
                b.store(store, p, align=valign)
                return None
            return b.load(p, typ=vty, align=valign)
        if isinstance(index, Broadcast) and store is None:
            v = self._access(buf, index.value)
            return self._splat(v, index.lanes)
        n = dtypes.lanes(index.dtype)
        if n == 1:
            p = self._addr(buf, self.expr(index), index.dtype)
            if store is not None:
                b.store(store, p, align=align)
                return None
            return b.load(p, typ=ety, align=align)
        # gather / scatter lane by lane
        vidx = self.expr(index)
        sdt = dtypes.scalar(index.dtype)
        out: ir.Value = ir.Constant(ir.VectorType(ety, n), ir.Undefined)
        for k in range(n):
            ik = b.extract_element(vidx, ir.Constant(I32, k))
            p = self._addr(buf, ik, sdt)
            if store is not None:
                b.store(b.extract_element(store, ir.Constant(I32, k)), p, align=align)
            else:
                out = b.insert_element(out, b.load(p, typ=ety, align=align), ir.Constant(I32, k))
        return None if store is not None else out

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> ir.Value:
        m = getattr(self, "_e_" + type(e).__name__, None)
        if m is None:
            raise CodegenError(f"the llvm back end cannot generate a {type(e).__name__} expression ({e})")
        return m(e)

    def _e_Var(self, e: Var) -> ir.Value:
        v = self.env.get(e)
        if v is None:
            raise CodegenError(f"variable {e.name!r} is not bound here")
        return v

    def _e_IntImm(self, e: IntImm) -> ir.Value:
        return ir.Constant(scalar_type(e.dtype), e.value)

    def _e_FloatImm(self, e: FloatImm) -> ir.Value:
        return ir.Constant(scalar_type(e.dtype), e.value)

    def _splat(self, v: ir.Value, n: int) -> ir.Value:
        vty = ir.VectorType(v.type, n)
        tmp = self.b.insert_element(ir.Constant(vty, ir.Undefined), v, ir.Constant(I32, 0))
        return self.b.shuffle_vector(tmp, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(I32, n), [0] * n))

    def _e_Broadcast(self, e: Broadcast) -> ir.Value:
        return self._splat(self.expr(e.value), e.lanes)

    def _e_Ramp(self, e: Ramp) -> ir.Value:
        sty = scalar_type(e.base.dtype)
        vty = ir.VectorType(sty, e.lanes)
        base = self._splat(self.expr(e.base), e.lanes)
        steps = ir.Constant(vty, list(range(e.lanes)))
        stride = self._splat(self.expr(e.stride), e.lanes)
        return self.b.add(base, self.b.mul(steps, stride))

    def _e_BufferLoad(self, e: BufferLoad) -> ir.Value:
        v = self._access(e.buffer, e.index)
        assert v is not None
        if dtypes.is_bool(e.buffer.dtype):
            n = dtypes.lanes(e.dtype)
            zero = ir.Constant(I8 if n == 1 else ir.VectorType(I8, n), 0 if n == 1 else [0] * n)
            v = self.b.icmp_unsigned("!=", v, zero)
        return v

    def _cast_int(self, v: ir.Value, src: ir.Type, dst: ir.Type, unsigned: bool) -> ir.Value:
        sw = src.element.width if isinstance(src, ir.VectorType) else src.width
        dw = dst.element.width if isinstance(dst, ir.VectorType) else dst.width
        if sw == dw:
            return v
        if sw > dw:
            return self.b.trunc(v, dst)
        return self.b.zext(v, dst) if unsigned else self.b.sext(v, dst)

    def _to_i64(self, v: ir.Value, dtype: str) -> ir.Value:
        return self._cast_int(v, v.type, I64, dtypes.is_uint(dtype) or dtypes.is_bool(dtype))

    def _cast_to(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        if src == dst:
            return v
        b = self.b
        dty = llvm_type(dst)
        if dtypes.is_bool(dst):
            if dtypes.is_float(src):
                return b.fcmp_unordered("!=", v, ir.Constant(v.type, _zeros(v.type, 0.0)))
            return b.icmp_unsigned("!=", v, ir.Constant(v.type, _zeros(v.type, 0)))
        if dtypes.is_float(dst):
            if dtypes.is_float(src):
                if dtypes.bits(src) < dtypes.bits(dst):
                    return b.fpext(v, dty)
                if dtypes.bits(src) > dtypes.bits(dst):
                    return b.fptrunc(v, dty)
                return v
            if dtypes.is_uint(src) or dtypes.is_bool(src):
                return b.uitofp(v, dty)
            return b.sitofp(v, dty)
        # integer destination
        if dtypes.is_float(src):
            return b.fptoui(v, dty) if dtypes.is_uint(dst) else b.fptosi(v, dty)
        return self._cast_int(v, v.type, dty, dtypes.is_uint(src) or dtypes.is_bool(src))

    def _e_Cast(self, e: Cast) -> ir.Value:
        return self._cast_to(self.expr(e.value), e.value.dtype, e.dtype)

    def _e_BinOp(self, e: BinOp) -> ir.Value:
        a, b_ = self.expr(e.a), self.expr(e.b)
        b = self.b
        dt = e.dtype
        op = e.op
        if dtypes.is_float(dt):
            fl = ["contract"]
            if op == "add":
                return b.fadd(a, b_, flags=fl)
            if op == "sub":
                return b.fsub(a, b_, flags=fl)
            if op == "mul":
                return b.fmul(a, b_, flags=fl)
            if op == "div":
                return b.fdiv(a, b_)
            if op == "min":
                return b.select(b.fcmp_ordered("<", a, b_), a, b_)
            if op == "max":
                return b.select(b.fcmp_ordered(">", a, b_), a, b_)
            raise CodegenError(f"operator {op} is not defined for {dt}")
        unsigned = dtypes.is_uint(dt) or dtypes.is_bool(dt)
        wide = dtypes.bits(dt) >= 32 and not unsigned
        fl = ["nsw"] if wide else []
        if op == "add":
            return b.add(a, b_, flags=fl)
        if op == "sub":
            return b.sub(a, b_, flags=fl)
        if op == "mul":
            return b.mul(a, b_, flags=fl)
        if op == "min":
            cmp = b.icmp_unsigned("<", a, b_) if unsigned else b.icmp_signed("<", a, b_)
            return b.select(cmp, a, b_)
        if op == "max":
            cmp = b.icmp_unsigned(">", a, b_) if unsigned else b.icmp_signed(">", a, b_)
            return b.select(cmp, a, b_)
        if op in ("floordiv", "floormod") and not unsigned and isinstance(e.b, IntImm) and e.b.value > 0 and (
                e.b.value & (e.b.value - 1)) == 0:
            sh = e.b.value.bit_length() - 1
            if op == "floordiv":
                return b.ashr(a, ir.Constant(a.type, _zeros(a.type, sh)))
            return b.and_(a, ir.Constant(a.type, _zeros(a.type, e.b.value - 1)))
        if op in ("floordiv", "floormod", "truncdiv", "truncmod"):
            return self._division(op, a, b_, e.b, unsigned)
        raise CodegenError(f"operator {op} is not defined for {dt}")

    def _division(self, op: str, a: ir.Value, b_: ir.Value, divisor: Expr, unsigned: bool) -> ir.Value:
        """Integer division and remainder with numpy's results where the CPU would trap:
        ``x // 0 == 0``, ``x % 0 == 0`` and ``MIN // -1 == MIN`` (wraps), ``MIN % -1 == 0``.
        A divisor that is a non-zero constant needs no guard."""
        b = self.b
        zero = ir.Constant(a.type, _zeros(a.type, 0))
        one = ir.Constant(a.type, _zeros(a.type, 1))
        guard = not (isinstance(divisor, IntImm) and divisor.value not in (0, -1))
        if guard:
            is_zero = b.icmp_unsigned("==", b_, zero)
            trap = is_zero
            if not unsigned:
                bits = (a.type.element if isinstance(a.type, ir.VectorType) else a.type).width
                lo = ir.Constant(a.type, _zeros(a.type, -(1 << (bits - 1))))
                minus1 = ir.Constant(a.type, _zeros(a.type, -1))
                trap = b.or_(trap, b.and_(b.icmp_signed("==", a, lo), b.icmp_signed("==", b_, minus1)))
            b_ = b.select(trap, one, b_)
        if unsigned:
            q, r = b.udiv(a, b_), b.urem(a, b_)
        else:
            q, r = b.sdiv(a, b_), b.srem(a, b_)
        if guard:
            q = b.select(is_zero, zero, q)  # x // 1 would be x; numpy gives 0
        if unsigned or op in ("truncdiv", "truncmod"):
            return q if op.endswith("div") else r
        adj = b.and_(b.icmp_signed("!=", r, zero), b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", b_, zero)))
        if op == "floordiv":
            return b.sub(q, b.zext(adj, a.type))
        return b.add(r, b.select(adj, b_, zero))

    def _e_Cmp(self, e: Cmp) -> ir.Value:
        a, b_ = self.expr(e.a), self.expr(e.b)
        dt = e.a.dtype
        sym = _CMP[e.op]
        if dtypes.is_float(dt):
            if e.op == "ne":
                return self.b.fcmp_unordered(sym, a, b_)
            return self.b.fcmp_ordered(sym, a, b_)
        if dtypes.is_uint(dt) or dtypes.is_bool(dt):
            return self.b.icmp_unsigned(sym, a, b_)
        return self.b.icmp_signed(sym, a, b_)

    def _e_Logic(self, e: Logic) -> ir.Value:
        a, b_ = self.expr(e.a), self.expr(e.b)
        return self.b.and_(a, b_) if e.op == "and" else self.b.or_(a, b_)

    def _e_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.expr(e.a))

    def _e_Select(self, e: Select) -> ir.Value:
        c = self.expr(e.cond)
        if not e.lazy or isinstance(c.type, ir.VectorType):
            return self.b.select(c, self.expr(e.t), self.expr(e.f))
        b = self.b
        then_bb = b.append_basic_block("ite_then")
        else_bb = b.append_basic_block("ite_else")
        done = b.append_basic_block("ite_end")
        b.cbranch(c, then_bb, else_bb)
        b.position_at_end(then_bb)
        tv = self.expr(e.t)
        t_end = self.b.block
        self.b.branch(done)
        self.b.position_at_end(else_bb)
        fv = self.expr(e.f)
        f_end = self.b.block
        self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(tv.type)
        phi.add_incoming(tv, t_end)
        phi.add_incoming(fv, f_end)
        return phi

    def _e_AddressOf(self, e: AddressOf) -> ir.Value:
        v = e.value
        if not isinstance(v, BufferLoad) or dtypes.lanes(v.dtype) != 1:
            raise CodegenError(f"address_of needs a scalar buffer element, got {v}")
        return self._addr(v.buffer, self.expr(v.index), v.index.dtype)

    def _e_CallExtern(self, e: CallExtern) -> ir.Value:
        args = [self.expr(a) for a in e.args]
        fty = ir.FunctionType(llvm_type(e.dtype), [a.type for a in args])
        fn = self.module.globals.get(e.name)
        if fn is None:
            fn = ir.Function(self.module, fty, name=e.name)
        elif not isinstance(fn, ir.Function) or fn.function_type != fty:
            raise CodegenError(f"extern function {e.name!r} is called with two different signatures")
        return self.b.call(fn, args)

    def _e_Call(self, e: Call) -> ir.Value:
        if e.name in ("shift_right", "shift_left") and not dtypes.is_float(e.dtype):
            a, n = (self.expr(x) for x in e.args)
            if e.name == "shift_left":
                return self.b.shl(a, n)
            return self.b.lshr(a, n) if dtypes.is_uint(e.dtype) else self.b.ashr(a, n)
        if e.name not in _INTRIN:
            raise CodegenError(f"unknown intrinsic {e.name!r}")
        if not dtypes.is_float(e.dtype):
            raise CodegenError(f"intrinsic {e.name} needs a float argument, got {e.dtype}")
        name = f"llvm.{e.name}.{_suffix(e.dtype)}"
        fn = self.intrinsics.get(name)
        ty = llvm_type(e.dtype)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * len(e.args)), name=name)
            self.intrinsics[name] = fn
        return self.b.call(fn, [self.expr(a) for a in e.args])


def _alloca(b: ir.IRBuilder, ty: ir.Type, size: ir.Value | None, name: str) -> ir.Value:
    """An alloca whose value has the opaque ``ptr`` type (llvmlite would give a typed pointer)."""
    a = b.alloca(ty, size=size, name=name)
    a.type = PTR
    return a


def _zeros(ty: ir.Type, v: Any) -> Any:
    if isinstance(ty, ir.VectorType):
        return [v] * ty.count
    return v


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._" else "_" for c in name) or "v"


def generate(func: PrimFunc, symbol: str) -> ir.Module:
    """LLVM module for ``func`` exporting ``void symbol(...)``."""
    return LLVMCodegen(func, symbol).generate()
