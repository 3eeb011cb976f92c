"""DMA lowering: a copy loop nest marked ``pragma dma_copy`` becomes 2D LOAD/STORE
intrinsics (VTA's ``InjectDMAIntrin``).

The innermost loops must walk whole hardware elements; the element loops are merged
where their strides compose, the innermost two become the DMA's x (contiguous in DRAM)
and y (row stride) and any loops left outside stay loops of DMA instructions. A load
from a zero-padded tensor (``if_then_else(in bounds, data[...], 0)``) gets x/y padding
from the bounds. Intrinsics in the IR::

    VDLALoadBuffer2D(mem, &sram[i], &dram[j], x_size, y_size, x_stride, x_pad0, y_pad0, x_pad1, y_pad1)
    VDLAStoreBuffer2D(&sram[i], &dram[j], x_size, y_size, x_stride)

Indices are in scalars; code generation turns them into elements.
"""

from __future__ import annotations

from typing import Any

from ....isa import Mem
from ...tir.nodes import (
    AddressOf,
    AttrStmt,
    BinOp,
    BufferLoad,
    BufferStore,
    CallExtern,
    Cast,
    Cmp,
    Evaluate,
    Expr,
    For,
    IntImm,
    Logic,
    Select,
    Stmt,
    make_const,
)
from ...tir.passes.simplify import simplify_expr
from ...tir.visitor import substitute
from .env import ACC_SCOPE, SCOPE_MEM, VDLAError, get_env
from .util import Loop, affine, loop_nest, split_elements

LOAD = "VDLALoadBuffer2D"
STORE = "VDLAStoreBuffer2D"


def _conjuncts(c: Expr) -> list[Expr]:
    if isinstance(c, Logic) and c.op == "and":
        return _conjuncts(c.a) + _conjuncts(c.b)
    return [c]


def _bounds(cond: Expr, loops: list[Loop], what: str) -> dict[Any, tuple[list[Expr], list[Expr]]]:
    """Per loop var: (lower bounds, upper bounds) of the valid range ``lo <= v < hi``."""
    out: dict[Any, tuple[list[Expr], list[Expr]]] = {}
    vars_ = [lp.var for lp in loops]
    for c in _conjuncts(cond):
        if not isinstance(c, Cmp) or c.op not in ("lt", "le", "gt", "ge"):
            raise VDLAError(f"{what}: padding condition {c} is not a bound on one loop")
        d = simplify_expr(BinOp("sub", c.a, c.b, c.a.dtype))
        coefs, rest = affine(d, vars_, what)
        coefs = {v: k for v, k in coefs.items() if k}
        if len(coefs) != 1 or abs(next(iter(coefs.values()))) != 1:
            raise VDLAError(f"{what}: padding condition {c} must bound exactly one loop variable with stride 1")
        (v, k), = coefs.items()
        op = c.op
        if k < 0:  # -v + r op 0  <=>  v - r op' 0
            op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}[op]
            rest = simplify_expr(BinOp("sub", make_const(0, rest.dtype), rest, rest.dtype))
        neg = simplify_expr(BinOp("sub", make_const(0, rest.dtype), rest, rest.dtype))  # v op -rest
        lo, hi = out.setdefault(v, ([], []))
        one = make_const(1, rest.dtype)
        if op == "ge":
            lo.append(neg)
        elif op == "gt":
            lo.append(simplify_expr(BinOp("add", neg, one, rest.dtype)))
        elif op == "lt":
            hi.append(neg)
        else:
            hi.append(simplify_expr(BinOp("add", neg, one, rest.dtype)))
    return out


def _clamp(exprs: list[Expr], start: Expr, fn: str) -> Expr:
    out = start
    for e in exprs:
        out = simplify_expr(BinOp(fn, out, e, e.dtype))
    return out


def _merge(loops: list[Loop], dram: dict[Any, int], sram: dict[Any, int], padded: set[Any]) -> list[tuple[list[Loop], int, int]]:
    """Merge element loops whose strides compose in both memories: [(loops, dram stride, sram stride)]."""
    dims: list[tuple[list[Loop], int, int]] = []
    for lp in loops:
        ds, ss = dram.get(lp.var, 0), sram.get(lp.var, 0)
        if dims and lp.var not in padded and dims[-1][0][-1].var not in padded:
            prev, pds, pss = dims[-1]
            inner_ext = lp.extent
            if pds == ds * inner_ext and pss == ss * inner_ext:
                dims[-1] = (prev + [lp], ds, ss)
                continue
        dims.append(([lp], ds, ss))
    return dims


def _ext(dim: tuple[list[Loop], int, int]) -> int:
    n = 1
    for lp in dim[0]:
        n *= lp.extent
    return n


def lower_copy(pragma: AttrStmt, config: Any) -> Stmt:
    env = get_env(config)
    nest = pragma.body
    loops, body = loop_nest(nest, "dma_copy")
    if not isinstance(body, BufferStore):
        raise VDLAError(f"dma_copy: the marked loops must hold one copy statement, found {type(body).__name__}")
    dst = body.buffer
    value = body.value
    cond = None
    if isinstance(value, Select):
        if not (isinstance(value.f, IntImm) and value.f.value == 0):
            raise VDLAError(f"stage {dst.name!r}: dma_copy pads only with zeros, got {value.f}")
        cond, value = value.cond, value.t
    if isinstance(value, Cast):  # int8 -> int32 (ACC_8BIT) or the narrowing to OUT
        value = value.value
    if not isinstance(value, BufferLoad):
        raise VDLAError(f"stage {dst.name!r}: dma_copy needs a plain copy (dst[i] = src[j]), got {body.value}")
    src = value.buffer
    what = f"stage {dst.name!r}: dma_copy"
    vars_ = [lp.var for lp in loops]
    if dst.scope in SCOPE_MEM and src.scope == "global":
        mem = SCOPE_MEM[dst.scope]
        if dst.scope == ACC_SCOPE and src.dtype == env.out_dtype and src.dtype != env.acc_dtype:
            mem = Mem.ACC_8BIT  # int8 in DRAM, sign-extended into the accumulator
        elif src.dtype != dst.dtype:
            raise VDLAError(f"{what}: cannot load {src.dtype} {src.name!r} into {dst.dtype} scope {dst.scope}")
        sram_buf, sram_idx, dram_buf, dram_idx, is_load = dst, body.index, src, value.index, True
    elif dst.scope == "global" and src.scope == ACC_SCOPE:
        mem = Mem.OUT
        if dst.dtype != env.out_dtype:
            raise VDLAError(f"{what}: the output buffer stores {env.out_dtype}, not {dst.dtype} ({dst.name!r})")
        if cond is not None:
            raise VDLAError(f"{what}: stores cannot pad")
        sram_buf, sram_idx, dram_buf, dram_idx, is_load = src, value.index, dst, body.index, False
    else:
        raise VDLAError(
            f"{what}: copies go from DRAM (global) into {', '.join(SCOPE_MEM)} or from {ACC_SCOPE} to DRAM; "
            f"this one copies {src.name!r} ({src.scope}) to {dst.name!r} ({dst.scope})"
        )
    lanes = env.elem_scalars(mem)
    sc, sbase = affine(sram_idx, vars_, what)
    dc, dbase = affine(dram_idx, vars_, what)
    outer, _lanes = split_elements(loops, [sc, dc], lanes, what)
    bounds = _bounds(cond, outer, what) if cond is not None else {}
    dcs = {lp.var: dc.get(lp.var, 0) // lanes for lp in outer}
    scs = {lp.var: sc.get(lp.var, 0) // lanes for lp in outer}
    dims = _merge(outer, dcs, scs, set(bounds))
    # x: the innermost dimension (contiguous in DRAM), y: the next one (compact in SRAM)
    x = dims.pop() if dims else None
    if x is not None and x[1] != 1:
        if x[2] != 1:
            raise VDLAError(
                f"{what}: 2D pattern not found: the innermost element loop {x[0][0].var.name!r} steps by {x[1]} "
                f"elements in DRAM and {x[2]} in SRAM; one of them must be contiguous"
            )
        dims.append(x)
        x = None
    y = None
    x_ext = _ext(x) if x else 1
    if dims and dims[-1][2] == x_ext and (x is not None or dims[-1][2] == 1):
        y = dims.pop()
    if x is not None and x[2] != 1:
        raise VDLAError(f"{what}: 2D pattern not found: SRAM side of {x[0][0].var.name!r} is not contiguous")
    for d in dims:
        if any(lp.var in bounds for lp in d[0]):
            raise VDLAError(f"{what}: 2D pattern not found: padding on loop {d[0][0].var.name!r}, outside the 2D (y, x) tile")
    zero = make_const(0, "int32")

    def dim_pad(d: tuple[list[Loop], int, int] | None) -> tuple[Expr, Expr, Expr, Expr]:
        """(valid start, valid count, pad before, pad after) of a dimension."""
        if d is None:
            one = make_const(1, "int32")
            return zero, one, zero, zero
        ext = make_const(_ext(d), "int32")
        v = d[0][0].var
        if v not in bounds:
            return zero, ext, zero, zero
        los, his = bounds[v]
        lo = _clamp(los, zero, "max")
        lo = simplify_expr(BinOp("min", lo, ext, "int32"))
        hi = _clamp(his, ext, "min")
        hi = simplify_expr(BinOp("max", hi, lo, "int32"))
        return lo, simplify_expr(BinOp("sub", hi, lo, "int32")), lo, simplify_expr(BinOp("sub", ext, hi, "int32"))

    xs, xn, xp0, xp1 = dim_pad(x)
    ys, yn, yp0, yp1 = dim_pad(y)
    # first valid DRAM element (in scalars) and the SRAM start of the tile (padding included)
    xv = x[0][0].var if x else None
    yv = y[0][0].var if y else None
    start = {}
    if xv is not None:
        start[xv] = xs
    if yv is not None:
        start[yv] = ys
    tile_vars = [lp.var for d in (x, y) if d for lp in d[0]]
    dram_first = simplify_expr(substitute(dram_idx, {v: start.get(v, make_const(0, "int32")) for v in tile_vars + list(_lanes_vars(loops, outer))}))
    sram_first = simplify_expr(substitute(sram_idx, {v: make_const(0, "int32") for v in tile_vars + list(_lanes_vars(loops, outer))}))
    x_stride = make_const(y[1] if y else (x_ext if x else 1), "int32")
    if is_load:
        call = CallExtern(LOAD, [
            make_const(int(mem), "int32"),
            AddressOf(BufferLoad(sram_buf, sram_first, sram_buf.dtype)),
            AddressOf(BufferLoad(dram_buf, dram_first, dram_buf.dtype)),
            xn, yn, x_stride, xp0, yp0, xp1, yp1,
        ])
    else:
        call = CallExtern(STORE, [
            AddressOf(BufferLoad(sram_buf, sram_first, sram_buf.dtype)),
            AddressOf(BufferLoad(dram_buf, dram_first, dram_buf.dtype)),
            xn, yn, x_stride,
        ])
    out: Stmt = Evaluate(call)
    for d in reversed(dims):  # loops left outside the 2D pattern
        for lp in reversed(d[0]):
            out = For(lp.var, make_const(0, lp.var.dtype), make_const(lp.extent, lp.var.dtype), "serial", out)
    return AttrStmt("vdla_dma", dst.name if is_load else src.name, out)


def _lanes_vars(loops: list[Loop], outer: list[Loop]) -> list[Any]:
    return [lp.var for lp in loops[len(outer):]]


def inject_dma(stmt: Stmt, config: Any) -> Stmt:
    """Lower every ``pragma dma_copy``. Inside virtual threads the DMA is tagged with its thread
    (``attr vdla_thread``), so code generation can keep one thread's loads together."""
    from ...tir.passes.vthread import is_virtual
    from ...tir.visitor import map_children

    def rec(s: Any, threads: list[Any]) -> Any:
        if isinstance(s, AttrStmt) and s.key == "pragma_dma_copy":
            out = lower_copy(s, config)
            if threads:
                tid: Expr = threads[0]
                for t in threads[1:]:
                    tid = BinOp("add", BinOp("mul", tid, make_const(16, "int32"), "int32"), t, "int32")
                out = AttrStmt("vdla_thread", tid, out)
            return out
        if is_virtual(s):
            return map_children(s, lambda c: rec(c, threads + [s.var]))
        if isinstance(s, Stmt):
            return map_children(s, lambda c: rec(c, threads))
        return s

    return rec(stmt, [])

