"""Grouped conv2d on VDLA (MobileNet): ``G`` groups of ``I/G`` input and ``O/G`` output
channels, each a whole number of blocks; weights ``(O/c, (I/G)/c, KH, KW, c_o, c_i)``. The
output is computed as the 7-D tensor ``(N/b, G, (O/G)/c, H', W', b, c)``, byte-for-byte the
packed 6-D output. The group is an outer loop of the schedule; within a group it is
conv2d_packed. Virtual threads over output-channel tiles inside a group, over groups or
over rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .... import te
from ....schedule.primitives import Schedule
from ....topi.util import const_shape, conv_out, pad, pair
from ..env import VDLAError, get_env
from .common import Knobs, Tail, _blocks_match, _check_tail_inputs, _conv_reduce_axes, _epilogue
from .conv2d import _schedule_outer

__all__ = ["group_conv2d_packed", "schedule_group_conv2d_packed"]


def group_conv2d_packed(
    data: te.Tensor,
    kernel: te.Tensor,
    groups: int,
    stride: int | Sequence[int] = 1,
    padding: int = 0,
    tail: Tail | None = None,
    bias: te.Tensor | None = None,
    residual: te.Tensor | None = None,
    config: Any = None,
    name: str = "group_conv2d",
) -> te.Tensor:
    """Packed int8 grouped conv2d; returns the int8 output as ``(N/b, G, (O/G)/c, H', W', b, c)``."""
    env = get_env(config)
    tail = tail or Tail()
    nb, cb, h, w, b, ci = const_shape(data)
    ob, gcb, kh, kw, co, kci = const_shape(kernel)
    c = env.config
    if not _blocks_match(env, b, ci, co, kci):
        raise VDLAError(f"group_conv2d_packed: data {tuple(data.shape)} / kernel {tuple(kernel.shape)} do not match "
                        f"the config's blocks (batch {c.batch}, block_in {c.block_in}, block_out {c.block_out})")
    if cb % groups or ob % groups or gcb * groups != cb:
        raise VDLAError(
            f"group_conv2d_packed: {groups} groups need whole channel blocks per group: input {cb} blocks, output "
            f"{ob} blocks, kernel {gcb} input blocks per group (input channels per group must be a multiple of "
            f"{c.block_in}, output channels per group of {c.block_out})"
        )
    _check_tail_inputs("group_conv2d_packed", tail, bias, residual)
    sh, sw = pair(stride, "stride")
    oh, ow = conv_out(h, kh, sh, padding, padding), conv_out(w, kw, sw, padding, padding)
    ogb = ob // groups
    dp = pad(data, [0, 0, padding, padding, 0, 0], name=f"{name}_pad")
    ric, rky, rkx, rci = _conv_reduce_axes(gcb, kh, kw, ci)
    adt = env.acc_dtype
    acc = te.compute(
        (nb, groups, ogb, oh, ow, b, co),
        lambda n, g, o, y, x, bi, oi: te.sum(
            dp[n, g * gcb + ric, y * sh + rky, x * sw + rkx, bi, rci].astype(adt)
            * kernel[g * ogb + o, ric, rky, rkx, oi, rci].astype(adt),
            axis=[ric, rky, rkx, rci],
        ),
        name=name,
        tag="vdla_group_conv2d",
        attrs={"vdla_geometry": ("group", (sh, sw), groups),
               "workload": ["group_conv2d_packed.vdla", [list(const_shape(data)), list(const_shape(kernel)), groups,
                                                         [sh, sw], padding, bias is not None, residual is not None,
                                                         c.name]]},
    )

    def packed_index(i: tuple[Any, ...]) -> tuple[Any, ...]:
        # the bias and residual are laid out by the packed 6-D output: group g's channel block o is g * ogb + o
        n, g, o, y, x, bi, oi = i
        return (n, g * ogb + o, y, x, bi, oi)

    return _epilogue(env, acc, tail, bias, residual, name, packed_index)


def schedule_group_conv2d_packed(out: te.Tensor, knobs: Knobs | None = None, config: Any = None) -> Schedule:
    """Groups outermost, then conv2d's tiling within the group."""
    return _schedule_outer(out, knobs, get_env(config), "group")
