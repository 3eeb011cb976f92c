"""Operator library: tensor-expression declarations with default CPU schedules (TVM's topi).

Each operator is a function returning a :class:`~vdla.compiler.te.Tensor`; each
``schedule_*`` takes the output tensor(s) and returns a schedule for ``vdla.build``::

    from vdla.compiler import topi
    y = topi.relu(topi.conv2d_nchw(x, w, stride=1, padding=1))
    s = topi.schedule_conv2d_nchw(y)
"""

from .conv2d import (
    NCHWcConfig,
    conv2d_nchw,
    conv2d_NCHWc,
    conv2d_transpose_nchw,
    depthwise_conv2d_nchw,
    pack_kernel,
    pack_nchwc,
    schedule_conv2d_nchw,
    schedule_conv2d_NCHWc,
    schedule_conv2d_transpose_nchw,
    schedule_depthwise_conv2d_nchw,
    unpack_nchwc,
)
from .dense import dense, schedule_dense
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
    relu,
    schedule_injective,
    subtract,
)
from .matmul import matmul, schedule_matmul_cpu
from .pooling import global_pool, pool2d, schedule_global_pool, schedule_pool
from .softmax import schedule_softmax, softmax
from .util import pad

__all__ = [
    "NCHWcConfig",
    "add",
    "batch_norm_inference",
    "bias_add",
    "broadcast_shape",
    "broadcast_to",
    "clip",
    "conv2d_NCHWc",
    "conv2d_nchw",
    "conv2d_transpose_nchw",
    "dense",
    "depthwise_conv2d_nchw",
    "divide",
    "global_pool",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "pack_kernel",
    "pack_nchwc",
    "pad",
    "pool2d",
    "relu",
    "schedule_conv2d_NCHWc",
    "schedule_conv2d_nchw",
    "schedule_conv2d_transpose_nchw",
    "schedule_dense",
    "schedule_depthwise_conv2d_nchw",
    "schedule_global_pool",
    "schedule_injective",
    "schedule_matmul_cpu",
    "schedule_pool",
    "schedule_softmax",
    "softmax",
    "subtract",
    "unpack_nchwc",
]
