"""A depthwise conv in CFG's window mode, lowered straight to tasks (no TE, no tensorize).

In window mode (``Config.gemm_window``) a GEMM's lane ``(b, o)`` at position ``p`` of its
inner-loop pass multiplies the weight row ``WGT[wgt][o][t]`` with the input rows of the last
``block_in`` positions (tap ``t`` is the row read at ``p - t``, zero before the pass starts),
channel ``o`` of each; the first ``warmup`` positions of a pass only feed the window. A KxK
stride-1 depthwise conv (padding ``P = (K-1)/2``) is then, per channel block and output-row
tile, K GEMMs, one per kernel row ``ky``: the outer loop over the tile's output rows, the
inner one over an input row, one micro-op. K*c useful MACs a cycle instead of the c of the
block-diagonal grouped conv.

Per layer (buffers are static; ``lead`` = the warm-up: ``P`` for tiles of the whole width,
whose input rows start at column 0, the left pad being the zeros before a pass; ``2P`` for
narrower tiles, whose rows start ``P`` columns left of the tile):

* WGT: the K window rows of a channel block (:func:`..packing.pack_window_weight`), loaded
  for a group of blocks (``WindowTiles.wgroup``) at once, before the group's first tile, into
  one of two slots (the other group still computing): so the micro-ops depend on the block's
  place in its group only, and the few kernels load once; ``B`` = the WGT rows of both slots;
* ACC rows ``[B, B + CB)``: the bias of block ``cb`` at row ``B + cb`` (one LOAD ACC), or
  zeros (one reset GEMM); a tile's first GEMM of a block has init, from ``init_base`` + its
  WGT index;
* a CFG per channel block of a tile: ``window``, ``warmup = lead``, ``init_base`` (``B + cb``
  less the init GEMM's WGT index), and the epilogue (shift, clip) of the requantisation:
  every pass writes OUT, the last one the result, so no ALU tail is left;
* per virtual thread an INP tile of the input rows the tile reads (at most ``tile_h + 2P``,
  none past the image: each pass covers only the output rows whose input row is in the image,
  the centre row's pass first, with init) of ``tile_w + lead`` columns (the pad columns from
  the load's x padding), and an ACC tile of ``tile_h x tile_w`` rows (the store's contiguous
  block; whole planes of ``tile_c`` blocks one after the other), above the bias rows; the
  GEMM's micro-op writes ``dst = acc_base - lead + i*tile_w + j`` (the warm-up positions
  write nothing).

A 3x3 kernel has a second mapping (``WindowTiles.rows = R``, 5 <= R, ``2R + 3 <= block_in``):
one GEMM of R micro-ops, one per input row of a group of ``R - 2`` output rows, so a pass
interleaves R rows column by column (position ``R*j + k`` is row ``k`` of the group, column
``j``). At ``k >= 2`` the last ``2R + 3`` positions hold the 3x3 patch of output row ``k - 2``,
column ``j - 1``: taps ``m*R + d`` are input row ``k - d``, column ``j - m``, so one weight row
(:func:`..packing.pack_window_weight` with ``rows=R``) holds all nine taps, and the GEMM does
the whole kernel from the bias (init) in one instruction: ``9 * (R-2)/R`` taps a cycle instead
of 3. The iterations at ``k = 0, 1`` write rows that ``k = 3, 4`` then overwrite (init reads
only the bias, so nothing of theirs stays); the warm-up is ``R`` (column ``j = 0``). The tile
loads its input with a zero row above and below at the image's edges (y padding; a tile of
several whole planes: above the first and below the last, its other blocks' groups at a
plane's edge reading the top zero row instead), the outer loop steps a group (``R-2`` rows),
and where the tile's rows are not whole groups a GEMM recomputes its last ``R-2`` rows.
Tiles are whole-width, at least ``R-2`` rows each (R is the layer's: its weight rows are
laid out for it).

Tiles go round the threads in order (channel blocks, batch, rows, columns); the task list
(loads, CFGs, GEMMs, the store) gets its dependency tokens from :func:`.sync.plan_tokens` as
any other, which is what lets a thread's loads run under the other thread's GEMMs.
:func:`window_function` builds the :class:`.module.VDLAFunction`, arguments
``(data, window weight[, bias], out)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ....config import Config
from ....isa import Mem, Stage
from ....runtime import CommandStream, Loop, StreamError, UopKernel
from ... import fingerprint
from .codegen import write_program
from .env import VDLAError
from .module import ArgLayout, VDLAFunction
from .sync import Task, check_tokens

__all__ = ["WindowConv", "WindowTiles", "window_fits", "window_tasks", "window_function"]


@dataclass(frozen=True)
class WindowConv:
    """The layer: packed data ``(nb, cb, h, w, batch, block)``, a ``k x k`` kernel, stride 1,
    padding ``(k-1)/2``; the tail ``clip((acc [+ bias]) >> shift, lo, hi)`` narrowed to int8."""

    nb: int
    cb: int
    h: int
    w: int
    k: int
    bias: bool = False
    shift: int = 0
    clip: tuple[int, int] = (-128, 127)

    @property
    def pad(self) -> int:
        return (self.k - 1) // 2


@dataclass(frozen=True)
class WindowTiles:
    """Output tiles of ``tile_h`` rows by ``tile_w`` columns of ``tile_c`` channel blocks (more
    than one only for whole planes: then the tile's input, output and weights are each one
    contiguous DMA), round ``nthread`` buffer copies."""

    tile_h: int
    tile_w: int
    nthread: int = 2
    tile_c: int = 1
    rows: int = 0  # 3x3 only: input rows interleaved per GEMM pass (the module doc); 0: a pass per kernel row
    wgroup: int = 4  # channel blocks per weight load (at least, a whole number of tiles' blocks)

    def replace(self, **kw: Any) -> WindowTiles:
        return replace(self, **kw)

    def weight_blocks(self) -> int:
        """Channel blocks per weight load: ``wgroup`` rounded up to whole tiles."""
        return -(-self.wgroup // self.tile_c) * self.tile_c

    def lead(self, conv: WindowConv) -> int:
        """Where output column ``x0`` sits in the tile's input rows (the warm-up of a pass per kernel row)."""
        return conv.pad if self.tile_w >= conv.w else 2 * conv.pad

    def row_len(self, conv: WindowConv) -> int:
        return self.tile_w + self.lead(conv)

    def in_rows(self, conv: WindowConv) -> int:
        """Input rows of one channel block of a tile (at most; with ``rows``, the zero rows too)."""
        return self.tile_h + 2 if self.rows else min(conv.h, self.tile_h + 2 * conv.pad)

    def wgt_rows(self, conv: WindowConv) -> int:
        """WGT rows of one channel block."""
        return 1 if self.rows else conv.k


def _footprint(conv: WindowConv, tiles: WindowTiles) -> tuple[int, int, int, int]:
    """(INP rows per thread, ACC rows per thread, ACC rows below the tiles, WGT rows)."""
    inp = tiles.tile_c * tiles.in_rows(conv) * tiles.row_len(conv)
    wgt = 2 * tiles.weight_blocks() * tiles.wgt_rows(conv)
    return inp, tiles.tile_c * tiles.tile_h * tiles.tile_w, max(wgt + conv.cb, tiles.lead(conv)), wgt


def window_fits(conv: WindowConv, tiles: WindowTiles, config: Config) -> str:
    """Why the tiles do not fit ``config``'s buffers (or its loop fields), "" if they do."""
    inp, acc, acc0, wgt = _footprint(conv, tiles)
    nt = tiles.nthread
    if not (1 <= tiles.tile_h <= conv.h and 1 <= tiles.tile_w <= conv.w and nt >= 1 and 1 <= tiles.tile_c <= conv.cb):
        return f"tiles {tiles} outside the layer {conv}"
    if tiles.tile_c > 1 and (tiles.tile_h, tiles.tile_w) != (conv.h, conv.w):
        return "tiles of several channel blocks must be whole planes"
    last = conv.h % tiles.tile_h or tiles.tile_h
    if tiles.rows and (conv.k != 3 or tiles.tile_w != conv.w or last < tiles.rows - 2
                       or not 5 <= tiles.rows <= (config.block_in - 3) // 2):
        return f"rows={tiles.rows}: interleaved rows need a 3x3 kernel, whole-width tiles of at least rows - 2 rows " \
               f"and 5 <= rows <= {(config.block_in - 3) // 2}"
    if nt * inp > config.inp_depth:
        return f"INP: {nt} x {inp} rows > {config.inp_depth}"
    if acc0 + nt * acc > config.acc_depth:
        return f"ACC: {acc0} + {nt} x {acc} rows > {config.acc_depth}"
    if wgt > config.wgt_depth:
        return f"WGT: {wgt} rows > {config.wgt_depth}"
    if max(tiles.row_len(conv), tiles.tile_h) >= 1 << config.loop_iter_width:
        return "a loop longer than the GEMM's loop fields"
    return ""


def _passes(k: int, p: int, y0: int, th: int, h: int) -> list[tuple[int, int, int]]:
    """The GEMMs of a tile's channel block, in order: (ky, first output row, rows) for each
    kernel row that meets the image; the centre row first (every output row reads it: that
    pass starts from the bias), the others skip the output rows whose input row is padding."""
    out = []
    for ky in [p, *(ky for ky in range(k) if ky != p)]:
        lo, hi = max(0, p - ky - y0), min(th, h - y0 - ky + p)
        if hi > lo:
            out.append((ky, lo, hi - lo))
    return out


def _named(emit: Callable[[CommandStream], None]) -> Callable[[CommandStream], None]:
    """A task's emit whose stream error names the layer kind (a VDLAError, as the templates')."""
    def run(s: CommandStream) -> None:
        try:
            emit(s)
        except StreamError as e:
            raise VDLAError(f"window depthwise conv: {e}") from None

    return run


def window_tasks(conv: WindowConv, tiles: WindowTiles, config: Config) -> tuple[list[Task], list[Any]]:
    """The layer's tasks in program order, and the list their emits append relocations to
    (instruction index, argument, memory type). Arguments: 0 data, 1 weight, [2 bias,] out."""
    why = window_fits(conv, tiles, config)
    if why:
        raise VDLAError(f"window depthwise conv {conv}: {why}")
    relocs: list[tuple[int, int, Mem]] = []
    k, p, w, h = conv.k, conv.pad, conv.w, conv.h
    lead = tiles.lead(conv)
    inp_sz, acc_sz, acc0, wgt_rows = _footprint(conv, tiles)
    out_arg = 3 if conv.bias else 2
    tasks: list[Task] = []

    def dma(stage: Stage, mem: Mem, sram: int, arg: int, offset: int, xn: int, yn: int, xs: int,
            xpad: tuple[int, int] = (0, 0), ypad: tuple[int, int] = (0, 0), **kw: Any) -> None:
        def emit(s: CommandStream) -> None:
            if mem == Mem.OUT:
                s.store_2d(sram, 0, x_size=xn, y_size=yn, x_stride=xs, offset=offset)
            else:
                s.load_2d(mem, sram, 0, x_size=xn, y_size=yn, x_stride=xs, offset=offset, x_pad=xpad, y_pad=ypad)
            relocs.append((len(s.insns) - 1, arg, mem))

        label = "store" if mem == Mem.OUT else f"load {mem.name}"
        tasks.append(Task(stage, _named(emit), label=label, **kw))

    def gemm(kernel: UopKernel, reset: bool, init: bool, **kw: Any) -> None:
        def emit(s: CommandStream) -> None:
            s.gemm(kernel, reset=reset, init=init)

        tasks.append(Task(Stage.COMPUTE, _named(emit), label="gemm reset" if reset else "gemm", **kw))

    state: list[tuple[int, int]] = []

    def cfg(init_base: int, warmup: int = lead) -> None:
        """A CFG for the GEMMs after it, unless the last one set the same."""
        if state[-1:] == [(init_base, warmup)]:
            return
        state.append((init_base, warmup))

        def emit(s: CommandStream) -> None:
            s.cfg(init_base=init_base, shift=conv.shift, clip_lo=conv.clip[0], clip_hi=conv.clip[1],
                  epilogue=True, window=True, warmup=warmup)

        tasks.append(Task(Stage.COMPUTE, _named(emit), label="cfg"))

    # the init rows: the bias of block cb at ACC row B + cb (B: the WGT rows, above every WGT index), or zeros
    b0 = wgt_rows
    init = ("ACC", b0, b0 + conv.cb)
    if conv.bias:
        dma(Stage.COMPUTE, Mem.ACC, b0, 2, 0, conv.cb, 1, conv.cb, writes=[init])
    else:
        zero = UopKernel(((b0, 0, 0),), (Loop(conv.cb, 1, 0, 0),), "window_zero")
        gemm(zero, True, False, writes=[init, ("OUT", b0, b0 + conv.cb)])

    kernels: dict[tuple[Any, ...], UopKernel] = {}

    def kernel(uops: tuple[tuple[int, int, int], ...], outer: tuple[int, int, int], rl: int) -> UopKernel:
        """``uops`` over ``outer`` (extent, dst step, src step) then ``rl`` positions of a row."""
        key = (uops, outer, rl)
        if key not in kernels:
            kernels[key] = UopKernel(uops, (Loop(*outer, 0), Loop(rl, 1, 1, 0)), "window_dw")
        return kernels[key]

    def interleaved(ib: int, ab: int, nc: int, th: int, tw: int, rl: int, slot: int, cb0: int, vt: int) -> None:
        """A tile's channel blocks as GEMMs of R interleaved rows (``tiles.rows``): groups of
        ``g = R - 2`` output rows, the last group moved up to end at the tile's last row (its
        rows above recomputed, to the same values: init starts each from the bias). Input row
        ``y`` of block ``c`` is INP row ``1 + c*th + y``, under a zero row (``ib``) and over
        another: a group reading the row above or below a block of a whole-plane tile of
        several blocks reads the zero row there instead (its own GEMM); the groups between
        are one GEMM, its outer loop stepping a group. Micro-ops 0 and 1 write the rows that
        3 and 4 then overwrite (the kernel rule: no row written twice within two micro-ops)."""
        r = tiles.rows
        g = r - 2
        starts = [*range(0, th - g + 1, g), *([th - g] if th % g else [])]
        for c in range(nc):
            wi = slot + c
            init_base = b0 + cb0 + c - wi
            cfg(init_base, r)

            def src(y: int, c: int = c) -> int:
                linear = 0 <= y < th or (y == -1 and c == 0) or (y == th and c == nc - 1)
                return ib + (1 + c * th + y) * rl if linear else ib

            runs: list[list[int]] = []  # [first row, groups], linear runs one GEMM each
            for s0 in starts:
                lin = all(src(s0 - 1 + k) == src(0) + (s0 - 1 + k) * rl for k in range(r))
                if lin and runs and runs[-1][2] and s0 == runs[-1][0] + runs[-1][1] * g:
                    runs[-1][1] += 1
                else:
                    runs.append([s0, 1, lin])
            for s0, n, _ in runs:
                dst = ab + (c * th + s0) * tw
                uops = tuple((dst + (k - 2 if k >= 2 else k + 1) * tw - 1, src(s0 - 1 + k), wi) for k in range(r))
                srcs = [u[1] for u in uops]
                reads = [("INP", min(srcs), max(srcs) + (n - 1) * g * rl + rl), ("WGT", wi, wi + 1),
                         ("ACC", init_base + wi, init_base + wi + 1)]
                d1 = dst + n * g * tw
                gemm(kernel(uops, (n, g * tw, g * rl), rl), False, True, reads=reads,
                     writes=[("ACC", dst, d1), ("OUT", dst, d1)], vt=vt)

    plane = h * w  # INP / OUT elements of one (batch block, channel block) plane
    t = 0
    kw = tiles.wgt_rows(conv)
    wgb = tiles.weight_blocks()
    for cb0 in range(0, conv.cb, tiles.tile_c):
        nc = min(tiles.tile_c, conv.cb - cb0)
        w0, wslot = cb0 // wgb * wgb, (cb0 // wgb % 2) * wgb * kw  # the weight group's first block, its slot
        if cb0 == w0:
            nw = min(wgb, conv.cb - w0)
            dma(Stage.LOAD, Mem.WGT, wslot, 1, w0 * kw, nw * kw, 1, nw * kw, writes=[("WGT", wslot, wslot + nw * kw)])
        slot = wslot + (cb0 - w0) * kw  # block cb0's first weight row
        for n in range(conv.nb):
            base = (n * conv.cb + cb0) * plane
            for y0 in range(0, h, tiles.tile_h):
                th = min(tiles.tile_h, h - y0)
                ya, yb = max(0, y0 - p), min(h, y0 + th + p)  # the input rows the tile reads
                for x0 in range(0, w, tiles.tile_w):
                    tw = min(tiles.tile_w, w - x0)
                    vt = t % tiles.nthread
                    ib, ab = vt * inp_sz, acc0 + vt * acc_sz
                    # columns x0-lead+P .. x0+tw+P-1 of each input row (zeros outside the image)
                    c0 = x0 - lead + p
                    xpad = (max(0, -c0), max(0, x0 + tw + p - w))
                    rl = tw + lead
                    # interleaved rows: a zero row above and below the tile at the image's edges
                    ypad = (ya - (y0 - 1), y0 + th + 1 - yb) if tiles.rows else (0, 0)
                    rows_in = nc * (yb - ya) + sum(ypad)
                    dma(Stage.LOAD, Mem.INP, ib, 0, base + ya * w + max(0, c0), rl - xpad[0] - xpad[1],
                        nc * (yb - ya), w, xpad, ypad, writes=[("INP", ib, ib + rows_in * rl)], thread=vt, vt=vt)
                    out = ("ACC", ab, ab + nc * th * tw), ("OUT", ab, ab + nc * th * tw)
                    if tiles.rows:
                        interleaved(ib, ab, nc, th, tw, rl, slot, cb0, vt)
                    for c in range(nc if not tiles.rows else 0):
                        cfg(b0 + cb0 + c - (slot + c * k + p))  # the init GEMM's WGT index is slot + c*K + P
                        src, dst = ib + c * (yb - ya) * rl, ab + c * th * tw
                        for ky, i0, rows in _passes(k, p, y0, th, h):
                            s0, d0, wi = src + (y0 + i0 + ky - p - ya) * rl, dst + i0 * tw, slot + c * k + ky
                            reads = [("INP", s0, s0 + rows * rl), ("WGT", wi, wi + 1)]
                            if ky == p:
                                reads.append(("ACC", b0 + cb0 + c, b0 + cb0 + c + 1))
                            wr = [("ACC", d0, d0 + rows * tw), ("OUT", d0, d0 + rows * tw)]
                            gemm(kernel(((d0 - lead, s0, wi),), (rows, tw, rl), rl), False, ky == p, reads=reads,
                                 writes=wr, vt=vt)
                    dma(Stage.STORE, Mem.OUT, ab, out_arg, base + y0 * w + x0, tw, nc * th, w, reads=[out[1]],
                        thread=vt, vt=vt)
                    t += 1
    return tasks, relocs


def window_function(conv: WindowConv, tiles: WindowTiles, config: Config, name: str,
                    batch: int, block: int) -> VDLAFunction:
    """The built function of the layer: arguments ``data (nb, cb, h, w, batch, block)`` int8, the
    window weight ``(cb, k or 1 (rows), block, block_in)`` int8, [``bias (cb, batch, block)`` int32,] ``out``
    int8 in the data's shape."""
    t0 = time.perf_counter()
    tasks, relocs = window_tasks(conv, tiles, config)
    prog, plan = write_program(tasks, config, name)
    shape = (conv.nb, conv.cb, conv.h, conv.w, batch, block)
    args = [ArgLayout("data", shape, "int8", False),
            ArgLayout("weight", (conv.cb, tiles.wgt_rows(conv), block, config.block_in), "int8", False)]
    if conv.bias:
        args.append(ArgLayout("bias", (conv.cb, batch, block), "int32", False))
    args.append(ArgLayout(f"{name}_out", shape, "int8", True))
    info = {"codegen_s": time.perf_counter() - t0, "tasks": len(tasks), "weight_layout": "window",
            "window_rows": tiles.rows, "tiles": f"{tiles.tile_h}x{tiles.tile_w}x{tiles.nthread}x{tiles.tile_c}",
            **{f"tokens_{q}": n for q, n in plan.counts.items()}}
    f = VDLAFunction(name, prog, args, relocs, None, info)
    fingerprint.record("vdla", name, prog.to_bytes() + repr((relocs, args)).encode())
    rep = check_tokens(prog)
    if not rep.ok:  # pragma: no cover - plan_tokens is balanced by construction
        raise VDLAError(f"internal error: unbalanced dependency tokens\n{rep}")
    return f
