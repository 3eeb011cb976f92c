"""GPU schedules of 2-d convolution (NCHW, TVM's conv2d_direct shape) and depthwise convolution.

conv2d: a block computes ``bf`` output channels of a ``ty`` x ``tx * rx`` patch of output
pixels with ``tz`` x ``ty`` x ``tx`` threads: ``tz`` groups of channels, each thread holding
``bf / tz`` channels x ``rx`` pixels of accumulators in registers. The input
channels are walked in steps of ``bk``: per step the block copies the padded input window
(``bk`` channels x the patch's receptive field) and the ``bf x bk x KH x KW`` weights into
shared memory cooperatively, then accumulates from there. Padding is inlined into that copy
and injective consumers (bias, ReLU) into the output stage. Tiles are clipped to divisors of
the shape (:class:`Conv2dTiles` are the knobs). Transposed convolution (topi's dilated form)
uses the same tiling, and grouped convolution too (a block's channels within one group, or whole
groups); depthwise convolution is one thread per output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .... import te
from ....autotvm.dispatch import current_config, query, schedule_knobs
from ....autotvm.space import ConfigSpace
from ....schedule.primitives import Schedule
from ....topi.util import as_list, const_shape, find_tagged, traverse_inline
from .common import cooperative_fetch, divisor_at_most
from .reduction import schedule_reduce


@dataclass(frozen=True)
class Conv2dTiles:
    """Output channels per block (bf) over tz thread groups, output rows per block (ty threads),
    columns per block (tx threads x rx columns each, in registers), input channels per step (bk).
    Each is clipped to a divisor of the shape."""

    # The defaults: the one tile choice with the best geometric mean over ResNet-18's C2-C12 on an
    # H200 among those swept (benchmarks/sweep_gpu_conv_tiles.py): 0.48 of cuDNN against 0.42 for
    # the previous defaults (bf 16, tz 4, tx 8, bk 8, min_blocks 128) in the same run
    # (docs/tuning/sweep_gpu_conv_tiles_h200.json).
    bf: int = 64
    tz: int = 8
    ty: int = 8
    tx: int = 4
    rx: int = 2
    bk: int = 4
    min_blocks: int = 256  # halve bf (down to tz) until the grid has this many blocks (a GPU has ~130 SMs)


#: Tiles per workload (kernel shape OC, IC, KH, KW and output size OH, OW) where another choice
#: beat the defaults: the best of 42 per ResNet-18 layer in benchmarks/sweep_gpu_conv_tiles.py
#: on an H200 (docs/tuning/sweep_gpu_conv_tiles_h200.json; TVM keeps such choices in a log).
TUNED_TILES: dict[tuple[int, ...], Conv2dTiles] = {
    (64, 64, 3, 3, 56, 56): Conv2dTiles(bf=16, tz=4, ty=8, tx=8, rx=2, bk=8, min_blocks=128),  # C2: 0.49 -> 0.53
    (64, 64, 1, 1, 56, 56): Conv2dTiles(bf=32, tz=2, ty=4, tx=4, rx=4, bk=16, min_blocks=32),  # C3: 0.35 -> 0.37
    (128, 64, 3, 3, 28, 28): Conv2dTiles(bf=16, tz=8, ty=8, tx=4, rx=1, bk=8, min_blocks=128),  # C4: 0.30 -> 0.52
    (128, 64, 1, 1, 28, 28): Conv2dTiles(bf=64, tz=8, ty=2, tx=8, rx=4, bk=32, min_blocks=256),  # C5: 0.40 -> 0.41
    (128, 128, 3, 3, 28, 28): Conv2dTiles(bf=16, tz=4, ty=8, tx=8, rx=2, bk=8, min_blocks=128),  # C6: 0.57 -> 0.64
    (256, 128, 1, 1, 14, 14): Conv2dTiles(bf=16, tz=4, ty=4, tx=8, rx=2, bk=4, min_blocks=32),  # C8: 0.38 -> 0.41
    (512, 256, 1, 1, 7, 7): Conv2dTiles(bf=16, tz=8, ty=8, tx=4, rx=1, bk=8, min_blocks=128),  # C11: 0.38 -> 0.52
    (512, 512, 3, 3, 7, 7): Conv2dTiles(bf=64, tz=4, ty=8, tx=16, rx=2, bk=8, min_blocks=128),  # C12: 0.81 -> 0.94
}


def tiles_for(conv: te.Tensor) -> Conv2dTiles:
    """The tiles for `conv` (a conv2d_nchw output): its TUNED_TILES entry, else the defaults."""
    _, _, oh, ow = const_shape(conv)
    return TUNED_TILES.get((*const_shape(_data_and_kernel(conv)[1]), oh, ow), Conv2dTiles())


def _data_and_kernel(conv: te.Tensor) -> tuple[te.Tensor, te.Tensor]:
    """The convolution's (padded) input and its kernel."""
    dp, kernel = conv.op.input_tensors()[:2]
    return (kernel, dp) if kernel.op.tag and "pad" in kernel.op.tag else (dp, kernel)


def schedule_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor], tiles: Conv2dTiles | None = None) -> Schedule:
    """Shared-memory tiled direct convolution; ``outs`` may be the conv or a fused consumer (bias, relu).
    ``tiles``: the knobs (default: the autotvm template's point, a tuned record of the workload
    under ``apply_history_best``, else :func:`tiles_for` the convolution)."""
    outs = as_list(outs)
    conv = find_tagged(outs, "conv2d_nchw").output(0)
    return _schedule_direct(outs, _point(outs, conv, tiles, "conv2d_nchw.cuda"), "conv2d_nchw")


def schedule_conv2d_transpose_nchw(outs: te.Tensor | Sequence[te.Tensor],
                                   tiles: Conv2dTiles = Conv2dTiles()) -> Schedule:  # fmt: skip
    """Transposed convolution as topi declares it (a direct convolution of the stride-dilated,
    padded input with the flipped kernel): the same tiling, the dilation inlined into the
    shared-memory copy."""
    outs = as_list(outs)
    conv = find_tagged(outs, "conv2d_transpose_nchw").output(0)
    return _schedule_direct(outs, _resolve(outs[0], conv, tiles), "conv2d_transpose_nchw")


@dataclass(frozen=True)
class DirectPoint:
    """The resolved tiling of one direct convolution (every factor divides its axis): TVM's
    ``conv2d_direct`` splits ``tile_f = [blocks, vf, tz, fi]``, ``tile_y = [blocks, vy, ty, yi]``,
    ``tile_x = [blocks, vx, tx, rx]``, ``tile_rc = [steps, bk]``, ``tile_ry / tile_rx = [outer, inner]``
    (the kernel rows / columns copied per step), and the unrolling of the accumulation loops:
    ``unroll_step`` (TVM's ``auto_unroll_max_step``: the innermost reduction loops are unrolled
    while the unrolled body stays within that many copies), made explicit in the loop IR when
    ``unroll_explicit`` (else left to LLVM's loop unroller, as TVM leaves it to nvcc)."""

    bf: int  # output channels per block = vf * tz * fi
    tz: int
    ty: int
    tx: int
    rx: int
    bk: int
    vf: int = 1
    vy: int = 1
    vx: int = 1
    yi: int = 1
    ry_in: int = 0  # kernel rows per step (0: all)
    rx_in: int = 0  # kernel columns per step (0: all)
    unroll_step: int = 0
    unroll_explicit: bool = True

    @classmethod
    def from_config(cls, cfg: Any) -> DirectPoint:
        """The point of a config of the ``conv2d_nchw.cuda`` / ``group_conv2d_nchw.cuda`` template."""
        _, vf, tz, fi = cfg["tile_f"].size
        _, vy, ty, yi = cfg["tile_y"].size
        _, vx, tx, rx = cfg["tile_x"].size
        return cls(bf=vf * tz * fi, tz=tz, ty=ty, tx=tx, rx=rx, bk=cfg["tile_rc"].size[1], vf=vf, vy=vy, vx=vx, yi=yi,
                   ry_in=cfg["tile_ry"].size[1], rx_in=cfg["tile_rx"].size[1],
                   unroll_step=int(cfg["auto_unroll_max_step"].val), unroll_explicit=bool(cfg["unroll_explicit"].val))

    def knobs(self, oc: int, oh: int, ow: int, c: int, kh: int, kw: int) -> dict[str, Any]:
        """The knob values of this point in the template's space."""
        return {"tile_f": [oc // self.bf, self.vf, self.tz, self.bf // (self.vf * self.tz)],
                "tile_y": [oh // (self.vy * self.ty * self.yi), self.vy, self.ty, self.yi],
                "tile_x": [ow // (self.vx * self.tx * self.rx), self.vx, self.tx, self.rx],
                "tile_rc": [c // self.bk, self.bk], "tile_ry": [kh // (self.ry_in or kh), self.ry_in or kh],
                "tile_rx": [kw // (self.rx_in or kw), self.rx_in or kw],
                "auto_unroll_max_step": self.unroll_step, "unroll_explicit": int(self.unroll_explicit)}


#: the most accumulators a thread's register tile may hold (the hand tiles hold at most 32)
MAX_ACCUMULATORS = 128
#: the most virtual threads along one axis
MAX_VTHREAD = 4

#: TVM's conv2d_direct choices of ``auto_unroll_max_step`` (0: only the register tile unrolled, as by hand)
UNROLL_STEPS = (0, 512, 1500)


def _resolve(out: te.Tensor, conv: te.Tensor, tiles: Conv2dTiles) -> DirectPoint:
    """The hand tiles clipped to the shape (divisors; fewer channels per block for a small grid)."""
    _, oc, oh, ow = const_shape(out)
    c = int(conv.op.reduce_axis[0].dom.extent.value)  # input channels summed (a group's, grouped)
    groups = int(conv.op.attrs.get("groups", 1))
    og = oc // groups  # output channels per group
    bf, ty_n = divisor_at_most(oc, tiles.bf), divisor_at_most(oh, tiles.ty)
    xt = divisor_at_most(ow, tiles.tx * tiles.rx)  # columns per block
    rx_n = divisor_at_most(xt, tiles.rx)
    tx_n = xt // rx_n
    nb = const_shape(out)[0]

    def blocks(b: int) -> int:
        return nb * (oc // b) * (oh // ty_n) * (ow // xt)

    if groups > 1:
        bf = _group_tile(og, groups, c, tiles, blocks)
    while groups == 1 and bf % 2 == 0 and bf > tiles.tz and blocks(bf) < tiles.min_blocks:
        bf //= 2
    # whole groups per block: each step copies all their input channels (the tile has no gaps)
    bk = c if groups > 1 and bf > og else divisor_at_most(c, tiles.bk)
    tz_n = divisor_at_most(bf, tiles.tz)
    return DirectPoint(bf=bf, tz=tz_n, ty=ty_n, tx=tx_n, rx=rx_n, bk=bk)


def _point(outs: list[te.Tensor], conv: te.Tensor, tiles: Conv2dTiles | None, name: str,
           default: Conv2dTiles | None = None) -> DirectPoint:
    """The point a direct convolution is scheduled with: inside the autotvm template ``name``, its
    config (the space's knobs defined on it here; the hand tiles are its fallback); outside one,
    the ``tiles`` given, else the tuned record of the workload, else the hand tiles (``default``,
    or :func:`tiles_for` the convolution)."""
    workload = [name, conv.op.attrs["workload"][1]]
    hand = _resolve(outs[0], conv, tiles or default or tiles_for(conv))
    cfg = current_config()
    if cfg is None:
        if tiles is None:
            tuned = query("cuda", workload)
            if tuned is not None:
                return DirectPoint.from_config(tuned)
        return hand
    define_direct_space(cfg, outs[0], conv)
    cfg.workload = workload
    if cfg.is_fallback:
        for k, v in hand.knobs(*_dims(outs[0], conv)).items():
            cfg.set(k, v)
        return hand
    if isinstance(cfg, ConfigSpace):
        return hand
    return DirectPoint.from_config(cfg)


def _dims(out: te.Tensor, conv: te.Tensor) -> tuple[int, int, int, int, int, int]:
    """(output channels, rows, columns, input channels summed, kernel rows, kernel columns)."""
    _, kernel = _data_and_kernel(conv)
    _, oc, oh, ow = const_shape(out)
    _, _, kh, kw = const_shape(kernel)
    return oc, oh, ow, int(conv.op.reduce_axis[0].dom.extent.value), kh, kw


def define_direct_space(cfg: Any, out: te.Tensor, conv: te.Tensor) -> None:
    """The knobs of TVM's ``conv2d_direct`` template on ``cfg`` (a grouped convolution's channel
    tiles lie inside one group or cover whole groups)."""
    oc, oh, ow, c, kh, kw = _dims(out, conv)
    groups = int(conv.op.attrs.get("groups", 1))
    og = oc // groups

    def block_ok(e: Any) -> bool:
        bf = oc // e.size[0]
        return groups == 1 or og % bf == 0 or (bf % og == 0 and groups % (bf // og) == 0)

    def tile_ok(e: Any) -> bool:  # a few virtual threads; a register tile within MAX_ACCUMULATORS
        return e.size[1] <= MAX_VTHREAD and e.size[1] * e.size[3] <= MAX_ACCUMULATORS

    cfg.define_split("tile_f", oc, num_outputs=4, filter=lambda e: block_ok(e) and tile_ok(e))
    cfg.define_split("tile_y", oh, num_outputs=4, filter=tile_ok)
    cfg.define_split("tile_x", ow, num_outputs=4, filter=tile_ok)
    cfg.define_split("tile_rc", c, num_outputs=2)
    cfg.define_split("tile_ry", kh, num_outputs=2)
    cfg.define_split("tile_rx", kw, num_outputs=2)
    cfg.define_knob("auto_unroll_max_step", list(UNROLL_STEPS))
    cfg.define_knob("unroll_explicit", [0, 1])


def _unroll_auto(stage: Any, loops: list[tuple[Any, int]], unrolled: int, p: DirectPoint) -> None:
    """TVM's ``auto_unroll_max_step``: unroll ``loops`` (innermost first) while the unrolled body
    (``unrolled`` copies already: the register tile) stays within ``p.unroll_step`` copies."""
    if not p.unroll_explicit:
        return  # left to LLVM's loop unroller (TVM leaves it to nvcc with `#pragma unroll`)
    for ax, ext in loops:
        if ext <= 1 or unrolled * ext > p.unroll_step:
            break
        stage.unroll(ax)
        unrolled *= ext


def _schedule_direct(outs: list[te.Tensor], p: DirectPoint, tag: str) -> Schedule:
    out = outs[0]
    conv = find_tagged(outs, tag).output(0)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    dp, kernel = _data_and_kernel(conv)
    _, oc, oh, ow = const_shape(out)
    _, _, kh, kw = const_shape(kernel)
    c = int(conv.op.reduce_axis[0].dom.extent.value)  # input channels summed (a group's, grouped)
    groups = int(conv.op.attrs.get("groups", 1))
    og = oc // groups  # output channels per group
    bf, tz_n, ty_n, rx_n, bk = p.bf, p.tz, p.ty, p.rx, p.bk
    fi_n = bf // (p.vf * tz_n)
    xt = p.vx * p.tx * rx_n  # columns per block
    yt = p.vy * ty_n * p.yi  # rows per block
    ry_in, rx_in = p.ry_in or kh, p.rx_in or kw
    for what, size, t in (("output channels", oc, bf), ("rows", oh, yt), ("columns", ow, xt), ("input channels", c, bk),
                          ("kernel rows", kh, ry_in), ("kernel columns", kw, rx_in)):
        if t < 1 or size % t:  # tiles that divide: no guards, so the barriers are legal
            raise ValueError(f"{tag}: a tile of {t} {what} does not divide {size}")
    acc = bf // tz_n * p.vy * p.yi * p.vx * rx_n
    if acc > MAX_ACCUMULATORS:  # known before any build (a bigger tile spills and builds for minutes)
        raise ValueError(f"{tag}: {acc} accumulators per thread (at most {MAX_ACCUMULATORS} registers' worth)")
    if fi_n * p.vf * tz_n != bf:
        raise ValueError(f"{tag}: {bf} channels per block are not {p.vf} virtual x {tz_n} thread groups x channels")
    if groups > 1 and bf > og and bk != c:
        raise ValueError(f"{tag}: a block of whole groups copies all {c} input channels of each per step, not {bk}")
    if out is conv:
        CL = s.cache_write(conv, "local")
    else:
        CL = conv
        s[conv].set_scope("local")
    tza, tya, txa = te.thread_axis("threadIdx.z"), te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    so = s[out]
    n, f, y, x = so.op.axis
    if groups > 1 and bf < og:
        # a block inside one group: the group is a loop of its own, so bound inference sees that
        # the block's output channels read one group's input channels (f // og is the group index)
        fg, f = so.split(f, factor=og)
        fo, fi = so.split(f, factor=bf)
        fo = so.fuse(fg, fo)
    else:
        fo, fi = so.split(f, factor=bf)
    # virtual threads (TVM's vthread: strided register tiles, fewer shared-memory bank conflicts)
    # and rows per thread are split off only when there are several, so the hand tiles give the
    # same loops (and the same PTX) as before the template existed
    vthreads = []
    if p.vf > 1:
        vf, fi = so.split(fi, nparts=p.vf)
        vthreads.append(vf)
    fz, fi = so.split(fi, nparts=tz_n)
    yo, yi = so.split(y, factor=yt)
    if p.vy > 1:
        vy, yi = so.split(yi, nparts=p.vy)
        vthreads.append(vy)
    rows = []
    if p.yi > 1:
        yi, yr = so.split(yi, nparts=ty_n)
        rows = [yr]
    xo, xi = so.split(x, factor=xt)
    if p.vx > 1:
        vx, xi = so.split(xi, nparts=p.vx)
        vthreads.append(vx)
    xi, xr = so.split(xi, factor=rx_n)
    so.reorder(n, fo, yo, xo, *vthreads, fz, yi, xi, fi, *rows, xr)
    so.bind(so.fuse(n, fo), te.thread_axis("blockIdx.z"))
    so.bind(yo, te.thread_axis("blockIdx.y"))
    so.bind(xo, te.thread_axis("blockIdx.x"))
    for v in vthreads:
        so.bind(v, te.thread_axis("vthread"))
    so.bind(fz, tza)
    so.bind(yi, tya)
    so.bind(xi, txa)
    s[CL].compute_at(so, xi)
    _, cf, cy, cx = s[CL].op.axis
    rc, ry, rx = s[CL].op.reduce_axis
    rco, rci = s[CL].split(rc, factor=bk)
    outer = [rco]
    if ry_in < kh:  # a step copies ry_in kernel rows (the window's rows: fewer input rows in shared memory)
        ryo, ry = s[CL].split(ry, factor=ry_in)
        outer.append(ryo)
    if rx_in < kw:
        rxo, rx = s[CL].split(rx, factor=rx_in)
        outer.append(rxo)
    tile = [cf, cy, cx] if p.yi > 1 else [cf, cx]
    s[CL].reorder(*outer, rci, ry, rx, *tile)
    for ax in tile:
        s[CL].unroll(ax)
    if p.unroll_step:
        _unroll_auto(s[CL], [(rx, rx_in), (ry, ry_in), (rci, bk)], fi_n * p.yi * rx_n, p)
    for t in (dp, kernel):
        cache = s.cache_read(t, "shared", [CL])
        s[cache].compute_at(s[CL], outer[-1])
        cooperative_fetch(s, cache, [(tza, tz_n), (tya, ty_n), (txa, p.tx)])
    return s


def schedule_group_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor], tiles: Conv2dTiles | None = None) -> Schedule:
    """Grouped convolution (:func:`~vdla.compiler.topi.group_conv2d_nchw`, ResNeXt's and RegNet's):
    the direct tiling with a block's output channels inside one group (a divisor of the group's
    channels) or whole groups, so its shared-memory copy holds only the input channels they read.
    ``tiles``: as :func:`schedule_conv2d_nchw` (its template is ``group_conv2d_nchw.cuda``)."""
    outs = as_list(outs)
    conv = find_tagged(outs, "group_conv2d_nchw").output(0)
    return _schedule_direct(outs, _point(outs, conv, tiles, "group_conv2d_nchw.cuda", Conv2dTiles()),
                            "group_conv2d_nchw")


def _group_tile(og: int, groups: int, cg: int, tiles: Conv2dTiles, blocks: Callable[[int], int]) -> int:
    """Output channels per block of a grouped convolution with ``og`` output and ``cg`` input
    channels per group: a divisor of ``og``, or whole groups (at most 64 input channels to copy),
    at most ``tiles.bf``; the largest that gives ``tiles.min_blocks`` blocks, else the smallest
    of at least ``tiles.tz`` channels (or one group, if smaller)."""
    whole = [og * m for m in range(1, groups + 1) if groups % m == 0 and m * cg <= 64]
    cands = sorted({d for d in range(1, og + 1) if og % d == 0} | set(whole))
    cands = [b for b in cands if b <= tiles.bf] or [divisor_at_most(og, tiles.bf)]
    floor = [b for b in cands if b >= min(tiles.tz, og)] or cands[-1:]
    return next((b for b in reversed(floor) if blocks(b) >= tiles.min_blocks), floor[0])


def schedule_depthwise_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor], num_thread: int | None = None) -> Schedule:
    """One thread per output pixel and channel (``tile_x``'s inner factor: adjacent columns per
    thread, sharing the kernel taps in registers); padding and injective consumers inlined.
    The knobs (``depthwise_conv2d_nchw.cuda``): ``num_thread`` per block, ``tile_x``, ``unroll_kw``
    (the window's loops unrolled); the hand pick (256 threads, one column) is :func:`schedule_reduce`'s."""
    outs = as_list(outs)
    conv = find_tagged(outs, "depthwise_conv2d_nchw").output(0)
    ow = const_shape(conv)[3]
    hand = {"num_thread": num_thread or 256, "tile_x": [ow, 1], "unroll_kw": 0}

    def define(cfg: Any) -> None:
        cfg.define_knob("num_thread", list(THREADS))
        cfg.define_split("tile_x", ow, num_outputs=2, filter=lambda e: e.size[1] in (1, 2, 4, 8))
        cfg.define_knob("unroll_kw", [0, 1])

    workload = ["depthwise_conv2d_nchw.cuda", conv.op.attrs["workload"][1]]
    k = hand if num_thread is not None else schedule_knobs("cuda", workload, define, hand)
    xi_n = int(k["tile_x"][1])
    if xi_n == 1 and not k["unroll_kw"]:
        return schedule_reduce(outs, int(k["num_thread"]))
    return _depthwise_tiled(outs, conv, int(k["num_thread"]), xi_n, bool(k["unroll_kw"]))


#: threads per block a flat (one output per thread) GPU schedule may choose
THREADS = (32, 64, 128, 256, 512, 1024)


def _depthwise_tiled(outs: list[te.Tensor], conv: te.Tensor, num_thread: int, xi_n: int, unroll_kw: bool) -> Schedule:
    """``xi_n`` adjacent output columns per thread (their taps' weights loaded once), the window unrolled."""
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    out = outs[0]
    if out is conv:  # (cache_write comes before any loop of the output is scheduled)
        CL = s.cache_write(conv, "local")
    else:
        CL = conv
        s[conv].set_scope("local")
    so = s[out]
    n, f, y, x = so.op.axis
    xo, xi = so.split(x, factor=xi_n)
    fused = so.fuse(n, f, y, xo)
    nb, nf, ny, nx = const_shape(out)
    bx, tx = so.split(fused, factor=min(num_thread, nb * nf * ny * (nx // xi_n)))
    so.bind(bx, te.thread_axis("blockIdx.x"))
    so.bind(tx, te.thread_axis("threadIdx.x"))
    so.unroll(xi)
    s[CL].compute_at(so, tx)
    ry, rx = s[CL].op.reduce_axis
    cx = s[CL].op.axis[3]
    s[CL].reorder(ry, rx, cx)
    s[CL].unroll(cx)
    if unroll_kw:
        s[CL].unroll(ry)
        s[CL].unroll(rx)
    return s
