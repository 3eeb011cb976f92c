"""``lower(schedule, args)``: schedule → loop IR through the standard pass pipeline.

Pipeline (TVM's order): schedule_ops (bound inference + loop nests, tensorize, scan) →
storage_flatten → simplify → [phase-1 passes] → vectorize → inject_virtual_thread →
unroll → [extra passes] → simplify.  A target's back end hooks its passes in at phase 1
(before virtual threads, as VTA's DMA/ALU/GEMM lowering) and after unrolling;
``target="vdla"`` dispatches to :func:`vdla.compiler.vdla.lower`.  ``print_passes=True`` prints the IR after
every step; the returned :class:`~vdla.compiler.ir.PrimFunc` prints as readable IR.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .ir import Buffer, PrimFunc, Stmt, Var
from .passes import inject_virtual_thread, simplify, storage_flatten, unroll, vectorize
from .printer import stmt_str
from .schedule import Schedule, ScheduleError
from .schedule_ops import schedule_to_stmt
from .te import Tensor
from .visitor import free_vars, walk

Pass = Callable[[Stmt], Stmt]


def _check_args(sch: Schedule, args: Sequence[Any]) -> list[Any]:
    if not isinstance(args, list | tuple):
        raise ScheduleError(f"args must be a list of tensors (and scalar vars), got {args!r}")
    seen: set[int] = set()
    out = []
    for k, a in enumerate(args):
        if not isinstance(a, Tensor | Var):
            raise ScheduleError(f"argument {k} ({a!r}) is neither a tensor nor a te.var")
        if id(a) in seen:
            raise ScheduleError(f"argument {k} ({a.name!r}) is given twice")
        seen.add(id(a))
        if isinstance(a, Tensor):
            r = sch.resolve(a)
            if r.op not in sch.stage_map:
                raise ScheduleError(f"argument {k} ({a.name!r}) is not part of this schedule")
        out.append(a)
    return out


def lower(
    sch: Schedule,
    args: Sequence[Any],
    name: str = "main",
    print_passes: bool = False,
    extra_passes: Sequence[Pass] = (),
    phase1_passes: Sequence[Pass] = (),
    target: Any = None,
    config: Any = None,
) -> PrimFunc:
    """Lower ``sch`` to a :class:`PrimFunc` whose parameters are ``args`` (in order).

    ``phase1_passes`` run after storage flattening (before vectorisation and virtual
    threads), ``extra_passes`` after unrolling. ``target="vdla"`` (with an optional
    ``config``) lowers for the VDLA accelerator (its intrinsics appear in the IR)."""
    if target is not None and str(target).split()[0] == "vdla":
        from .vdla import lower as lower_vdla

        return lower_vdla(sch, args, name=name, config=config, print_passes=print_passes)
    args = _check_args(sch, args)
    trace: list[tuple[str, Stmt]] = []

    def step(label: str, s: Stmt) -> Stmt:
        trace.append((label, s))
        if print_passes:
            print(f"// ---- after {label} ----")
            print(stmt_str(s))
        return s

    stmt = step("schedule_ops", schedule_to_stmt(sch, args))
    binds: dict[Tensor, Buffer] = {}
    params: list[Any] = []
    for a in args:
        if isinstance(a, Tensor):
            t = sch.resolve(a)
            buf = Buffer(a.name, t.dtype, list(t.shape))
            binds[t] = buf
            params.append(buf)
        else:
            params.append(a)
    stmt = step("storage_flatten", storage_flatten(stmt, binds))
    stmt = step("simplify", simplify(stmt))
    for p in phase1_passes:
        stmt = step(getattr(p, "__name__", "pass"), p(stmt))
    stmt = step("vectorize", vectorize(stmt))
    stmt = step("inject_virtual_thread", inject_virtual_thread(stmt))
    stmt = step("unroll", unroll(stmt))
    for p in extra_passes:
        stmt = step(getattr(p, "__name__", "pass"), p(stmt))
    stmt = step("simplify", simplify(stmt))
    # symbolic sizes come from the argument shapes; anything else free is an error
    explicit = {p for p in params if isinstance(p, Var)}
    shape_vars: list[Var] = []
    for p in params:
        if isinstance(p, Buffer):
            for s in p.shape:
                for v in (n for n in walk(s) if isinstance(n, Var)):
                    if v not in explicit and v not in shape_vars:
                        shape_vars.append(v)
    known = explicit | set(shape_vars)
    for v in free_vars(stmt):
        if v not in known:
            raise ScheduleError(
                f"variable {v.name!r} is used but not bound: pass it in args or use it in an argument's shape"
            )
    func = PrimFunc(name, params, stmt, {"shape_vars": shape_vars, "trace": trace})
    return func
