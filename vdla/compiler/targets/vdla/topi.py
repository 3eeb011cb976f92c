"""Operator templates for VDLA: packed int8 dense and conv2d with fused ALU tails.

Layouts (VTA's): data ``NCHW{b}n{c}c`` = ``(N/b, C/c, H, W, b, c)``; weights
``OIHW{c}o{c}i`` = ``(O/c, I/c, KH, KW, c_o, c_i)``; dense data ``(N/b, K/c, b, c)`` and
weights ``(O/c, K/c, c_o, c_i)``; bias ``(O/c, b, c_o)`` int32 (broadcast over the batch
rows by :func:`pack_bias`); the residual has the output's layout (int8).

The tail after the int32 accumulation runs on the tensor ALU, in this order::

    t = conv + bias;  t = t >> shift;  t = t + residual;  t = clip(t, lo, hi);  out = int8(t)

Knobs (:class:`Knobs`): output tile sizes in blocks/rows/columns, the input-channel
chunk loaded at a time, and virtual threads over output channels or rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from ... import te
from ...schedule.primitives import Schedule, Stage
from ...tir.nodes import Expr
from ...topi.util import const_shape, pad, padding4, pair
from .env import Env, VDLAError, get_env, shift_left, shift_right
from .packing import (
    pack_bias,
    pack_data,
    pack_dense_data,
    pack_dense_weight,
    pack_weight,
    unpack_data,
    unpack_dense_data,
)

__all__ = [
    "Knobs", "Tail", "conv2d_packed", "schedule_conv2d_packed", "dense_packed", "schedule_dense_packed",
    "pack_data", "unpack_data", "pack_weight", "pack_bias", "pack_dense_data", "unpack_dense_data",
    "pack_dense_weight", "conv2d_reference", "dense_reference", "shift_left",
]


@dataclass(frozen=True)
class Tail:
    """The ALU tail: ``clip(((acc + bias) >> shift) + residual, lo, hi)`` (each part optional)."""

    bias: bool = False
    shift: int = 0
    residual: bool = False
    clip: tuple[int, int] | None = (-128, 127)


@dataclass(frozen=True)
class Knobs:
    """Schedule knobs; None picks a value that fits the buffers."""

    tile_b: int = 1  # batch blocks per tile
    tile_co: int | None = None  # output-channel blocks per tile
    tile_h: int | None = None  # output rows per tile
    tile_w: int | None = None  # output columns per tile
    tile_ci: int | None = None  # input-channel blocks per load
    oc_nthread: int = 1  # virtual threads over output-channel tiles
    h_nthread: int = 1  # virtual threads over row tiles
    vthreads: int = 1  # >1: that many threads over channels or rows, whichever the model prefers
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def replace(self, **kw: Any) -> Knobs:
        return replace(self, **kw)


# ---------------------------------------------------------------------------- compute


def _blocks_match(env: Env, b: int, ci: int, co: int, kci: int) -> bool:
    """Whether packed operands' inner blocks are the GEMM's: data ``b x ci``, weights ``co x kci``."""
    c = env.config
    return (b, ci, co, kci) == (c.batch, c.block_in, c.block_out, c.block_in)


def _check_tail_inputs(op: str, tail: Tail, bias: te.Tensor | None, residual: te.Tensor | None) -> None:
    if (bias is not None) != tail.bias or (residual is not None) != tail.residual:
        raise VDLAError(f"{op}: pass bias/residual tensors exactly when the tail uses them")


def _conv_reduce_axes(cb: int, kh: int, kw: int, ci: int) -> list[te.IterVar]:
    """A conv's reduction, in the order the schedules split it: input-channel blocks (loaded a
    chunk at a time), kernel rows and columns, then the channel within a block (the GEMM's)."""
    return [te.reduce_axis((0, cb), name="ric"), te.reduce_axis((0, kh), name="rky"),
            te.reduce_axis((0, kw), name="rkx"), te.reduce_axis((0, ci), name="rci")]


def _epilogue(env: Env, acc: te.Tensor, tail: Tail, bias: te.Tensor | None, residual: te.Tensor | None,
              name: str, packed_index: Callable[[tuple[Expr, ...]], tuple[Expr, ...]] | None = None) -> te.Tensor:
    """The ALU tail on the accumulator, then the int8 output; returns the output.

    ``packed_index`` maps an output index to the index of the packed ``(N/b, O/c, ..., b, c)``
    output that the bias ``(O/c, b, c)`` and the residual are laid out in, for outputs computed
    in another shape (grouped conv's separate group axis); by default they are the same."""
    adt = env.acc_dtype
    shape = const_shape(acc)
    at = packed_index or (lambda i: i)

    def f(*i: Expr) -> Expr:
        t = acc[i]
        if bias is not None:
            p = at(i)
            t = t + bias[p[1], p[-2], p[-1]]
        if tail.shift:
            t = shift_right(t, tail.shift)
        if residual is not None:
            t = t + residual[at(i)].astype(adt)
        if tail.clip is not None:
            t = te.min(te.max(t, tail.clip[0]), tail.clip[1])
        return t

    alu = te.compute(shape, f, name=f"{name}_alu", tag="vdla_alu")
    return te.compute(shape, lambda *i: alu[i].astype(env.out_dtype), name=f"{name}_out", tag="vdla_out")


def conv2d_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "conv2d",
) -> te.Tensor:
    """Packed int8 conv2d with its ALU tail; returns the int8 output tensor."""
    env = get_env(config)
    tail = tail or Tail()
    nb, cb, h, w, b, ci = const_shape(data)
    ob, kcb, kh, kw, co, kci = const_shape(kernel)
    c = env.config
    if not _blocks_match(env, b, ci, co, kci) or kcb != cb:
        raise VDLAError(
            f"conv2d_packed: data {tuple(data.shape)} / kernel {tuple(kernel.shape)} do not match the config's "
            f"blocks (batch {c.batch}, block_in {c.block_in}, block_out {c.block_out})"
        )
    _check_tail_inputs("conv2d_packed", tail, bias, residual)
    sh, sw = pair(stride, "stride")
    pt, pl, pb, pr = padding4(padding)
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    dp = pad(data, [0, 0, pt, pl, 0, 0], [0, 0, pb, pr, 0, 0], name=f"{name}_pad")
    ric, rky, rkx, rci = _conv_reduce_axes(cb, kh, kw, ci)
    adt = env.acc_dtype
    acc = te.compute(
        (nb, ob, oh, ow, b, co),
        lambda n, o, y, x, bi, oi: te.sum(
            dp[n, ric, y * sh + rky, x * sw + rkx, bi, rci].astype(adt)
            * kernel[o, ric, rky, rkx, oi, rci].astype(adt),
            axis=[ric, rky, rkx, rci],
        ),
        name=name,
        tag="vdla_conv2d",
    )
    return _epilogue(env, acc, tail, bias, residual, name)


def dense_packed(
    data: te.Tensor,
    weight: te.Tensor,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "dense",
) -> te.Tensor:
    """Packed int8 dense ``(N/b, K/c, b, c) x (O/c, K/c, c_o, c_i) -> (N/b, O/c, b, c_o)``."""
    env = get_env(config)
    tail = tail or Tail()
    nb, kb, b, ci = const_shape(data)
    ob, kkb, co, kci = const_shape(weight)
    if not _blocks_match(env, b, ci, co, kci) or kkb != kb:
        raise VDLAError(f"dense_packed: data {tuple(data.shape)} / weight {tuple(weight.shape)} do not match the config")
    rk = te.reduce_axis((0, kb), name="rk")
    rci = te.reduce_axis((0, ci), name="rci")
    adt = env.acc_dtype
    acc = te.compute(
        (nb, ob, b, co),
        lambda n, o, bi, oi: te.sum(
            data[n, rk, bi, rci].astype(adt) * weight[o, rk, oi, rci].astype(adt), axis=[rk, rci]
        ),
        name=name,
        tag="vdla_dense",
    )
    return _epilogue(env, acc, tail, bias, residual, name)


# ---------------------------------------------------------------------------- schedules


def _stages(out: te.Tensor) -> tuple[te.ComputeOp, te.ComputeOp, list[te.Tensor]]:
    """(accumulation, ALU tail, the tail's other inputs: bias and/or residual) behind an output."""
    alu = out.op.input_tensors()[0].op
    acc = alu.input_tensors()[0].op
    extra = [t for t in alu.input_tensors() if t.op is not acc]
    return acc, alu, extra


def _tail_inputs(extra: Sequence[te.Tensor]) -> tuple[bool, bool]:
    """(has bias, has residual): the bias is the only 3-D tail input (``(O/c, b, c)``); the
    residual has the output's layout, which has more dimensions."""
    return any(len(t.shape) == 3 for t in extra), any(len(t.shape) != 3 for t in extra)


def _buffer_stages(s: Schedule, env: Env, acc_op: te.ComputeOp, alu_op: te.ComputeOp, data: te.Tensor,
                   weight: te.Tensor, extra: Sequence[te.Tensor]) -> tuple[te.Tensor, te.Tensor, list[te.Tensor]]:
    """Put the accumulation and its tail in the accumulator and read the operands into their
    on-chip buffers; returns (data, weight, tail inputs) as the buffers hold them."""
    s[acc_op].set_scope(env.acc_scope)
    s[alu_op].set_scope(env.acc_scope)
    if isinstance(data.op, te.ComputeOp) and "pad" in data.op.tag.split(","):
        # the padding stage itself lives in the input buffer: its load is a DMA that fills the pad
        s[data.op].set_scope(env.inp_scope)
        cdata = data
    else:
        cdata = s.cache_read(data, env.inp_scope, [s[acc_op]])
    cweight = s.cache_read(weight, env.wgt_scope, [s[acc_op]])
    cextra = [s.cache_read(t, env.acc_scope, [s[alu_op]]) for t in extra]
    return cdata, cweight, cextra


def _place_tail(s: Schedule, env: Env, so: Stage, store_at: Any, store_rows: Any, acc_op: te.ComputeOp,
                alu_op: te.ComputeOp, cextra: Sequence[te.Tensor]) -> None:
    """Store the output tile with a DMA from ``store_rows`` inward; compute the accumulation, the
    tail's loaded inputs and the tail (on the ALU) per tile at ``store_at``."""
    so.pragma(store_rows, env.dma_copy)
    for t in [acc_op.output(0), alu_op.output(0), *cextra]:
        s[t].compute_at(so, store_at)
    for t in cextra:
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    sa = s[alu_op]
    sa.pragma(sa.op.axis[0], env.alu)


def _place_loads_and_gemm(s: Schedule, env: Env, sc: Stage, chunk: Any, loads: Sequence[te.Tensor],
                          lane: Any) -> None:
    """Load the operand buffers (DMA) once per input-channel ``chunk``; the GEMM intrinsic from
    the batch ``lane`` inward."""
    for t in loads:
        s[t].compute_at(sc, chunk)
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    sc.tensorize(lane, env.gemm)


def _divisor_at_most(n: int, cap: int) -> int:
    for d in range(max(1, min(n, cap)), 0, -1):
        if n % d == 0:
            return d
    return 1


def _dma_cycles(c: Any, rows: int, row_bytes: int) -> float:
    """Rough DMA time of ``rows`` rows of ``row_bytes``: latency per row, bus beats, burst gaps."""
    t = c.timing
    beats = -(-row_bytes // c.bus_bytes)
    bursts = -(-beats // t.max_burst_beats)
    return t.insn_overhead + rows * (t.dram_latency + beats + bursts * t.burst_gap)


def conv_cost(env: Env, shape: tuple[int, ...], kshape: tuple[int, ...], stride: tuple[int, int], k: Knobs) -> float:
    """Estimated cycles of a conv2d schedule (the tile picker's model): per input-channel chunk
    the loads and the GEMM; one thread serialises them, two overlap them (each thread loading
    what it needs: shared data for output-channel threads, shared weights for row threads)."""
    c = env.config
    nb, ob, oh, ow, _, _ = shape
    _, cb, kh, kw, _, _ = kshape
    sh, sw = stride
    tco, th, tw, tci = k.tile_co, k.tile_h, k.tile_w, k.tile_ci
    ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
    load = tci * _dma_cycles(c, ih, iw * c.inp_elem_bytes) + _dma_cycles(c, tco, tci * kh * kw * c.wgt_elem_bytes)
    gemm = tco * th * tw * tci * kh * kw + c.timing.gemm_latency + 2 * c.timing.insn_overhead
    chunks = cb // tci
    tiles = nb * (ob // tco) * (oh // th) * (ow // tw)
    tail = tco * th * tw * 5 + _dma_cycles(c, tco, th * tw * c.out_elem_bytes)
    nt = k.oc_nthread * k.h_nthread
    if nt == 1:
        per_tile = chunks * (load + gemm) + tail
    else:
        per_tile = chunks * max(load, gemm) + tail / nt + min(load, gemm) / nt
    return tiles * per_tile


def _pick_conv_tiles(env: Env, shape: tuple[int, ...], kshape: tuple[int, ...], stride: tuple[int, int],
                     k: Knobs, has_bias: bool, has_res: bool) -> Knobs:
    """The tiles (that fit the buffers, one copy per virtual thread) with the lowest modelled cost."""
    c = env.config
    nb, ob, oh, ow, _, _ = shape
    _, cb, kh, kw, _, _ = kshape
    sh, sw = stride
    nt = k.oc_nthread * k.h_nthread
    best = None
    co_opts = [k.tile_co] if k.tile_co else [d for d in range(ob, 0, -1) if ob % (d * k.oc_nthread) == 0]
    h_opts = [k.tile_h] if k.tile_h else [d for d in range(oh, 0, -1) if oh % (d * k.h_nthread) == 0]
    w_opts = [k.tile_w] if k.tile_w else [d for d in range(ow, 0, -1) if ow % d == 0]
    ci_opts = [k.tile_ci] if k.tile_ci else [d for d in range(cb, 0, -1) if cb % d == 0]
    for tco in co_opts:
        for th in h_opts:
            for tw in w_opts:
                rows = k.tile_b * tco * th * tw
                acc = rows * (1 + int(has_res)) + (tco * k.tile_b if has_bias else 0)
                if acc * nt > c.acc_depth:
                    continue
                ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
                for tci in ci_opts:
                    inp = k.tile_b * tci * ih * iw
                    wgt = tco * tci * kh * kw
                    if inp * nt > c.inp_depth or wgt * nt > c.wgt_depth:
                        continue
                    cand = k.replace(tile_co=tco, tile_h=th, tile_w=tw, tile_ci=tci)
                    cost = conv_cost(env, shape, kshape, stride, cand)
                    if best is None or cost < best[0]:
                        best = (cost, cand)
    if best is None:
        raise VDLAError(
            f"conv2d {shape}: no tile fits the buffers of config {c.name!r} with {nt} virtual thread(s)"
        )
    return best[1]


_Picked = TypeVar("_Picked")


def _choose_threads(k: Knobs, pick: Callable[[Knobs], _Picked], cost: Callable[[_Picked], float],
                    what: str) -> _Picked:
    """``pick(k)``; with ``vthreads`` but no explicit split, the cheaper of that many virtual threads
    over output-channel tiles and over row tiles (of those that fit)."""
    if k.vthreads <= 1 or k.oc_nthread != 1 or k.h_nthread != 1:
        return pick(k)
    cands = []
    for kk in (k.replace(oc_nthread=k.vthreads), k.replace(h_nthread=k.vthreads)):
        try:
            got = pick(kk)
        except VDLAError:
            continue
        cands.append((cost(got), got))
    if not cands:
        raise VDLAError(f"{what}: no tile fits with {k.vthreads} virtual threads")
    return min(cands, key=lambda x: x[0])[1]


def _conv_stride(acc_op: te.ComputeOp) -> tuple[int, int]:
    """conv2d_packed's strides, read back from its data index ``y * sh + ky``."""
    sh = sw = 1
    body = acc_op.body
    idx = body.source.a.value.indices if hasattr(body.source.a, "value") else None
    if idx is not None:
        from ...tir.arith import linear

        ly, lx = linear(idx[2]), linear(idx[3])
        yv, xv = acc_op.axis[2].var, acc_op.axis[3].var
        sh = next((c for a, c in ly.terms.values() if a is yv), 1)
        sw = next((c for a, c in lx.terms.values() if a is xv), 1)
    return sh, sw


def schedule_conv2d_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """VTA's conv2d schedule: output tiles (store point), loads at the input-channel chunk,
    GEMM tensorized at the batch lane, the ALU tail on the tile, optional virtual threads."""
    env = get_env(config)
    acc_op, _, extra = _stages(out)
    shape = const_shape(out)
    kshape = const_shape(acc_op.input_tensors()[1])
    stride = _conv_stride(acc_op)
    has_bias, has_res = _tail_inputs(extra)
    k = _choose_threads(
        knobs or Knobs(),
        lambda kk: _pick_conv_tiles(env, shape, kshape, stride, kk, has_bias, has_res),
        lambda kk: conv_cost(env, shape, kshape, stride, kk),
        f"conv2d {shape}",
    )
    return _schedule_conv(out, env, k)


def _schedule_conv(out: te.Tensor, env: Env, k: Knobs, outer_dims: tuple[int, ...] = (),
                   threads_over_outer: bool = False) -> Schedule:
    """The conv2d schedule with tiles ``k``, for conv2d and the conv-like templates of
    :mod:`.topi_ext`: ``outer_dims`` are output dimensions besides the conv's
    ``(n, o, y, x, b, c)`` (the transpose's phases, the groups), kept as whole loops outside the
    tiles and the input-channel chunks; ``threads_over_outer`` puts ``k.oc_nthread`` virtual
    threads on the first of them rather than on the output-channel tiles."""
    acc_op, alu_op, extra = _stages(out)
    s = te.create_schedule(out.op)
    data, kernel = acc_op.input_tensors()
    cdata, ckern, cextra = _buffer_stages(s, env, acc_op, alu_op, data, kernel, extra)

    def split_outer(axes: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        return ([a for d, a in enumerate(axes) if d in outer_dims],
                [a for d, a in enumerate(axes) if d not in outer_dims])

    # output tiles
    so = s[out]
    outer, (n, o, y, x, bi, oi) = split_outer(so.op.axis)
    n0, n1 = so.split(n, factor=k.tile_b)
    o0, o1 = so.split(o, factor=k.tile_co)
    y0, y1 = so.split(y, factor=k.tile_h)
    x0, x1 = so.split(x, factor=k.tile_w)
    so.reorder(n0, *outer, y0, o0, x0, n1, o1, y1, x1, bi, oi)
    lead = [n0, *outer]
    if k.oc_nthread > 1:
        if threads_over_outer:
            g0, vt = so.split(outer[0], factor=k.oc_nthread)
            so.reorder(vt, n0, g0, y0, o0, x0)
            lead = [vt, n0, g0]
        else:
            o0, vt = so.split(o0, factor=k.oc_nthread)
            so.reorder(vt, *lead, y0, o0, x0)
            lead = [vt, *lead]
        so.bind(vt, te.thread_axis("cthread"))
    if k.h_nthread > 1:
        y0, vt2 = so.split(y0, factor=k.h_nthread)
        so.reorder(vt2, *lead, y0, o0, x0)
        so.bind(vt2, te.thread_axis("cthread"))
    _place_tail(s, env, so, x0, n1, acc_op, alu_op, cextra)
    # accumulation
    sc = s[acc_op]
    couter, (cn, co_, cy, cx, cbi, coi) = split_outer(sc.op.axis)
    ric, rky, rkx, rci = sc.op.reduce_axis
    ric0, ric1 = sc.split(ric, factor=k.tile_ci)
    sc.reorder(cn, *couter, ric0, ric1, rky, rkx, co_, cy, cx, cbi, coi, rci)
    _place_loads_and_gemm(s, env, sc, ric0, (cdata, ckern), cbi)
    s.vdla_knobs = k  # type: ignore[attr-defined]
    return s


def _pick_dense_tiles(env: Env, shape: tuple[int, ...], kb: int, k: Knobs, has_bias: bool, has_res: bool) -> Knobs:
    c = env.config
    nb, ob, _, _ = shape
    nt = k.oc_nthread * k.h_nthread
    best = None
    b_opts = [k.tile_b] if k.tile_b != 1 or nb == 1 else [d for d in range(nb, 0, -1) if nb % d == 0]
    co_opts = [k.tile_co] if k.tile_co else [d for d in range(ob, 0, -1) if ob % d == 0]
    ci_opts = [k.tile_ci] if k.tile_ci else [d for d in range(kb, 0, -1) if kb % d == 0]
    for tb in b_opts:
        for tco in co_opts:
            if ob % (tco * k.oc_nthread):
                continue
            acc = tb * tco * (1 + int(has_res)) + (tco if has_bias else 0)
            if acc * nt > c.acc_depth:
                continue
            for tci in ci_opts:
                if tb * tci * nt > c.inp_depth or tco * tci * nt > c.wgt_depth:
                    continue
                score = (tb * tco * min(tci, 64), tci)
                if best is None or score > best[0]:
                    best = (score, (tb, tco, tci))
    if best is None:
        return k.replace(tile_co=k.tile_co or 1, tile_ci=k.tile_ci or 1)
    tb, tco, tci = best[1]
    return k.replace(tile_b=tb, tile_co=tco, tile_ci=tci)


def schedule_dense_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    env = get_env(config)
    k = knobs or Knobs()
    acc_op, alu_op, extra = _stages(out)
    s = te.create_schedule(out.op)
    data, weight = acc_op.input_tensors()
    shape = const_shape(out)
    kb = const_shape(data)[1]
    k = _pick_dense_tiles(env, shape, kb, k, *_tail_inputs(extra))
    cdata, cwgt, cextra = _buffer_stages(s, env, acc_op, alu_op, data, weight, extra)
    so = s[out]
    n, o, bi, oi = so.op.axis
    n0, n1 = so.split(n, factor=k.tile_b)
    o0, o1 = so.split(o, factor=k.tile_co)
    so.reorder(n0, o0, n1, o1, bi, oi)
    if k.oc_nthread > 1:
        o0, vt = so.split(o0, factor=k.oc_nthread)
        so.reorder(vt, n0, o0)
        so.bind(vt, te.thread_axis("cthread"))
    _place_tail(s, env, so, o0, n1, acc_op, alu_op, cextra)
    sc = s[acc_op]
    cn, co_, cbi, coi = sc.op.axis
    rk, rci = sc.op.reduce_axis
    rk0, rk1 = sc.split(rk, factor=k.tile_ci)
    sc.reorder(rk0, cn, co_, rk1, cbi, coi, rci)
    _place_loads_and_gemm(s, env, sc, rk0, (cdata, cwgt), cbi)
    s.vdla_knobs = k  # type: ignore[attr-defined]
    return s


# ---------------------------------------------------------------------------- host-side layouts


def _apply_tail(acc: np.ndarray, tail: Tail, bias: np.ndarray | None, residual: np.ndarray | None) -> np.ndarray:
    """numpy model of the ALU tail on an int32 ``(N, O, ...)`` accumulator; ``bias`` is ``(O,)``."""
    t = acc.astype(np.int64)
    if bias is not None:
        t = t + bias.astype(np.int64).reshape(1, -1, *[1] * (acc.ndim - 2))
    t = (t.astype(np.int32).astype(np.int64) >> tail.shift) if tail.shift else t.astype(np.int32).astype(np.int64)
    if residual is not None:
        t = (t + residual.astype(np.int64)).astype(np.int32).astype(np.int64)
    if tail.clip is not None:
        t = np.clip(t, tail.clip[0], tail.clip[1])
    return t.astype(np.int32).astype(np.int8)  # int8 OUT is the low byte


def _conv_sums(x: np.ndarray, wt: np.ndarray, stride: int, padding: int) -> np.ndarray:
    """Exact int64 sums of an NCHW x OIHW convolution (the caller wraps them to int32)."""
    n, _, h, w = x.shape
    o, _, kh, kw = wt.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (w + 2 * padding - kw) // stride + 1
    acc = np.zeros((n, o, oh, ow), np.int64)
    wl = wt.astype(np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky : ky + stride * oh : stride, kx : kx + stride * ow : stride]
            acc += np.einsum("nchw,oc->nohw", patch, wl[:, :, ky, kx], optimize=True)
    return acc


def conv2d_reference(x: np.ndarray, wt: np.ndarray, stride: int = 1, padding: int = 0, tail: Tail | None = None,
                     bias: np.ndarray | None = None, residual: np.ndarray | None = None) -> np.ndarray:
    """numpy NCHW int8 reference: exact int32 accumulation (wrapping), then the tail."""
    acc = _conv_sums(x, wt, stride, padding).astype(np.int32)
    return _apply_tail(acc, tail or Tail(), bias, residual)


def dense_reference(x: np.ndarray, wt: np.ndarray, tail: Tail | None = None, bias: np.ndarray | None = None,
                    residual: np.ndarray | None = None) -> np.ndarray:
    acc = (x.astype(np.int64) @ wt.astype(np.int64).T).astype(np.int32)
    return _apply_tail(acc, tail or Tail(), bias, residual)
