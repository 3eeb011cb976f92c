"""``conv2d_nchw_winograd.cuda``: TVM's GPU Winograd template, the weight transformed at compile time.

A 3x3, stride-1 convolution by F(m x m, 3 x 3) (m = 2 or 4, a template argument) as
:func:`vdla.compiler.topi.winograd.conv2d_winograd_nchw` declares it, in three kernels as TVM's
``schedule_winograd_cuda`` runs them:

* the **input transform**: one thread per (channel, tile), the tile's first pass ``B^T d`` in
  registers (``alpha x alpha``, unrolled, the padding inlined into its reads), then the
  ``alpha^2`` transformed values ``V [alpha^2, C, P]`` (consecutive threads store consecutive tiles);
* the **batched GEMM** ``M[e] = U[e]^T V[e]`` over the ``alpha^2`` tile positions, tuned: a block per
  position (``tile_b``: TVM's, blocks only) x ``tile_y`` output channels x ``tile_x`` tiles (each
  in four: blocks, virtual threads, threads, per thread), the input channels in steps of
  ``tile_rc`` copied to shared memory by the whole block, a thread's register tile unrolled, the
  reduction step unrolled up to ``auto_unroll_max_step`` copies (explicitly when ``unroll_explicit``);
* the **inverse transform**: one thread per (output channel, tile), ``M A`` in registers, then
  the tile's ``m x m`` pixels (those past a ragged edge skipped).

The kernel is the template's input already transformed (TVM's "PT", pre-transformed: a model's
weights are constants, so their transform is done once ahead of the runs, not timed with them):
``U [alpha^2, C, OC]`` (:func:`~vdla.compiler.topi.winograd.winograd_weight_nchw`, the memory of
TVM's ``(alpha, alpha, CI, CO)``). The arguments are ``conv2d_nchw.cuda``'s and ``m``: ``[data,
kernel OIHW, stride, padding4, dilation, m]``, so a direct workload becomes a Winograd task by
appending ``m`` (:func:`winograd_args`: ``create(NAME, winograd_args(task.args, m), task.target)``
for a model's 3x3 stride-1 ``conv2d_nchw.cuda`` tasks; the GPU graph build does not choose this
template yet, its 3x3 convolutions run the direct one). The numpy reference is the direct
convolution with the OIHW weights the kernel came from (the inputs are made that way; the
weights are recovered from ``U``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import te
from ...schedule.primitives import Schedule
from ...targets.cuda.schedules.common import cooperative_fetch, divisor_at_most
from ...targets.cuda.schedules.conv2d import MAX_ACCUMULATORS, MAX_VTHREAD
from ...topi import testing as ref
from ...topi.util import const_shape, find_tagged
from ...topi.winograd import WINOGRAD_TILES, conv2d_winograd_nchw, winograd_matrices, winograd_weight_nchw
from ..dispatch import get_config
from ..registry import template
from ..space import ConfigSpace

__all__ = ["conv2d_nchw_winograd", "schedule_winograd_cuda", "winograd_args", "WinogradPoint",
           "UNROLL_STEPS", "unpack_weight"]

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


def _hand(e2: int, oc: int, tiles: int, c: int) -> dict[str, Any]:
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


def schedule_winograd_cuda(out: te.Tensor, p: WinogradPoint) -> Schedule:
    """The three kernels of the module doc for the output of :func:`conv2d_winograd_nchw`."""
    s = te.create_schedule(out.op)
    outs = [out]
    rows, trans, gemm, cols = (find_tagged(outs, t).output(0) for t in ("winograd_input_rows", "winograd_input",
                                                                        "winograd_gemm", "winograd_output_cols"))
    m = int(out.op.attrs["winograd_m"])
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

    # the inverse transform: a thread per (output channel, tile), M A in registers
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


def _inputs(args: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Random data and the transform of random OIHW weights (a random ``U`` is no 3x3 kernel's)."""
    data, kernel, *_, m = args
    x = rng.standard_normal(tuple(data)).astype(np.float32)
    w = rng.standard_normal(tuple(kernel)).astype(np.float32)
    return [x, winograd_weight_nchw(w, m)]


def unpack_weight(u: np.ndarray, m: int) -> np.ndarray:
    """The OIHW 3x3 weights a transformed kernel ``U [alpha^2, C, OC]`` came from (``G`` has full
    column rank: its pseudo-inverse undoes ``G w G^T``; float64)."""
    alpha = m + 2
    _, g, _ = winograd_matrices(m)
    gp = np.linalg.pinv(g.astype(np.float64))
    e2, c, oc = u.shape
    u4 = u.astype(np.float64).reshape(alpha, alpha, c, oc)
    return np.einsum("ia,abco,jb->ocij", gp, u4, gp)


def _reference(args: list[Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    _, _, _, padding, _, m = args
    x, u = inputs
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    return [ref.conv2d_nchw(xp, unpack_weight(u, m), 1, 0).astype(np.float32)]


@template(NAME, reference=_reference, inputs=_inputs)
def conv2d_nchw_winograd(data: list[int], kernel: list[int], stride: list[int], padding: list[int],
                         dilation: list[int], m: int) -> tuple[Any, list[Any]]:
    if winograd_args([data, kernel, stride, padding, dilation], m) is None:
        raise ValueError(f"{NAME}: F(m x m, 3 x 3) with m in {WINOGRAD_TILES} takes a 3x3 kernel of stride 1 and "
                         f"dilation 1, got kernel {kernel}, stride {stride}, dilation {dilation}, m {m}")
    oc, c = kernel[:2]
    x = te.placeholder(tuple(data), name="data")
    u = te.placeholder(((m + 2) ** 2, c, oc), name="kernel_pack")
    y = conv2d_winograd_nchw(x, u, tuple(padding), m)
    e2, _, tiles = const_shape(find_tagged([y], "winograd_gemm").output(0))
    cfg = get_config()
    define_winograd_space(cfg, e2, oc, tiles, c)
    cfg.workload = [NAME, [list(data), list(kernel), list(stride), list(padding), list(dilation), m]]
    # TVM counts a Winograd convolution's flops as the direct convolution's (so GFLOP/s compare)
    cfg.add_flop(2.0 * float(np.prod(const_shape(y))) * c * 9)
    if cfg.is_fallback:
        for name, val in _hand(e2, oc, tiles, c).items():
            cfg.set(name, val)
    if isinstance(cfg, ConfigSpace):  # the space being built: any valid tiles declare it
        return schedule_winograd_cuda(y, WinogradPoint(1, 1, 1, 1, 1, 1, 1, 0, False)), [x, u, y]
    return schedule_winograd_cuda(y, WinogradPoint.from_config(cfg)), [x, u, y]
