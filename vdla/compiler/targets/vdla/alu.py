"""ALU lowering: an element-wise stage marked ``pragma alu`` becomes tensor-ALU
instructions (VTA's ``InjectALUIntrin``), one per operation of its expression.

The expression must be a chain on one accumulator tensor: ``((acc + bias) >> 8) ...``
with immediates (16-bit) or other accumulator-scope tensors as second operands:
``+``, ``-`` (immediate), ``*``, ``min``, ``max``, ``shift_right``, ``shift_left``. A
``shift_right`` by a tensor is SHR with a tensor operand: each element's amount is read
from the operand (signed; negative shifts left), as per-channel requantisation needs. An
added operand may itself be shifted left by an immediate (``t + (r << m)``: a residual
aligned to a finer scale): it is shifted in place in its own buffer first (SHR by ``-m``),
which needs the operand indexed exactly as the stage's output, so that every element is
shifted once.
The stage writes in place: its buffer becomes the chain's first tensor (when both are
indexed alike), otherwise the result is first copied (GEMM reset + ADD). Every
instruction is one micro-op with at most two hardware loops; element loops whose
strides compose are merged first, and more than two loops left is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....isa import AluOp, Mem
from ...tir.arith import equal
from ...tir.nodes import (
    AddressOf,
    AttrStmt,
    BinOp,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    CallExtern,
    Cast,
    Evaluate,
    Expr,
    IntImm,
    Stmt,
    make_const,
    seq,
)
from ...tir.passes.simplify import simplify_expr
from ...tir.visitor import post_order_map, substitute
from .env import ACC_SCOPE, VDLAError, get_env
from .kernel import ALU, GEMM, KernelSpec
from .util import Loop, affine, div_expr, loop_nest, split_elements

_OPS = {"add": AluOp.ADD, "mul": AluOp.MUL, "min": AluOp.MIN, "max": AluOp.MAX}


@dataclass(frozen=True)
class _Shifted:
    """An added tensor operand shifted left by an immediate first: ``load << shift``."""

    load: BufferLoad
    shift: int


def _load_of(x: Any) -> BufferLoad | None:
    """The tensor load behind an ALU operand (a plain or a shifted one)."""
    return x.load if isinstance(x, _Shifted) else x if isinstance(x, BufferLoad) else None


def _chain(e: Expr, what: str) -> tuple[BufferLoad, list[tuple[AluOp, Any]]]:
    """(base load, [(op, operand)]) with operands IntImm values or BufferLoads."""
    if isinstance(e, Cast) and e.dtype.startswith("int") and e.value.dtype.startswith("int"):
        e = e.value
    if isinstance(e, BufferLoad):
        return e, []

    def leaf(x: Expr) -> Any:
        x = simplify_expr(x)
        if isinstance(x, Cast) and isinstance(x.value, IntImm | BufferLoad):
            x = x.value  # int8 tensors sit sign-extended in the accumulator
        if isinstance(x, IntImm):
            return x.value
        if isinstance(x, BufferLoad):
            return x
        return None

    def shifted(x: Expr) -> _Shifted | None:
        x = simplify_expr(x)
        if isinstance(x, Call) and x.name == "shift_left":
            load, n = leaf(x.args[0]), leaf(x.args[1])
            if isinstance(load, BufferLoad) and isinstance(n, int) and 0 < n < 32:
                return _Shifted(load, n)
        return None

    if isinstance(e, Call) and e.name in ("shift_right", "shift_left"):
        n = leaf(e.args[1])
        if isinstance(n, BufferLoad) and e.name == "shift_right":
            base, ops = _chain(e.args[0], what)  # SHR reads the amounts from the tensor operand
            return base, ops + [(AluOp.SHR, n)]
        if not isinstance(n, int):
            raise VDLAError(f"{what}: shift amounts must be immediates or (shift_right) an accumulator tensor, "
                            f"got {e.args[1]}")
        base, ops = _chain(e.args[0], what)
        return base, ops + [(AluOp.SHR, n if e.name == "shift_right" else -n)]
    if isinstance(e, BinOp) and e.op in (*_OPS, "sub"):
        a, b = e.a, e.b
        lb = leaf(b)
        if e.op == "sub":
            if not isinstance(lb, int):
                raise VDLAError(f"{what}: the ALU has no SUB: only an immediate can be subtracted ({e})")
            base, ops = _chain(a, what)
            return base, ops + [(AluOp.ADD, -lb)]
        la = leaf(a)
        if isinstance(la, int) or (lb is None and la is not None):
            a, b, la, lb = b, a, lb, la  # add, mul, min and max commute
        if lb is None and e.op == "add":
            lb = shifted(b)
            if lb is None and (sa := shifted(a)) is not None:
                a, lb = b, sa
        if lb is None:
            raise VDLAError(f"{what}: {e} is not a chain of ALU operations on one tensor (both operands are expressions)")
        base, ops = _chain(a, what)
        return base, ops + [(_OPS[e.op], lb)]
    raise VDLAError(f"{what}: expression {e} is not supported on the tensor ALU (add, mul, min, max, shifts)")


def _merge(loops: list[Loop], coefs: list[dict[Any, int]]) -> list[tuple[int, list[int]]]:
    dims: list[tuple[int, list[int]]] = []
    for lp in loops:
        f = [c.get(lp.var, 0) for c in coefs]
        if dims:
            pe, pf = dims[-1]
            if all(p == x * lp.extent for p, x in zip(pf, f, strict=True)):
                dims[-1] = (pe * lp.extent, f)
                continue
        dims.append((lp.extent, f))
    return dims


def lower_alu(pragma: AttrStmt, config: Any, aliases: dict[Buffer, Buffer], sizes: dict[Buffer, Any],
              read_later: frozenset[Buffer] = frozenset()) -> Stmt:
    """One ``pragma alu`` nest as ALU instructions; ``read_later``: buffers a later ALU nest
    reads, which this one must not overwrite (it then copies instead of working in place)."""
    env = get_env(config)
    loops, body = loop_nest(pragma.body, "alu")
    if not isinstance(body, BufferStore):
        raise VDLAError(f"alu: the marked loops must hold one element-wise statement, found {type(body).__name__}")
    dst = body.buffer
    what = f"stage {dst.name!r}: alu"
    if dst.scope != ACC_SCOPE:
        raise VDLAError(f"{what}: the tensor ALU works on {ACC_SCOPE} buffers; {dst.name!r} is in {dst.scope}")
    base, ops = _chain(body.value, what)
    operands = [base] + [ld for _, x in ops if (ld := _load_of(x)) is not None]
    for ld in operands:
        if ld.buffer.scope != ACC_SCOPE:
            raise VDLAError(
                f"{what}: operand {ld.buffer.name!r} is in {ld.buffer.scope}; ALU operands must be {ACC_SCOPE} "
                "buffers (cache_read them into the accumulator scope)"
            )
    lo, hi = -(1 << (env.config.alu_imm_width - 1)), (1 << (env.config.alu_imm_width - 1)) - 1
    for op, x in ops:
        if isinstance(x, int) and not lo <= x <= hi:
            raise VDLAError(f"{what}: immediate {x} of {op.name} does not fit the ALU's {env.config.alu_imm_width} bits")
    vars_ = [lp.var for lp in loops]
    lanes = env.elem_scalars(Mem.ACC)
    dcoef, _ = affine(body.index, vars_, what)
    ocoefs = [affine(ld.index, vars_, what) for ld in operands]
    outer, _ = split_elements(loops, [dcoef] + [c for c, _ in ocoefs], lanes, what)
    stmts: list[Stmt] = []
    target = dst
    # in place: the stage's buffer becomes the chain's first tensor when both are indexed alike
    same_index = equal(simplify_expr(body.index), simplify_expr(base.index))
    sa, sd = sizes.get(base.buffer), sizes.get(dst)
    if (base.buffer is not dst and base.buffer not in read_later and same_index and sa is not None
            and sd is not None and equal(sa, sd)):
        aliases[dst] = base.buffer
        target = base.buffer
    dcs = {lp.var: dcoef.get(lp.var, 0) // lanes for lp in outer}

    def addr(buf: Buffer, index: Expr) -> Expr:
        z = simplify_expr(substitute(index, {v: make_const(0, v.dtype) for v in vars_}))
        div_expr(z, lanes, what)
        return AddressOf(BufferLoad(buf, z, buf.dtype))

    dst_addr = addr(target, body.index)

    def kernel(name: str, src_coefs: dict[Any, int]) -> KernelSpec:
        scs = {lp.var: src_coefs.get(lp.var, 0) // lanes for lp in outer}
        dims = _merge(outer, [dcs, scs])
        dims = [d for d in dims if d[0] > 1]
        if len(dims) > 2:
            raise VDLAError(
                f"{what}: {len(dims)} loops remain after merging ({', '.join(str(d[0]) for d in dims)} iterations), "
                "but an ALU instruction folds at most 2 loops; place the alu pragma lower or reshape the tile"
            )
        return KernelSpec(name, ((0, 0, 0),), tuple((e, f[0], f[1], 0) for e, f in dims))

    if target is dst and base.buffer is not dst:
        # copy: zero the destination (GEMM reset) then add the first operand
        zero = kernel(f"{dst.name}.zero", {})
        stmts.append(AttrStmt("vdla_kernel", zero, Evaluate(CallExtern(GEMM, [
            make_const(1, "int32"), dst_addr, make_const(0, "int32"), make_const(0, "int32")]))))
        ops = [(AluOp.ADD, base)] + ops
    for op, x in ops:
        if isinstance(x, _Shifted):
            # shift the operand in place (its own buffer, its own index: each element once), then add it
            coef, _ = affine(x.load.index, vars_, what)
            if coef != dcoef:
                raise VDLAError(f"{what}: the shifted operand {x.load.buffer.name!r} is not indexed as the output "
                                "(shifting it in place would shift some elements more than once)")
            spec = kernel(f"{x.load.buffer.name}.shl", {})
            stmts.append(AttrStmt("vdla_kernel", spec, Evaluate(CallExtern(ALU, [
                make_const(int(AluOp.SHR), "int32"), make_const(1, "int32"), make_const(-x.shift, "int32"),
                addr(x.load.buffer, x.load.index), make_const(0, "int32")]))))
            x = x.load
        if isinstance(x, int):
            spec = kernel(f"{dst.name}.{op.name.lower()}", {})
            src = make_const(0, "int32")
            args = [make_const(int(op), "int32"), make_const(1, "int32"), make_const(x, "int32"), dst_addr, src]
        else:
            coef, _ = affine(x.index, vars_, what)
            spec = kernel(f"{dst.name}.{op.name.lower()}", coef)
            args = [make_const(int(op), "int32"), make_const(0, "int32"), make_const(0, "int32"), dst_addr,
                    addr(x.buffer, x.index)]
        stmts.append(AttrStmt("vdla_kernel", spec, Evaluate(CallExtern(ALU, args))))
    return AttrStmt("vdla_alu", dst.name, seq(*stmts))


def inject_alu(stmt: Stmt, config: Any) -> Stmt:
    """Lower ``pragma alu`` nests; buffers written in place are merged with their source."""
    from ...tir.nodes import Allocate
    from ...tir.visitor import walk

    sizes: dict[Buffer, Any] = {}
    for n in walk(stmt):
        if isinstance(n, Allocate):
            sizes[n.buffer] = simplify_expr(_prod(n.buffer.shape))
    # the buffers each ALU nest reads, in program order: a nest works in place on its first
    # tensor only if no later nest reads it (a gate computed on a copy of the accumulator,
    # then multiplied with it, needs the accumulator kept)
    nests = [n for n in walk(stmt) if isinstance(n, AttrStmt) and n.key == "pragma_alu"]
    reads = [{x.buffer for x in walk(n.body) if isinstance(x, BufferLoad)} for n in nests]
    writes = [next((x.buffer for x in walk(n.body) if isinstance(x, BufferStore)), None) for n in nests]
    read_later = {w: frozenset().union(*reads[k + 1:]) for k, w in enumerate(writes) if w is not None}
    aliases: dict[Buffer, Buffer] = {}

    def fn(s: Any) -> Any:
        if isinstance(s, AttrStmt) and s.key == "pragma_alu":
            store = next((x.buffer for x in walk(s.body) if isinstance(x, BufferStore)), None)
            return lower_alu(s, config, aliases, sizes, read_later.get(store, frozenset()))
        return None

    out = post_order_map(stmt, fn)
    if not aliases:
        return out

    def resolve(b: Buffer) -> Buffer:
        while b in aliases:
            b = aliases[b]
        return b

    def rename(n: Any) -> Any:
        if isinstance(n, Allocate) and n.buffer in aliases:
            return n.body
        if isinstance(n, BufferLoad) and n.buffer in aliases:
            return BufferLoad(resolve(n.buffer), n.index, n.dtype)
        if isinstance(n, BufferStore) and n.buffer in aliases:
            return BufferStore(resolve(n.buffer), n.index, n.value)
        return None

    return post_order_map(out, rename)


def _prod(shape: list[Expr]) -> Expr:
    out: Expr = make_const(1, "int32")
    for s in shape:
        out = BinOp("mul", out, s.astype("int32"), "int32")
    return out
