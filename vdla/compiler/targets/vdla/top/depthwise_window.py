"""The depthwise template for CFG's window mode: which layers take it, its tiles, its build.

A depthwise conv (the grouped template with one channel block per group and a block-diagonal
weight) runs on the GEMM either as today's block-diagonal grouped conv
(:mod:`.group_conv2d`: ``block_in`` useful MACs of ``block_in x block_out`` a cycle) or, on a
core with ``Config.gemm_window``, in window mode (:mod:`..window`: a pass per kernel row,
K*block_in useful MACs a cycle, ``W / (W + P)`` of them for whole-width tiles; a 3x3 kernel
also with 5 or 6 input rows interleaved per pass, ``9 (R-2)/R * block_in``).
:func:`window_layer` says whether a
layer can take the window (stride 1, a square odd kernel of at most ``block_in`` taps,
padding ``(K-1)/2`` on every side, a tail the GEMM epilogue computes: ``clip((acc [+ bias])
>> shift, lo, hi)`` with the clip inside OUT's range; no residual) and describes it;
:func:`pick_window_tiles` chooses the output tiles and threads by :func:`window_cost` (the
busiest of the load, compute and store modules over the layer, with the micro-op kernels it
loads), which also picks the mapping and how many channel blocks a weight load carries;
:func:`build_depthwise_window`
builds the function. The graph strategy (:func:`vdla.compiler.graph.strategy.vdla.build_kernel`)
takes the window wherever :func:`window_layer` allows it and :data:`ENABLED` is set; the
weight it is called with is :func:`..packing.pack_window_weight` of the grouped template's
(for the mapping the function's ``info["window_rows"]`` names).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .....config import Config
from .....isa import Mem, elem_bytes
from .....simulator.timing import dma_cycles, gemm_cycles
from ..env import VDLAError
from ..module import VDLAFunction
from ..window import WindowConv, WindowTiles, _passes, window_fits, window_function
from .common import Tail

__all__ = ["ENABLED", "window_layer", "window_cost", "pick_window_tiles", "build_depthwise_window"]

#: the window template's switch (the strategy uses it when True); ``VDLA_GEMM_WINDOW=0`` starts it off
ENABLED = os.environ.get("VDLA_GEMM_WINDOW", "1") != "0"


def window_layer(config: Config, data_shape: Sequence[int], weight_shape: Sequence[int], groups: int,
                 strides: Sequence[int], padding: Sequence[int], tail: Tail) -> WindowConv | str:
    """The layer as a :class:`WindowConv` when the window can compute it on ``config``, else why
    not. ``data_shape`` is the packed ``(N/b, C/c, H, W, b, c)``, ``weight_shape`` the grouped
    template's ``(C/c, 1, K, K, c, c)`` (its block-diagonality is the caller's to check)."""
    if not config.gemm_window:
        return f"config {config.name!r} has no GEMM window"
    nb, cb, h, w, b, c = data_shape
    if len(weight_shape) != 6 or groups != cb or weight_shape[0] != cb or weight_shape[1] != 1:
        return "not a depthwise conv with one channel block per group"
    k = weight_shape[2]
    if weight_shape[3] != k or k % 2 == 0 or not 3 <= k <= config.block_in:
        return f"kernel {weight_shape[2]}x{weight_shape[3]} (the window takes square odd kernels of 3 to " \
               f"{config.block_in} taps)"
    if tuple(strides) != (1, 1):
        return f"strides {tuple(strides)}"
    if len(set(padding)) != 1 or padding[0] != (k - 1) // 2:
        return f"padding {tuple(padding)} (the window needs {(k - 1) // 2} on every side)"
    if (b, c, weight_shape[4], weight_shape[5]) != (config.batch, config.block_out, config.block_out, config.block_out):
        return "blocks do not match the config's"
    lo, hi = -(1 << (config.out_width - 1)), (1 << (config.out_width - 1)) - 1
    if tail.residual or tail.clip is None or not lo <= tail.clip[0] <= tail.clip[1] <= hi:
        return "a tail the GEMM epilogue does not compute (a residual, or no clip inside OUT's range)"
    if not 0 <= tail.shift < config.acc_width:
        return f"shift {tail.shift}"
    conv = WindowConv(nb, cb, h, w, k, tail.bias, tail.shift, tail.clip)
    try:
        pick_window_tiles(conv, config)
    except VDLAError as e:
        return str(e)
    return conv


def window_cost(conv: WindowConv, tiles: WindowTiles, config: Config) -> float:
    """Estimated cycles of the layer: per tile, a CFG and the GEMMs of each channel block on the
    compute module, the input load (with its halo rows) and the store; a weight load per group
    of channel blocks. With two or more threads the modules overlap, so the busiest one's total
    plus one tile's load and store (the pipeline's fill and drain); with one, their sum."""
    p, lead, t = conv.pad, tiles.lead(conv), config.timing
    ib, ob, wb = elem_bytes(config, Mem.INP), elem_bytes(config, Mem.OUT), elem_bytes(config, Mem.WGT)
    groups = [min(tiles.tile_c, conv.cb - c) for c in range(0, conv.cb, tiles.tile_c)]
    wgb = tiles.weight_blocks()
    compute = load = store = 0.0
    first = last = 0.0
    rl = min(tiles.tile_w, conv.w) + lead
    for y0 in range(0, conv.h, tiles.tile_h):
        th = min(tiles.tile_h, conv.h - y0)
        rows_in = min(conv.h, y0 + th + p) - max(0, y0 - p)
        if tiles.rows:  # one GEMM over the groups of rows - 2 output rows, one more for the rest (and the edges)
            g = tiles.rows - 2
            groups_n = th // g + (th % g > 0)
            n_gemms = min(groups_n, 3) if tiles.tile_c > 1 else 1 + (th % g > 0)
            gemms = gemm_cycles(config, groups_n * tiles.rows * rl) + (n_gemms - 1) * (gemm_cycles(config, 1) - 1)
        else:
            gemms = sum(gemm_cycles(config, rows * rl) for _, _, rows in _passes(conv.k, p, y0, th, conv.h))
        for x0 in range(0, conv.w, tiles.tile_w):
            tw = min(tiles.tile_w, conv.w - x0)
            cols = min(conv.w, x0 + tw + p) - max(0, x0 - lead + p)
            for nc in groups:
                c = nc * (t.insn_overhead + gemms * tw / min(tiles.tile_w, conv.w))
                ld = dma_cycles(config, nc * rows_in, cols * ib)
                st = dma_cycles(config, nc * th, tw * ob, write=True)
                compute, load, store = compute + c, load + ld, store + st
                first, last = first or ld, st
    weights = sum(dma_cycles(config, 1, min(wgb, conv.cb - c) * tiles.wgt_rows(conv) * wb)
                  for c in range(0, conv.cb, wgb))
    # micro-op kernels, each loaded once by the compute module: one per GEMM shape of a tile (a
    # kernel row's pass, or a run of row groups; tiles at the edges differ) and per thread,
    # weight slot and place of the tile's blocks in their weight group
    n_y, n_x = -(-conv.h // tiles.tile_h), -(-conv.w // tiles.tile_w)
    shapes = min(n_y, 3) * min(n_x, 2) * tiles.tile_c * (3 if tiles.rows else conv.k)
    places = min(tiles.nthread * 2 * (wgb // tiles.tile_c), len(groups) * n_y * n_x * conv.nb)
    compute += shapes * places * dma_cycles(config, 1, 4 * (tiles.rows or 1)) / conv.nb
    compute, load, store = conv.nb * compute, conv.nb * load + weights, conv.nb * store
    if tiles.nthread < 2:
        return compute + load + store
    return max(compute, load, store) + first + last + dma_cycles(config, 1, min(wgb, conv.cb) * tiles.wgt_rows(conv) * wb)


def _sizes(n: int) -> list[int]:
    """The balanced tile sizes of a dimension of ``n``: ceil(n / m) for m tiles, largest first."""
    return sorted({-(-n // m) for m in range(1, n + 1)}, reverse=True)


def pick_window_tiles(conv: WindowConv, config: Config, nthread: int | None = None) -> WindowTiles:
    """The tiles of least :func:`window_cost` that fit the buffers: whole planes of one or more
    channel blocks, whole-width row tiles (for a 3x3 kernel also with 5 or 6 rows interleaved
    per pass), or (where no whole-width row tile fits) narrower column tiles; ``nthread`` None
    tries two threads, then one."""
    best: tuple[float, WindowTiles] | None = None
    for nt in (nthread,) if nthread else (2, 1):
        cands = [WindowTiles(conv.h, conv.w, nt, c) for c in range(2, conv.cb + 1)]
        if conv.k == 3:  # interleaved rows (window.py): the whole kernel in one GEMM
            cands += [WindowTiles(th, conv.w, nt, 1, r) for r in (5, 6) for th in _sizes(conv.h)]
            cands += [WindowTiles(conv.h, conv.w, nt, c, r) for r in (5, 6) for c in range(2, conv.cb + 1)]
        for tw in _sizes(conv.w):
            cands += [WindowTiles(th, tw, nt) for th in _sizes(conv.h)]
            if not window_fits(conv, WindowTiles(1, conv.w, nt), config):
                break  # whole-width rows fit: no column tiles
        cands += [t.replace(wgroup=t.tile_c) for t in cands if t.tile_c < t.wgroup]  # a weight load per tile
        for tiles in cands:
            if window_fits(conv, tiles, config):
                continue
            cost = window_cost(conv, tiles, config)
            if best is None or cost < best[0]:
                best = (cost, tiles)
        if best is not None:
            break
    if best is None:
        raise VDLAError(f"window depthwise conv {conv}: no tile fits config {config.name!r} "
                        f"({window_fits(conv, WindowTiles(1, 1, 1), config)})")
    return best[1]


def build_depthwise_window(conv: WindowConv, config: Config, name: str = "dw_window",
                           tiles: WindowTiles | None = None, nthread: int | None = None) -> VDLAFunction:
    """The built window kernel of ``conv``: arguments ``data`` (packed), the window weight
    ``(C/c, K, c, block_in)`` (:func:`..packing.pack_window_weight`), the bias ``(C/c, b, c)`` when
    ``conv.bias``, the int8 output (packed, the data's shape)."""
    tiles = tiles or pick_window_tiles(conv, config, nthread)
    return window_function(conv, tiles, config, name, config.batch, config.block_out)
