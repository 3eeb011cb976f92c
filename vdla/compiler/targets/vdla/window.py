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

* WGT: a channel block's K window rows (:func:`..packing.pack_window_weight`) at
  ``slot + ky``, the slot ``(cb mod 2) * K``, loaded before the block's first tile (the other
  slot's block still computing): so the micro-ops do not depend on the block, and the few
  kernels (a thread and a kernel row each) load once;
* ACC rows ``[K, K + CB)``: the bias of block ``cb`` at row ``K + cb`` (one LOAD ACC), or
  zeros (one reset GEMM); the first GEMM of a tile has init, from row ``init_base + slot``;
* a CFG per channel block: ``window``, ``warmup = lead``, ``init_base = K + cb - slot``, and the
  epilogue (shift, clip) of the requantisation: every pass writes OUT, the last one the
  result, so no ALU tail is left;
* per virtual thread an INP tile of ``tile_h + 2P`` rows of ``tile_w + lead`` (top/bottom pad
  rows and right pad columns from the load's padding) and an ACC tile of ``tile_h x tile_w``
  rows (the store's contiguous block), above the bias rows; the GEMM's micro-op writes
  ``dst = acc_base - lead + i*tile_w + j`` (the warm-up positions write nothing).

Tiles go round the threads in order (batch, channel block, rows, columns); the task list
(loads, the K GEMMs, the store) gets its dependency tokens from :func:`.sync.plan_tokens` as
any other, which is what lets a thread's loads run under the other thread's GEMMs.
:func:`window_function` builds the :class:`.module.VDLAFunction`, arguments
``(data, window weight[, bias], out)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
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

    def lead(self, conv: WindowConv) -> int:
        """The warm-up of a pass: where output column ``x0`` sits in the tile's input rows."""
        return conv.pad if self.tile_w >= conv.w else 2 * conv.pad

    def row_len(self, conv: WindowConv) -> int:
        return self.tile_w + self.lead(conv)

    def in_rows(self, conv: WindowConv) -> int:
        """Input rows of one channel block of a tile (at most)."""
        return min(conv.h, self.tile_h + 2 * conv.pad)


def _footprint(conv: WindowConv, tiles: WindowTiles) -> tuple[int, int, int, int]:
    """(INP rows per thread, ACC rows per thread, ACC rows below the tiles, WGT rows)."""
    inp = tiles.tile_c * tiles.in_rows(conv) * tiles.row_len(conv)
    wgt = 2 * tiles.tile_c * conv.k
    return inp, tiles.tile_c * tiles.tile_h * tiles.tile_w, max(wgt + conv.cb, tiles.lead(conv)), wgt


def window_fits(conv: WindowConv, tiles: WindowTiles, config: Config) -> str:
    """Why the tiles do not fit ``config``'s buffers (or its loop fields), "" if they do."""
    inp, acc, acc0, wgt = _footprint(conv, tiles)
    nt = tiles.nthread
    if not (1 <= tiles.tile_h <= conv.h and 1 <= tiles.tile_w <= conv.w and nt >= 1 and 1 <= tiles.tile_c <= conv.cb):
        return f"tiles {tiles} outside the layer {conv}"
    if tiles.tile_c > 1 and (tiles.tile_h, tiles.tile_w) != (conv.h, conv.w):
        return "tiles of several channel blocks must be whole planes"
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
            xpad: tuple[int, int] = (0, 0), **kw: Any) -> None:
        def emit(s: CommandStream) -> None:
            try:
                if mem == Mem.OUT:
                    s.store_2d(sram, 0, x_size=xn, y_size=yn, x_stride=xs, offset=offset)
                else:
                    s.load_2d(mem, sram, 0, x_size=xn, y_size=yn, x_stride=xs, offset=offset, x_pad=xpad)
            except StreamError as e:
                raise VDLAError(f"window depthwise conv: {e}") from None
            relocs.append((len(s.insns) - 1, arg, mem))

        label = "store" if mem == Mem.OUT else f"load {mem.name}"
        tasks.append(Task(stage, emit, label=label, **kw))

    def gemm(kernel: UopKernel, reset: bool, init: bool, **kw: Any) -> None:
        def emit(s: CommandStream) -> None:
            try:
                s.gemm(kernel, reset=reset, init=init)
            except StreamError as e:
                raise VDLAError(f"window depthwise conv: {e}") from None

        tasks.append(Task(Stage.COMPUTE, emit, label="gemm reset" if reset else "gemm", **kw))

    def cfg(init_base: int) -> None:
        def emit(s: CommandStream) -> None:
            try:
                s.cfg(init_base=init_base, shift=conv.shift, clip_lo=conv.clip[0], clip_hi=conv.clip[1],
                      epilogue=True, window=True, warmup=lead)
            except StreamError as e:
                raise VDLAError(f"window depthwise conv: {e}") from None

        tasks.append(Task(Stage.COMPUTE, emit, label="cfg"))

    # the init rows: the bias of block cb at ACC row B + cb (B: the WGT rows, above every WGT index), or zeros
    b0 = wgt_rows
    init = ("ACC", b0, b0 + conv.cb)
    if conv.bias:
        dma(Stage.COMPUTE, Mem.ACC, b0, 2, 0, conv.cb, 1, conv.cb, writes=[init])
    else:
        zero = UopKernel(((b0, 0, 0),), (Loop(conv.cb, 1, 0, 0),), "window_zero")
        gemm(zero, True, False, writes=[init, ("OUT", b0, b0 + conv.cb)])

    kernels: dict[tuple[int, ...], UopKernel] = {}

    def kernel(uop: tuple[int, int, int], rows: int, tw: int, rl: int) -> UopKernel:
        key = (*uop, rows, tw, rl)
        if key not in kernels:
            kernels[key] = UopKernel((uop,), (Loop(rows, tw, rl, 0), Loop(rl, 1, 1, 0)), "window_dw")
        return kernels[key]

    plane = h * w  # INP / OUT elements of one (batch block, channel block) plane
    t = 0
    for g, cb0 in enumerate(range(0, conv.cb, tiles.tile_c)):
        nc = min(tiles.tile_c, conv.cb - cb0)
        slot = (g % 2) * tiles.tile_c * k
        dma(Stage.LOAD, Mem.WGT, slot, 1, cb0 * k, nc * k, 1, nc * k, writes=[("WGT", slot, slot + nc * k)])
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
                    dma(Stage.LOAD, Mem.INP, ib, 0, base + ya * w + max(0, c0), rl - xpad[0] - xpad[1],
                        nc * (yb - ya), w, xpad, writes=[("INP", ib, ib + nc * (yb - ya) * rl)], thread=vt, vt=vt)
                    out = ("ACC", ab, ab + nc * th * tw), ("OUT", ab, ab + nc * th * tw)
                    for c in range(nc):
                        cfg(b0 + cb0 + c - (slot + c * k + p))  # the init GEMM's WGT index is slot + c*K + P
                        src, dst = ib + c * (yb - ya) * rl, ab + c * th * tw
                        for ky, i0, rows in _passes(k, p, y0, th, h):
                            s0, d0, wi = src + (y0 + i0 + ky - p - ya) * rl, dst + i0 * tw, slot + c * k + ky
                            reads = [("INP", s0, s0 + rows * rl), ("WGT", wi, wi + 1)]
                            if ky == p:
                                reads.append(("ACC", b0 + cb0 + c, b0 + cb0 + c + 1))
                            wr = [("ACC", d0, d0 + rows * tw), ("OUT", d0, d0 + rows * tw)]
                            gemm(kernel((d0 - lead, s0, wi), rows, tw, rl), False, ky == p, reads=reads, writes=wr,
                                 vt=vt)
                    dma(Stage.STORE, Mem.OUT, ab, out_arg, base + y0 * w + x0, tw, nc * th, w, reads=[out[1]],
                        thread=vt, vt=vt)
                    t += 1
    return tasks, relocs


def window_function(conv: WindowConv, tiles: WindowTiles, config: Config, name: str,
                    batch: int, block: int) -> VDLAFunction:
    """The built function of the layer: arguments ``data (nb, cb, h, w, batch, block)`` int8, the
    window weight ``(cb, k, block, block_in)`` int8, [``bias (cb, batch, block)`` int32,] ``out``
    int8 in the data's shape."""
    t0 = time.perf_counter()
    tasks, relocs = window_tasks(conv, tiles, config)
    prog, plan = write_program(tasks, config, name)
    shape = (conv.nb, conv.cb, conv.h, conv.w, batch, block)
    args = [ArgLayout("data", shape, "int8", False),
            ArgLayout("weight", (conv.cb, conv.k, block, config.block_in), "int8", False)]
    if conv.bias:
        args.append(ArgLayout("bias", (conv.cb, batch, block), "int32", False))
    args.append(ArgLayout(f"{name}_out", shape, "int8", True))
    info = {"codegen_s": time.perf_counter() - t0, "tasks": len(tasks), "weight_layout": "window",
            "tiles": f"{tiles.tile_h}x{tiles.tile_w}x{tiles.nthread}",
            **{f"tokens_{q}": n for q, n in plan.counts.items()}}
    f = VDLAFunction(name, prog, args, relocs, None, info)
    fingerprint.record("vdla", name, prog.to_bytes() + repr((relocs, args)).encode())
    rep = check_tokens(prog)
    if not rep.ok:  # pragma: no cover - plan_tokens is balanced by construction
        raise VDLAError(f"internal error: unbalanced dependency tokens\n{rep}")
    return f
