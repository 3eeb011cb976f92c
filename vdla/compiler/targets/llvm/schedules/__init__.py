"""CPU operator schedules (TVM's ``topi.x86``): how the operator library's declarations run fast on a CPU.

One module per operator family, beside the declarations in :mod:`vdla.compiler.topi`::

    from vdla.compiler import topi
    from vdla.compiler.targets.llvm import schedules
    y = topi.relu(topi.conv2d_nchw(x, w, stride=1, padding=1))
    s = schedules.schedule_conv2d_nchw(y)
"""

from .batch_matmul import schedule_batch_matmul
from .conv2d import (
    NCHWcConfig,
    channel_block,
    conv_block,
    register_tile,
    schedule_conv2d_nchw,
    schedule_conv2d_NCHWc,
    schedule_conv2d_transpose_nchw,
    schedule_group_conv2d_nchw,
)
from .dense import schedule_dense
from .depthwise import inline_pad, schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_NCHWc
from .elemwise import schedule_injective
from .matmul import MatmulConfig, schedule_matmul_cpu
from .norm import schedule_norm
from .pooling import schedule_global_pool, schedule_pool
from .reduction import schedule_reduce
from .softmax import schedule_softmax
from .winograd import schedule_conv2d_winograd_NCHWc

__all__ = [
    "channel_block",
    "conv_block",
    "register_tile",
    "schedule_reduce",
    "schedule_norm",
    "MatmulConfig",
    "NCHWcConfig",
    "schedule_batch_matmul",
    "schedule_conv2d_NCHWc",
    "schedule_conv2d_nchw",
    "schedule_conv2d_transpose_nchw",
    "schedule_dense",
    "schedule_depthwise_conv2d_nchw",
    "schedule_depthwise_conv2d_NCHWc",
    "inline_pad",
    "schedule_global_pool",
    "schedule_group_conv2d_nchw",
    "schedule_injective",
    "schedule_matmul_cpu",
    "schedule_pool",
    "schedule_softmax",
    "schedule_conv2d_winograd_NCHWc",
]
