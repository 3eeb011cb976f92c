"""The tiling rule of the VDLA templates: a cycle estimate of a tile choice (:func:`conv_cost`:
DMA bytes at the bus width against GEMM iterations) and the pickers that choose, within
the on-chip buffers, the output tiles, input-channel chunk and virtual-thread split a
schedule uses when its knobs leave them open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .....simulator.timing import dma_cycles, pipeline_latency
from ....tir.nodes import BinOp, Call, IntImm, TensorRead
from ..env import Env, VDLAError
from ..fuse_tail import _PAD_MAX
from .common import Knobs

__all__ = ["conv_cost", "fused_tail"]


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


def fused_tail(out: Any, config: Any) -> bool:
    """Whether :mod:`..fuse_tail` will move the requantisation tail behind ``out`` into the GEMMs
    (the pass on, and the tail one ALU stage ``min(max([acc + bias] >> shift, lo), hi)`` with
    the bias a per-channel vector): then the tile pays no ALU cycles and no reset."""
    from .. import fuse_tail
    from .common import _alu_ops

    if not (fuse_tail.ENABLED and config.gemm_epilogue):
        return False
    alu = out.op.input_tensors()[0].op
    if len(_alu_ops(alu)) != 1:
        return False
    e = alu.body
    lo, hi = -(1 << (config.out_width - 1)), (1 << (config.out_width - 1)) - 1
    for op in ("min", "max"):  # the clip's bounds inside OUT's range, as the epilogue's
        if not (isinstance(e, BinOp) and e.op == op and isinstance(e.b, IntImm) and lo <= e.b.value <= hi):
            return False
        e = e.a
    if isinstance(e, Call) and e.name == "shift_right" and isinstance(e.args[1], IntImm):
        e = e.args[0]
    if not (isinstance(e, BinOp) and e.op == "add" and isinstance(e.a, TensorRead) and isinstance(e.b, TensorRead)):
        return False
    return len(e.a.tensor.shape) != 3 and len(e.b.tensor.shape) == 3


def conv_cost(env: Env, shape: tuple[int, ...], kshape: tuple[int, ...], stride: tuple[int, int], k: Knobs,
              fused: bool = False) -> float:
    """Estimated cycles of a conv2d schedule (the tile picker's model): per input-channel chunk
    the loads and the GEMM; one thread serialises them, two overlap them (each thread loading
    what it needs: shared data for output-channel threads, shared weights for row threads).

    ``fused`` (:func:`fused_tail`): the tail is in the GEMMs, so a tile's compute is its GEMMs,
    its bias load and (when the first chunk's GEMM cannot start from the bias) the padding of
    the bias load or a reset; with threads, a tile's store runs under the other threads' compute,
    and the next tile of its thread (whose first GEMM writes the rows the store reads) waits
    for it: the threads interleave chunk by chunk, so only one chunk's GEMM of another thread
    covers the store. A tile then takes the longest of that compute, its loads and its store."""
    c = env.config
    nb, ob, oh, ow, _, _ = shape
    _, cb, kh, kw, _, _ = kshape
    sh, sw = stride
    tco, th, tw, tci = k.tile_co, k.tile_h, k.tile_w, k.tile_ci
    ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
    load = tci * _dma_cycles(c, ih, iw * c.inp_elem_bytes) + _dma_cycles(c, tco, tci * kh * kw * c.wgt_elem_bytes)
    gemm = tco * th * tw * tci * kh * kw + pipeline_latency(c, "gemm") + 2 * c.timing.insn_overhead
    chunks = cb // tci
    tiles = nb * (ob // tco) * (oh // th) * (ow // tw)
    nt = k.oc_nthread * k.h_nthread
    if fused:
        rows, step = k.tile_b * tco * th * tw, tci * kh * kw
        # the first chunk's GEMM starts from the bias where it reads row d's at init_base + its
        # WGT index: the bias load pads its rows apart (above every thread's tiles), else a reset
        padded = step - 1 <= 2 * _PAD_MAX and tco * (step - 1) < rows and nt * (rows + k.tile_b * tco) + tco * step <= c.acc_depth
        start = 0 if step == 1 else tco * step if padded else rows
        bias = dma_cycles(c, tco, c.acc_elem_bytes, pad_elems=start)
        store = dma_cycles(c, k.tile_b * tco, th * tw * c.out_elem_bytes, write=True)
        if nt == 1:
            return tiles * (chunks * (load + gemm) + bias + store)
        compute = chunks * gemm + bias + max(0, store - (nt - 1) * gemm)
        return tiles * (max(compute, chunks * load, store) + min(load, gemm) / nt)
    tail = tco * th * tw * 5 + _dma_cycles(c, tco, th * tw * c.out_elem_bytes)
    if nt == 1:
        per_tile = chunks * (load + gemm) + tail
    else:
        per_tile = chunks * max(load, gemm) + tail / nt + min(load, gemm) / nt
    return tiles * per_tile


def _pick_conv_tiles(env: Env, shape: tuple[int, ...], kshape: tuple[int, ...], stride: tuple[int, int],
                     k: Knobs, has_bias: int, has_res: bool, fused: bool = False) -> Knobs:
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
                acc = rows * (1 + int(has_res)) + tco * k.tile_b * int(has_bias)
                if acc * nt > c.acc_depth:
                    continue
                ih, iw = (th - 1) * sh + kh, (tw - 1) * sw + kw
                for tci in ci_opts:
                    inp = k.tile_b * tci * ih * iw
                    wgt = tco * tci * kh * kw
                    if inp * nt > c.inp_depth or wgt * nt > c.wgt_depth:
                        continue
                    cand = k.replace(tile_co=tco, tile_h=th, tile_w=tw, tile_ci=tci)
                    cost = conv_cost(env, shape, kshape, stride, cand, fused)
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


def _pick_dense_tiles(env: Env, shape: tuple[int, ...], kb: int, k: Knobs, has_bias: int, has_res: bool) -> Knobs:
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
            acc = tb * tco * (1 + int(has_res)) + tco * int(has_bias)
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


def _pick_outer_tiles(env: Env, shape6: tuple[int, ...], kshape6: tuple[int, ...], stride: tuple[int, int], k: Knobs,
          has_bias: bool, has_res: bool, outer_threads: int) -> Knobs:
    """Tiles for a conv-like stage; ``outer_threads`` virtual threads over an outer axis (groups)
    also replicate the buffers, so they are folded into ``h_nthread`` for the capacity check only."""
    if outer_threads == 1:
        return _pick_conv_tiles(env, shape6, kshape6, stride, k, has_bias, has_res)
    nb, ob, oh, ow, b, co = shape6
    # the capacity check counts oc_nthread * h_nthread copies: pose as that many row threads
    # over an output tall enough to split, then restore the real thread counts
    fake = k.replace(h_nthread=k.h_nthread * outer_threads, oc_nthread=1)
    tall = (nb, ob, oh * outer_threads, ow, b, co)
    got = _pick_conv_tiles(env, tall, kshape6, stride, fake.replace(tile_h=k.tile_h or None), has_bias, has_res)
    # the pick was for the taller output: the largest row tile no taller that divides the real one
    th = _divisor_at_most(oh, got.tile_h)
    return got.replace(tile_h=th, h_nthread=k.h_nthread, oc_nthread=k.oc_nthread)
