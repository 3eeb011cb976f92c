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

from .... import te
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
    ``tiles``: the knobs (default: :func:`tiles_for` the convolution)."""
    outs = as_list(outs)
    return _schedule_direct(outs, tiles or tiles_for(find_tagged(outs, "conv2d_nchw").output(0)), "conv2d_nchw")


def schedule_conv2d_transpose_nchw(outs: te.Tensor | Sequence[te.Tensor],
                                   tiles: Conv2dTiles = Conv2dTiles()) -> Schedule:  # fmt: skip
    """Transposed convolution as topi declares it (a direct convolution of the stride-dilated,
    padded input with the flipped kernel): the same tiling, the dilation inlined into the
    shared-memory copy."""
    return _schedule_direct(as_list(outs), tiles, "conv2d_transpose_nchw")


def _schedule_direct(outs: list[te.Tensor], tiles: Conv2dTiles, tag: str) -> Schedule:
    out = outs[0]
    conv = find_tagged(outs, tag).output(0)
    s = te.create_schedule([t.op for t in outs])
    traverse_inline(s, outs, lambda op: None)
    dp, kernel = _data_and_kernel(conv)
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
    fz, fi = so.split(fi, nparts=tz_n)
    yo, yi = so.split(y, factor=ty_n)
    xo, xi = so.split(x, factor=xt)
    xi, xr = so.split(xi, factor=rx_n)
    so.reorder(n, fo, yo, xo, fz, yi, xi, fi, xr)
    so.bind(so.fuse(n, fo), te.thread_axis("blockIdx.z"))
    so.bind(yo, te.thread_axis("blockIdx.y"))
    so.bind(xo, te.thread_axis("blockIdx.x"))
    so.bind(fz, tza)
    so.bind(yi, tya)
    so.bind(xi, txa)
    s[CL].compute_at(so, xi)
    _, cf, _, cx = s[CL].op.axis
    rc, ry, rx = s[CL].op.reduce_axis
    rco, rci = s[CL].split(rc, factor=bk)
    s[CL].reorder(rco, rci, ry, rx, cf, cx)
    s[CL].unroll(cf)
    s[CL].unroll(cx)
    for t in (dp, kernel):
        cache = s.cache_read(t, "shared", [CL])
        s[cache].compute_at(s[CL], rco)
        cooperative_fetch(s, cache, [(tza, tz_n), (tya, ty_n), (txa, tx_n)])
    return s


def schedule_group_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor], tiles: Conv2dTiles = Conv2dTiles()) -> Schedule:
    """Grouped convolution (:func:`~vdla.compiler.topi.group_conv2d_nchw`, ResNeXt's and RegNet's):
    the direct tiling with a block's output channels inside one group (a divisor of the group's
    channels) or whole groups, so its shared-memory copy holds only the input channels they read."""
    return _schedule_direct(as_list(outs), tiles, "group_conv2d_nchw")


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


def schedule_depthwise_conv2d_nchw(outs: te.Tensor | Sequence[te.Tensor], num_thread: int = 256) -> Schedule:
    """One thread per output pixel and channel; padding and injective consumers inlined."""
    return schedule_reduce(outs, num_thread)
