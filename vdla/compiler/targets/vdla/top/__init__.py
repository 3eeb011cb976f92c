"""Operator templates of the VDLA target (TVM's ``topi`` for VTA), one module each, and the
graph strategy (:mod:`vdla.compiler.graph.strategy.vdla`) that picks one for a graph node.

Templates: :mod:`.conv2d`, :mod:`.dense`, :mod:`.conv2d_transpose`, :mod:`.group_conv2d`
(declaration + schedule each), :mod:`.depthwise_window` (depthwise convs in CFG's window mode:
which layers, tiles and build; lowered by :mod:`..window` without TE); :mod:`.common` (the ALU tail, knobs, placing loads/GEMM/tail)
and :mod:`.tiling` (the tile-size rule) are what they share; :mod:`.reference` holds their
numpy references. The graph strategy turns a fused graph node into a kernel on them. The host
packing of their operands is :mod:`vdla.compiler.targets.vdla.packing` (re-exported here,
where the old ``topi`` module had it)::

    from vdla.compiler.targets.vdla.top import Knobs, Tail, conv2d_packed, schedule_conv2d_packed
"""

from ..packing import (
    pack_bias,
    pack_conv2d_transpose_weight,
    pack_data,
    pack_dense_data,
    pack_dense_weight,
    pack_weight,
    unpack_data,
    unpack_dense_data,
)
from .common import Knobs, Tail
from .conv2d import conv2d_packed, schedule_conv2d_packed
from .conv2d_transpose import conv2d_transpose_packed, schedule_conv2d_transpose_packed, transpose_geometry
from .dense import dense_packed, schedule_dense_packed
from .group_conv2d import group_conv2d_packed, schedule_group_conv2d_packed
from .reference import conv2d_reference, conv2d_transpose_reference, dense_reference, group_conv2d_reference
from .tiling import conv_cost

__all__ = [
    "Knobs", "Tail", "conv2d_packed", "schedule_conv2d_packed", "dense_packed", "schedule_dense_packed",
    "conv2d_transpose_packed", "schedule_conv2d_transpose_packed", "transpose_geometry", "group_conv2d_packed",
    "schedule_group_conv2d_packed", "conv2d_reference", "dense_reference", "conv2d_transpose_reference",
    "group_conv2d_reference", "conv_cost", "pack_data", "unpack_data", "pack_weight", "pack_bias", "pack_dense_data",
    "unpack_dense_data", "pack_dense_weight", "pack_conv2d_transpose_weight",
]
