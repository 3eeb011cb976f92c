"""GEMM lowering: tensorized GEMM calls and accumulator initialisation become GEMM
instructions with micro-op kernels (VTA's uop recording + ``FoldUopLoop``).

A maximal loop nest holding only GEMM updates (or only zero stores to the accumulator,
the initialisation of a tensorized reduction) becomes one instruction. Integer
accumulation commutes, so the nest's loops may be reordered: the two loops whose
folding leaves the fewest micro-ops become the hardware's iter_out/iter_in, the rest
are unrolled into micro-ops (innermost the loop that moves the output row, so
consecutive micro-ops write different accumulator rows). Kernels larger than a quarter
of the micro-op buffer keep their outer loops as loops of instructions.
"""

from __future__ import annotations

import itertools
from typing import Any

from ....isa import Mem
from ...tir.nodes import (
    AddressOf,
    AttrStmt,
    Buffer,
    BufferLoad,
    BufferStore,
    CallExtern,
    Evaluate,
    Expr,
    For,
    IntImm,
    Seq,
    Stmt,
    make_const,
    seq,
)
from ...tir.passes.simplify import simplify_expr
from ...tir.visitor import pre_order_map, substitute
from .env import ACC_SCOPE, GEMM_RESET, GEMM_UPDATE, VDLAError, get_env
from .kernel import GEMM, KernelSpec
from .util import Loop, affine, div_expr, split_elements


def _call(s: Any) -> CallExtern | None:
    while isinstance(s, AttrStmt) and s.key == "tensorized":
        s = s.body
    if isinstance(s, Evaluate) and isinstance(s.value, CallExtern) and s.value.name in (GEMM_UPDATE, GEMM_RESET):
        return s.value
    return None


def _is_zero_store(s: Any) -> bool:
    return (
        isinstance(s, BufferStore) and s.buffer.scope == ACC_SCOPE
        and isinstance(simplify_expr(s.value), IntImm) and simplify_expr(s.value).value == 0
    )


def _pure(s: Any, kind: str) -> bool:
    """Only loops and GEMM calls ('gemm') / zero stores ('reset')?"""
    if isinstance(s, For):
        return _pure(s.body, kind)
    if isinstance(s, Seq):
        return all(_pure(x, kind) for x in s.stmts)
    if kind == "gemm":
        c = _call(s)
        return c is not None and c.name == GEMM_UPDATE
    return _is_zero_store(s)


def _nest(s: Stmt) -> tuple[list[Loop], list[Stmt]] | None:
    loops: list[Loop] = []
    while isinstance(s, For):
        ext = simplify_expr(s.extent)
        if not isinstance(ext, IntImm):
            return None
        loops.append(Loop(s.var, ext.value))
        s = s.body
    body = s.stmts if isinstance(s, Seq) else [s]
    if any(isinstance(x, For | Seq) for x in body):
        return None
    return loops, body


def _addr_parts(e: Expr) -> tuple[Buffer, Expr]:
    if not (isinstance(e, AddressOf) and isinstance(e.value, BufferLoad)):
        raise VDLAError(f"GEMM: operand {e} is not the address of a buffer element")
    return e.value.buffer, e.value.index


class _Region:
    def __init__(self, config: Any, reset: bool, what: str) -> None:
        self.env = get_env(config)
        self.reset = reset
        self.what = what
        c = self.env.config
        self.cap = max(1, c.uop_depth // 4)

    def lower(self, s: Stmt) -> Stmt:
        nest = _nest(s)
        if nest is None:
            if isinstance(s, For):
                return For(s.var, s.min, s.extent, s.kind, self.lower(s.body), s.thread_tag, s.annotations)
            if isinstance(s, Seq):
                return seq(*[self.lower(x) for x in s.stmts])
            raise VDLAError(f"{self.what}: cannot lower {type(s).__name__} to a GEMM kernel")
        loops, body = nest
        mems = (Mem.ACC, Mem.INP, Mem.WGT)
        lanes = [self.env.elem_scalars(m) for m in mems]
        vars_ = [lp.var for lp in loops]
        # operands per statement: [(buffer, index)] for dst, src, wgt
        ops: list[list[tuple[Buffer, Expr] | None]] = []
        for st in body:
            if self.reset:
                assert isinstance(st, BufferStore)
                ops.append([(st.buffer, st.index), None, None])
            else:
                c = _call(st)
                assert c is not None
                ops.append([_addr_parts(a) for a in c.args])
        bufs = [None if o is None else o[0] for o in ops[0]]
        for o in ops:
            if [None if x is None else x[0] for x in o] != bufs:
                raise VDLAError(f"{self.what}: one GEMM nest uses several accumulator/input/weight buffers")
        what = f"stage {bufs[0].name!r}: GEMM" if bufs[0] is not None else self.what
        self.lane_vars: list[Any] = []
        if self.reset:
            coefs = [affine(o[0][1], vars_, what)[0] for o in ops]
            loops, lane_loops = split_elements(loops, coefs, lanes[0], what)
            vars_ = [lp.var for lp in loops]
            self.lane_vars = [lp.var for lp in lane_loops]
        self.first = [None if o is None else o[1] for o in ops[0]]
        # element coefficients and per-statement offsets from the first statement's bases
        bases: list[Expr | None] = []
        offs: list[list[int]] = [[0, 0, 0] for _ in ops]
        fac: dict[Any, list[int]] = {lp.var: [0, 0, 0] for lp in loops}
        for m in range(3):
            if bufs[m] is None:
                bases.append(None)
                continue
            b0 = None
            for k, o in enumerate(ops):
                idx = o[m][1]
                co, base = affine(idx, vars_, what)
                if self.reset:
                    base = simplify_expr(substitute(idx, {v: make_const(0, v.dtype) for v in vars_ + self.lane_vars}))
                    co = {v: c for v, c in co.items() if v in fac}
                if b0 is None:
                    b0 = base
                    for v, c in co.items():
                        if c % lanes[m]:
                            raise VDLAError(f"{what}: loop {v.name!r} steps {c} lanes in {bufs[m].name!r}, not whole elements")
                        fac[v][m] = c // lanes[m]
                d = simplify_expr(base - b0)
                if not isinstance(d, IntImm) or d.value % lanes[m]:
                    raise VDLAError(f"{what}: GEMM statements in one nest must differ by constant element offsets")
                offs[k][m] = d.value // lanes[m]
            div_expr(b0, lanes[m], what)
            bases.append(b0)
        return self._emit(loops, fac, offs, bufs, bases, what)

    def _choose(self, loops: list[Loop], fac: dict[Any, list[int]], offs: list[list[int]]) -> tuple[list[Loop], list[Loop], list[tuple[int, int, int]]] | str:
        """(folded, unrolled, uops) with the fewest uops that obeys the accumulator rule; or why not."""
        live = [lp for lp in loops if lp.extent > 1]
        best = None
        why = ""
        for r in (2, 1, 0):
            for folded in itertools.combinations(live, min(r, len(live))):
                unrolled = [lp for lp in live if lp not in folded]
                # innermost: a loop that moves the accumulator row
                unrolled.sort(key=lambda lp: fac[lp.var][0] != 0)
                uops = []
                for it in itertools.product(*[range(lp.extent) for lp in unrolled]):
                    for o in offs:
                        u = [o[m] + sum(i * fac[lp.var][m] for i, lp in zip(it, unrolled, strict=True)) for m in range(3)]
                        uops.append(tuple(u))
                    if len(uops) > self.cap:
                        break
                n = len(uops)
                if n > self.cap:
                    why = why or "cap"
                    continue
                bad = next(
                    (i for i in range(1, n) for b in (1, 2) if i >= b and uops[i][0] == uops[i - b][0]), None
                )
                if bad is not None:
                    j = next(b for b in (1, 2) if bad >= b and uops[bad][0] == uops[bad - b][0])
                    why = (
                        f"micro-ops {bad - j} and {bad} both write accumulator row +{uops[bad][0]} (a micro-op "
                        "may not write a row one of the two before it wrote: the GEMM pipeline has no bypass "
                        "guarantee); loops left to unroll: "
                        + (", ".join(f"{lp.var.name}({lp.extent})" for lp in unrolled) or "none")
                        + "; make an unrolled loop walk the output tile or fold fewer reduction loops"
                    )
                    continue
                if best is None or n < len(best[2]):
                    best = (list(folded), unrolled, uops)
            if best is not None:
                return best
        return why or "no kernel"

    def _emit(self, loops: list[Loop], fac: dict[Any, list[int]], offs: list[list[int]], bufs: list[Any],
              bases: list[Any], what: str) -> Stmt:
        peel = 0
        live = [lp for lp in loops if lp.extent > 1]
        while True:
            got = self._choose(live[peel:], fac, offs)
            if isinstance(got, tuple):
                break
            if got != "cap" or peel >= len(live):
                raise VDLAError(f"{what}: cannot form a micro-op kernel: {got}")
            peel += 1
        folded, _unrolled, uops = got
        kloops = tuple((lp.extent, *fac[lp.var]) for lp in folded)
        name = f"{bufs[0].name}.{'reset' if self.reset else 'gemm'}"
        spec = KernelSpec(name, tuple(uops), kloops)
        inner_vars = [lp.var for lp in loops if lp not in live[:peel]]

        def addr(m: int) -> Expr:
            if bufs[m] is None:
                return make_const(0, "int32")
            zero = {v: make_const(0, v.dtype) for v in inner_vars + self.lane_vars}
            b = simplify_expr(substitute(self.first[m], zero))
            return AddressOf(BufferLoad(bufs[m], b, bufs[m].dtype))

        out: Stmt = AttrStmt("vdla_kernel", spec, Evaluate(CallExtern(GEMM, [
            make_const(int(self.reset), "int32"), addr(0), addr(1), addr(2)])))
        # peeled loops stay loops of instructions; their variables stay in the bases
        for lp in reversed(live[:peel]):
            out = For(lp.var, make_const(0, lp.var.dtype), make_const(lp.extent, lp.var.dtype), "serial", out)
        return out


def inject_gemm(stmt: Stmt, config: Any) -> Stmt:
    def fn(s: Any) -> Any:
        if isinstance(s, AttrStmt) and s.key in ("vdla_kernel", "vdla_alu", "vdla_dma"):
            return s  # already lowered
        for kind in ("gemm", "reset"):
            if _pure(s, kind):
                return _Region(config, kind == "reset", "GEMM").lower(s)
        return None

    return pre_order_map(stmt, fn)
