"""Pooling over NCHW tensors: ``pool2d`` (max/avg windows) and ``global_pool``.

Both also take NCHW[x]c data (rank 5, the channel block last, as :func:`.conv2d.conv2d_NCHWc`
writes it): the window runs over the same ``H, W`` axes and the block is carried along.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import te
from ..tir.nodes import Expr
from .conv2d import conv_out_size
from .util import INJECTIVE, const_shape, pad, padding4, pair

__all__ = ["pool2d", "global_pool"]


def pool2d(
    data: te.Tensor,
    kernel: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    pool_type: str = "max",
    count_include_pad: bool = True,
) -> te.Tensor:
    """Max or average pooling of ``data[N, C, H, W]`` over ``kernel`` windows."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    shape = const_shape(data)
    n, c, h, w = shape[:4]
    blk = tuple(shape[4:])  # NCHW[x]c: the channel block, carried through
    kh, kw = pair(kernel, "kernel")
    sh, sw = pair(stride if stride is not None else (kh, kw), "stride")
    pt, pl, pb, pr = padding4(padding)
    if max(pt, pb) >= kh or max(pl, pr) >= kw:
        raise ValueError("pool2d: padding must be smaller than the window")
    oh = conv_out_size(h, kh, sh, pt, pb)
    ow = conv_out_size(w, kw, sw, pl, pr)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    # the key a tuned schedule of this workload is found by (autotvm's pool2d.x86 args; a max pool
    # ignores count_include_pad, so its workload names it False whatever was passed)
    workload = ["pool2d.x86", [list(shape), [kh, kw], [sh, sw], [pt, pl, pb, pr], pool_type,
                               bool(count_include_pad) and pool_type == "avg"]]
    if pool_type == "max":
        dp = pad(data, [0, 0, pt, pl, *(0 for _ in blk)], [0, 0, pb, pr, *(0 for _ in blk)], value=None,
                 name="pad_max")
        return te.compute(
            (n, c, oh, ow, *blk),
            lambda b, f, y, x, *k: te.max(dp[(b, f, y * sh + ry, x * sw + rx, *k)], axis=[ry, rx]),
            name="max_pool",
            tag="pool_max",
            attrs={"workload": workload},
        )
    dp = pad(data, [0, 0, pt, pl, *(0 for _ in blk)], [0, 0, pb, pr, *(0 for _ in blk)], name="pad_avg")
    total = te.compute(
        (n, c, oh, ow, *blk),
        lambda b, f, y, x, *k: te.sum(dp[(b, f, y * sh + ry, x * sw + rx, *k)], axis=[ry, rx]),
        name="pool_sum",
        tag="pool_sum",
        attrs={"workload": workload},
    )

    def avg(b: Expr, f: Expr, y: Expr, x: Expr, *k: Expr) -> Expr:
        if count_include_pad:
            return total[(b, f, y, x, *k)] / te.const(kh * kw, data.dtype)
        y0, x0 = y * sh - pt, x * sw - pl
        cnt_y = te.min(y0 + kh, h) - te.max(y0, 0)
        cnt_x = te.min(x0 + kw, w) - te.max(x0, 0)
        return total[(b, f, y, x, *k)] / (cnt_y * cnt_x).astype(data.dtype)

    return te.compute((n, c, oh, ow, *blk), avg, name="avg_pool", tag=f"{INJECTIVE},pool_avg")


def global_pool(data: te.Tensor, pool_type: str = "avg") -> te.Tensor:
    """``[N, C, H, W]`` → ``[N, C, 1, 1]`` (``[N, C/x, H, W, x]`` → ``[N, C/x, 1, 1, x]``) by max or
    mean over each plane."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"global_pool: pool_type must be 'max' or 'avg', got {pool_type!r}")
    shape = const_shape(data)
    n, c, h, w = shape[:4]
    blk = tuple(shape[4:])
    ry = te.reduce_axis((0, h), name="ry")
    rx = te.reduce_axis((0, w), name="rx")
    red = te.max if pool_type == "max" else te.sum
    r = te.compute(
        (n, c, 1, 1, *blk), lambda b, f, y, x, *k: red(data[(b, f, ry, rx, *k)], axis=[ry, rx]), name="global_red",
        tag="global_pool"
    )
    if pool_type == "max":
        return r
    return te.compute(
        (n, c, 1, 1, *blk),
        lambda b, f, y, x, *k: r[(b, f, y, x, *k)] / te.const(h * w, data.dtype),
        name="global_avg",
        tag=f"{INJECTIVE},global_avg",
    )
