"""Operator library: target-independent tensor-expression declarations (TVM's topi).

Each operator is a function returning a :class:`~vdla.compiler.te.Tensor`; how it runs
fast is a target's business: the CPU schedules are in
:mod:`vdla.compiler.targets.llvm.schedules`, the accelerator's templates in
:mod:`vdla.compiler.targets.vdla`::

    from vdla.compiler import topi
    from vdla.compiler.targets.llvm import schedules
    y = topi.relu(topi.conv2d_nchw(x, w, stride=1, padding=1))
    s = schedules.schedule_conv2d_nchw(y)

:mod:`.util` holds what declarations and schedules share (padding, shape helpers,
``traverse_inline``). The ``schedule_*`` names once exported here still resolve, with a
``DeprecationWarning`` (see :mod:`vdla.compat.aliases`).
"""

from ...compat.aliases import module_getattr
from . import nn, testing  # TVM's topi.nn and topi.testing
from .activation import activation
from .conv2d import (
    conv2d_nchw,
    conv2d_NCHWc,
    conv2d_transpose_nchw,
    depthwise_conv2d_nchw,
    depthwise_conv2d_NCHWc,
    group_conv2d_nchw,
    pack_kernel,
    pack_nchwc,
    unpack_nchwc,
)
from .dense import dense
from .elemwise import (
    add,
    batch_norm_inference,
    bias_add,
    broadcast_shape,
    broadcast_to,
    clip,
    divide,
    maximum,
    minimum,
    multiply,
    power,
    prelu,
    relu,
    subtract,
)
from .image import resize
from .indexing import argreduce, compare, gather, logic, pad_nd, scatter_nd, strided_slice, take, where
from .matmul import batch_matmul, matmul
from .norm import group_norm, instance_norm, layer_norm, log_softmax, lrn
from .pooling import global_pool, pool2d
from .reduction import reduce
from .softmax import softmax
from .transform import channel_shuffle, concatenate, layout_transform, reshape, transpose
from .util import pad
from .winograd import conv2d_winograd_NCHWc, winograd_weight

__getattr__ = module_getattr(__name__)  # topi.schedule_* -> targets.llvm.schedules, for one release

__all__ = [
    "activation",
    "argreduce",
    "compare",
    "gather",
    "logic",
    "pad_nd",
    "resize",
    "scatter_nd",
    "strided_slice",
    "take",
    "where",
    "reduce",
    "concatenate",
    "transpose",
    "reshape",
    "add",
    "batch_matmul",
    "batch_norm_inference",
    "bias_add",
    "broadcast_shape",
    "broadcast_to",
    "clip",
    "channel_shuffle",
    "conv2d_NCHWc",
    "conv2d_nchw",
    "conv2d_transpose_nchw",
    "conv2d_winograd_NCHWc",
    "winograd_weight",
    "dense",
    "depthwise_conv2d_NCHWc",
    "depthwise_conv2d_nchw",
    "divide",
    "global_pool",
    "group_conv2d_nchw",
    "layout_transform",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "power",
    "prelu",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "log_softmax",
    "lrn",
    "pack_kernel",
    "pack_nchwc",
    "pad",
    "pool2d",
    "relu",
    "softmax",
    "subtract",
    "unpack_nchwc",
    "nn",
    "testing",
]
