"""GPU schedule of the NCHW Winograd convolution (TVM's ``schedule_winograd_cuda``), the one the
``conv2d_nchw_winograd.cuda`` template measures and a model's Winograd convolutions build.

A 3x3, stride-1 convolution by F(m x m, 3 x 3) as :func:`vdla.compiler.topi.winograd.conv2d_winograd_nchw`
declares it, the weight already transformed (``U [alpha^2, C, OC]``), in three kernels:

* the **input transform**: one thread per (channel, tile), the tile's first pass ``B^T d`` in
  registers (``alpha x alpha``, unrolled, the padding inlined into its reads), then the
  ``alpha^2`` transformed values ``V [alpha^2, C, P]`` (consecutive threads store consecutive tiles);
* the **batched GEMM** ``M[e] = U[e]^T V[e]`` over the ``alpha^2`` tile positions: a block per
  position (``tile_b``: blocks only) x ``tile_y`` output channels x ``tile_x`` tiles (each in
  four: blocks, virtual threads, threads, per thread), the input channels in steps of ``tile_rc``
  copied to shared memory by the whole block, a thread's register tile unrolled, the reduction
  step unrolled up to ``auto_unroll_max_step`` copies (explicitly when ``unroll_explicit``);
* the **inverse transform**: one thread per (output channel, tile), ``M A`` in registers, then
  the tile's ``m x m`` pixels (those past a ragged edge skipped). A fused element-wise tail (bias,
  ReLU, a residual add) is computed there: the inverse transform is inlined into it, as TVM does.

:func:`schedule_conv2d_winograd_nchw` is the graph strategy's entry (the point of the workload's
tuned record under ``apply_history_best``, else the hand point :func:`hand_knobs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .... import te
from ....autotvm.dispatch import query
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged, is_injective
from ....topi.winograd import WINOGRAD_TILES
from .common import cooperative_fetch, divisor_at_most
from .conv2d import MAX_ACCUMULATORS, MAX_VTHREAD

__all__ = ["NAME", "UNROLL_STEPS", "TRANSFORM_THREADS", "WinogradPoint", "hand_knobs", "define_winograd_space",
           "schedule_winograd_cuda", "schedule_conv2d_winograd_nchw", "winograd_args", "winograd_tile"]

#: the autotvm template of this schedule (its records name a model's Winograd convolutions)
NAME = "conv2d_nchw_winograd.cuda"
#: TVM's conv2d_nchw_winograd choices of ``auto_unroll_max_step``
UNROLL_STEPS = (0, 128, 1500)
#: threads per block of the two transform kernels (TVM's 128), a divisor of their work items
TRANSFORM_THREADS = 128


def winograd_args(conv_args: list[Any], m: int) -> list[Any] | None:
    """The Winograd task's arguments for a ``conv2d_nchw.cuda`` workload's, or None when the
    convolution is not 3x3, stride 1, dilation 1 (the only kind F(m x m, 3 x 3) computes)."""
    data, kernel, stride, padding, dilation = conv_args
    if list(kernel[2:]) != [3, 3] or list(stride) != [1, 1] or list(dilation) != [1, 1] or m not in WINOGRAD_TILES:
        return None
    return [list(data), list(kernel), [1, 1], list(padding), [1, 1], m]


def winograd_tile(height: int) -> int:
    """TVM's GPU output tile (``topi/cuda/conv2d_winograd.py::_infer_tile_size``): F(4x4) when the
    input height is a multiple of 8, else F(2x2)."""
    return 4 if height % 8 == 0 else 2


@dataclass(frozen=True)
class WinogradPoint:
    """The GEMM's tiling at one point: output channels per block ``vy x ty x yi`` (virtual
    threads, threads, per thread), tiles per block ``vx x tx x xi``, input channels per step ``bk``."""

    vy: int
    ty: int
    yi: int
    vx: int
    tx: int
    xi: int
    bk: int
    unroll_step: int
    unroll_explicit: bool

    @classmethod
    def from_config(cls, cfg: Any) -> WinogradPoint:
        _, vy, ty, yi = cfg["tile_y"].size
        _, vx, tx, xi = cfg["tile_x"].size
        return cls(vy, ty, yi, vx, tx, xi, cfg["tile_rc"].size[1], int(cfg["auto_unroll_max_step"].val),
                   bool(cfg["unroll_explicit"].val))

    @classmethod
    def from_knobs(cls, k: dict[str, Any]) -> WinogradPoint:
        """The point of knob values as :func:`hand_knobs` gives them (JSON values)."""
        _, vy, ty, yi = k["tile_y"]
        _, vx, tx, xi = k["tile_x"]
        return cls(vy, ty, yi, vx, tx, xi, k["tile_rc"][1], int(k["auto_unroll_max_step"]), bool(k["unroll_explicit"]))


def hand_knobs(e2: int, oc: int, tiles: int, c: int) -> dict[str, Any]:
    """The fallback: 8 x 16 threads of 4 channels x 2 tiles each (clipped to divisors), 8 input
    channels per step, the step unrolled (128 copies)."""
    ty = divisor_at_most(oc, 8)
    yi = divisor_at_most(oc // ty, 4)
    tx = divisor_at_most(tiles, 16)
    xi = divisor_at_most(tiles // tx, 2)
    bk = divisor_at_most(c, 8)
    return {"tile_b": [e2, 1, 1, 1], "tile_y": [oc // (ty * yi), 1, ty, yi], "tile_x": [tiles // (tx * xi), 1, tx, xi],
            "tile_rc": [c // bk, bk], "auto_unroll_max_step": 128, "unroll_explicit": 1}


def define_winograd_space(cfg: Any, e2: int, oc: int, tiles: int, c: int) -> None:
    """TVM's knobs: ``tile_b`` (blocks only), ``tile_y`` / ``tile_x`` in four, ``tile_rc`` in two,
    the unrolling (a few virtual threads; a register tile within MAX_ACCUMULATORS per axis)."""

    def tile_ok(e: Any) -> bool:
        return e.size[1] <= MAX_VTHREAD and e.size[1] * e.size[3] <= MAX_ACCUMULATORS

    cfg.define_split("tile_b", e2, num_outputs=4, filter=lambda e: e.size[1:] == (1, 1, 1))
    cfg.define_split("tile_y", oc, num_outputs=4, filter=tile_ok)
    cfg.define_split("tile_x", tiles, num_outputs=4, filter=tile_ok)
    cfg.define_split("tile_rc", c, num_outputs=2)
    cfg.define_knob("auto_unroll_max_step", list(UNROLL_STEPS))
    cfg.define_knob("unroll_explicit", [0, 1])


def _bind_flat(st: Any, axis: Any, extent: int) -> Any:
    """``axis`` over blocks of up to TRANSFORM_THREADS threads (a divisor: no guard, so a thread
    past the end never reads out of bounds in the stages computed at it); returns the thread loop."""
    bx, tx = st.split(axis, factor=divisor_at_most(extent, TRANSFORM_THREADS))
    st.bind(bx, te.thread_axis("blockIdx.x"))
    st.bind(tx, te.thread_axis("threadIdx.x"))
    return tx


def _inline_tail(s: Schedule, outs: list[te.Tensor], conv: te.Tensor) -> None:
    """Inline the injective stages between ``outs`` and the convolution (not the Winograd stages
    behind it), then the convolution's inverse transform into the output."""
    out_ops = {t.op for t in outs}
    seen: set[Any] = set()

    def visit(op: Any) -> None:
        if op in seen or op is conv.op or not isinstance(op, te.ComputeOp):
            return
        seen.add(op)
        if op not in out_ops:
            if not is_injective(op):
                raise ValueError(f"{NAME}: {op.name!r} after the convolution is not element-wise")
            s[op].compute_inline()
        for t in op.input_tensors():
            visit(t.op)

    for t in outs:
        visit(t.op)
    s[conv].compute_inline()


def schedule_winograd_cuda(outs: te.Tensor | Sequence[te.Tensor], p: WinogradPoint) -> Schedule:
    """The three kernels of the module doc for the output of :func:`conv2d_winograd_nchw`, or of
    an element-wise tail after it (``outs``), at point ``p``."""
    outs = as_list(outs)
    s = te.create_schedule([t.op for t in outs])
    conv = find_tagged(outs, "conv2d_winograd_nchw").output(0)
    rows, trans, gemm, cols = (find_tagged(outs, t).output(0) for t in ("winograd_input_rows", "winograd_input",
                                                                        "winograd_gemm", "winograd_output_cols"))
    out = outs[0]
    if out is not conv:
        if len(outs) != 1:
            raise ValueError(f"{NAME}: a fused tail must have exactly one output")
        _inline_tail(s, outs, conv)
    m = int(conv.op.attrs["winograd_m"])
    e2, oc, tiles = const_shape(gemm)
    c = const_shape(trans)[1]
    yt, xt = p.vy * p.ty * p.yi, p.vx * p.tx * p.xi
    for what, size, t in (("output channels", oc, yt), ("tiles", tiles, xt), ("input channels", c, p.bk)):
        if t < 1 or size % t:  # tiles that divide: no guards, so the barriers are legal
            raise ValueError(f"{NAME}: a tile of {t} {what} does not divide {size}")
    acc = p.vy * p.yi * p.vx * p.xi
    if acc > MAX_ACCUMULATORS:  # known before any build (a bigger tile spills)
        raise ValueError(f"{NAME}: {acc} accumulators per thread (at most {MAX_ACCUMULATORS} registers' worth)")

    # the input transform: a thread per (channel, tile), its B^T d in registers
    dp = rows.op.input_tensors()[0]
    if dp.op.tag and "pad" in dp.op.tag:
        s[dp].compute_inline()
    st = s[trans]
    e, ci, pp = st.op.axis
    st.reorder(ci, pp, e)
    tx = _bind_flat(st, st.fuse(ci, pp), c * tiles)
    st.unroll(e)  # the select's index: a constant per copy, so the selects fold away
    s[rows].set_scope("local")
    s[rows].compute_at(st, tx)
    for ax in s[rows].op.axis[2:]:
        s[rows].unroll(ax)

    # the batched GEMM (TVM's bgemm schedule)
    operands = gemm.op.input_tensors()  # the kernel and V, read by the local stage once cached
    ol = s.cache_write(gemm, "local")
    sg = s[gemm]
    e, k, pp = sg.op.axis
    ko, ki = sg.split(k, factor=yt)
    po, pi = sg.split(pp, factor=xt)
    vthreads = []
    if p.vy > 1:  # split off only when several, so a point without virtual threads has no unit loops
        vy, ki = sg.split(ki, nparts=p.vy)
        vthreads.append(vy)
    if p.vx > 1:
        vx, pi = sg.split(pi, nparts=p.vx)
        vthreads.append(vx)
    ty, ki = sg.split(ki, nparts=p.ty)
    txg, pi = sg.split(pi, nparts=p.tx)
    sg.reorder(e, ko, po, *vthreads, ty, txg, ki, pi)
    sg.bind(e, te.thread_axis("blockIdx.z"))
    sg.bind(ko, te.thread_axis("blockIdx.y"))
    sg.bind(po, te.thread_axis("blockIdx.x"))
    for v in vthreads:
        sg.bind(v, te.thread_axis("vthread"))
    tya, txa = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    sg.bind(ty, tya)
    sg.bind(txg, txa)
    sg.unroll(ki)
    sg.unroll(pi)
    so = s[ol]
    so.compute_at(sg, txg)
    _, ok, op_ = so.op.axis
    rco, rci = so.split(so.op.reduce_axis[0], factor=p.bk)
    so.reorder(rco, rci, ok, op_)
    so.unroll(ok)
    so.unroll(op_)
    # TVM's auto_unroll_max_step: the step's loop unrolled when the unrolled body stays within
    # that many copies of the register tile (else, or without unroll_explicit, left to LLVM)
    if p.unroll_explicit and p.bk > 1 and p.yi * p.xi * p.bk <= p.unroll_step:
        so.unroll(rci)
    for t in operands:
        cache = s.cache_read(t, "shared", [ol])
        s[cache].compute_at(so, rco)
        cooperative_fetch(s, cache, [(tya, p.ty), (txa, p.tx)])

    # the inverse transform: a thread per (output channel, tile), M A in registers (and the tail)
    sy = s[out]
    n, k, y, x = sy.op.axis
    yo, yi = sy.split(y, factor=m)  # a ragged last tile: its pixels past the edge are skipped
    xo, xi = sy.split(x, factor=m)
    sy.reorder(n, k, yo, xo, yi, xi)
    tx = _bind_flat(sy, sy.fuse(n, k, yo, xo), oc * tiles)  # tiles counts the batch's
    sy.unroll(yi)
    sy.unroll(xi)
    s[cols].set_scope("local")
    s[cols].compute_at(sy, tx)
    for ax in s[cols].op.axis[2:]:
        s[cols].unroll(ax)
    return s


def schedule_conv2d_winograd_nchw(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """A model's Winograd convolution (and its fused tail): the point of the best record of its
    ``conv2d_nchw_winograd.cuda`` workload under ``apply_history_best`` (the graph strategy chose
    this implementation because that record is the fastest), else the template's hand point."""
    outs = as_list(outs)
    conv = find_tagged(outs, "conv2d_winograd_nchw").output(0)
    gemm = find_tagged(outs, "winograd_gemm").output(0)
    trans = find_tagged(outs, "winograd_input").output(0)
    tuned = query("cuda", [NAME, conv.op.attrs["workload"][1]])
    if tuned is not None:
        return schedule_winograd_cuda(outs, WinogradPoint.from_config(tuned))
    e2, oc, tiles = const_shape(gemm)
    return schedule_winograd_cuda(outs, WinogradPoint.from_knobs(hand_knobs(e2, oc, tiles, const_shape(trans)[1])))
