"""``lower()`` and ``build()``: a schedule through the loop-IR pass list to a target's code.

``lower`` runs TVM's pipeline, top to bottom:

    schedule_ops        bound inference + loop nests, tensorize, scan   (schedule/)
    storage_flatten     multi-dimensional tensors -> flat buffers        (tir/passes/)
    simplify
    [phase-1 passes]    the target's: VDLA's ALU, DMA and GEMM lowering  (targets/vdla/passes.py)
    vectorize
    inject_virtual_thread
    inject_double_buffer    stages marked double_buffer(): two halves, the next tile fetched ahead
    unroll
    [extra passes]
    simplify

The target (a string, dict or :class:`~.targets.target.Target`) becomes one ``Target``
(:mod:`.targets.target` parses and checks it); its back end (:func:`.targets.backend`, one
module per target folder) gives the phase-1 passes and builds the lowered function:
``"llvm"`` (host JIT or cross compilation, :mod:`.targets.llvm`), ``"vdla"`` (the
accelerator's instruction stream, :mod:`.targets.vdla`) or ``"cuda"`` (PTX for a GPU,
:mod:`.targets.cuda`). ``print_passes=True`` prints the IR after every step; the returned
:class:`~vdla.compiler.tir.nodes.PrimFunc` prints as readable IR.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from .schedule.loop_nest import schedule_to_stmt
from .schedule.primitives import Schedule, ScheduleError
from .targets import Pass, backend
from .targets.target import Target
from .te.operation import Tensor
from .tir.division import warn_tensor_divisions
from .tir.nodes import Buffer, PrimFunc, Stmt, Var
from .tir.passes import inject_double_buffer, inject_virtual_thread, simplify, storage_flatten, unroll, vectorize
from .tir.printer import stmt_str
from .tir.visitor import free_vars, walk
from .transform import PassContext


def symbol_name(name: str) -> str:
    """A name every back end can give a built function (``build(..., name=)``): each character
    but letters, digits and ``_`` as ``_`` and a ``k_`` prefix before a leading digit. Models and
    templates are named by their authors (an ONNX exporter's ``/layer1/conv/Conv_output_0``, a
    tutorial's ``tutorial/conv2d_no_batching``), and a ``/`` in a GPU kernel's name aborts LLVM's
    NVPTX back end; names that are symbols already are kept."""
    s = re.sub(r"\W", "_", name, flags=re.ASCII)
    return s if s and not s[0].isdigit() else f"k_{s}"


def _target(target: str | dict[str, Any] | Target, host: Any = None) -> Target:
    """The one Target of a lower()/build() call."""
    if isinstance(target, Target) and host is None:
        return target
    return Target(target, host)


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
    simple_mode: bool = False,
) -> PrimFunc:
    """Lower ``sch`` to a :class:`PrimFunc` whose parameters are ``args`` (in order).

    ``phase1_passes`` run after storage flattening (before vectorisation and virtual
    threads), ``extra_passes`` after unrolling; the target's own phase-1 passes run first.
    ``target`` is ``"llvm"`` unless given; ``target="vdla"`` (with an optional ``config``)
    lowers for the VDLA accelerator (its intrinsics appear in the IR).
    ``simple_mode`` is TVM's flag for printing only the loops: the printed function
    always is that, so it changes nothing."""
    tgt = _target(target if target is not None else "llvm")
    be = backend(tgt)
    cfg = be.resolve_config(tgt, config)
    func = _lower(sch, args, name, print_passes, extra_passes, [*be.phase1_passes(tgt, cfg), *phase1_passes])
    func.attrs.update(be.lower_attrs(tgt, cfg))
    return func


def _lower(sch: Schedule, args: Sequence[Any], name: str, print_passes: bool, extra_passes: Sequence[Pass],
           phase1_passes: Sequence[Pass]) -> PrimFunc:
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
    stmt = step("inject_double_buffer", inject_double_buffer(stmt))
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


def build(
    sch: Schedule | PrimFunc,
    args: Sequence[Any] | None = None,
    target: str | dict[str, Any] | Target | None = None,
    name: str = "main",
    opt_level: int | None = None,
    config: Any = None,
    target_host: Any = None,
) -> Any:
    """Compile a schedule (or an already lowered PrimFunc) for ``target``.

    ``"llvm"`` JIT-compiles for the host CPU and returns a
    :class:`~vdla.compiler.targets.llvm.module.BuiltFunction`;
    ``"llvm -mtriple=aarch64-linux-gnu ..."`` (any triple other than the host's, or an
    explicit ``-mcpu``/``-mattr``) compiles ahead of time and returns a
    :class:`~vdla.compiler.targets.llvm.target.CrossModule` (object code and assembly);
    ``"vdla"`` compiles for the accelerator described by ``config`` (default Config) and
    returns a :class:`~vdla.compiler.targets.vdla.module.VDLAFunction`; ``"cuda"``/``"nvptx"``
    (``"cuda -arch=sm_90"``) emits PTX and returns a
    :class:`~vdla.compiler.targets.cuda.module.CUDAModule`. ``target`` may be
    a :class:`vdla.target.Target` (``Target("llvm")``, ``Target("ext_dev", host="llvm")``, ``Target("cuda")``);
    ``None`` (the default, as TVM's) takes the one of the enclosing ``with Target(...):`` (else
    ``"llvm"``); ``target_host`` is the host of a GPU or accelerator target (a CPU target).

    An integer division by a tensor's values gives 0 where the divisor is 0 on llvm and cuda
    (TVM leaves it undefined): :mod:`.tir.division` says what each target does; build warns
    (``IntegerDivisionWarning``) unless an ``if_then_else`` tests the divisor.
    """
    tgt = _target(target if target is not None else Target.current() or "llvm", target_host)
    if opt_level is None:  # the enclosing `with PassContext(opt_level=...)`, 3 by default
        opt_level = min(PassContext.current().opt_level, 3)
    be = backend(tgt)
    cfg = be.resolve_config(tgt, config)
    t0 = time.perf_counter()
    func = _lowered(sch, args, name, target=tgt, config=cfg)
    if tgt.backend in ("llvm", "cuda"):  # their x // 0 is 0, silently (tir.division; vdla's ALU has no divide)
        warn_tensor_divisions(func, tgt.backend)
    return be.build_function(func, tgt, opt_level, config=cfg, lower_s=time.perf_counter() - t0)


def _lowered(sch: Schedule | PrimFunc, args: Sequence[Any] | None, name: str, **kw: Any) -> PrimFunc:
    if isinstance(sch, PrimFunc):
        return sch
    if args is None:
        raise ValueError("build(schedule, args): args (the tensors, in call order) are required")
    return lower(sch, args, name=name, **kw)


__all__ = ["lower", "build", "Pass", "symbol_name"]
