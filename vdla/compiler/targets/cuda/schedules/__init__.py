"""GPU operator schedules (TVM's ``topi.cuda``): how the operator library runs on a GPU.

Each ``schedule_*`` takes the output tensor(s) and plain tile parameters (the knobs an
auto-tuner searches) and returns a Schedule for ``vdla.build(s, args, target="cuda")``::

    A, B, C = schedules.matmul(1024, 1024, 1024)
    s = schedules.schedule_matmul(C, schedules.MatmulTiles(bm=64, bn=64, bk=16, tm=4, tn=4))
"""

from .batch_matmul import schedule_batch_matmul
from .conv2d import (
    Conv2dTiles,
    schedule_conv2d_nchw,
    schedule_conv2d_transpose_nchw,
    schedule_depthwise_conv2d_nchw,
    schedule_group_conv2d_nchw,
)
from .elemwise import schedule_injective
from .matmul import MatmulTiles, conv2d_1x1, dense, matmul, schedule_conv2d_1x1, schedule_dense, schedule_matmul
from .norm import schedule_norm
from .reduction import schedule_pool, schedule_reduce, schedule_softmax
from .winograd import schedule_conv2d_winograd_nchw

__all__ = [
    "Conv2dTiles",
    "MatmulTiles",
    "conv2d_1x1",
    "dense",
    "matmul",
    "schedule_batch_matmul",
    "schedule_conv2d_1x1",
    "schedule_conv2d_nchw",
    "schedule_conv2d_transpose_nchw",
    "schedule_conv2d_winograd_nchw",
    "schedule_dense",
    "schedule_depthwise_conv2d_nchw",
    "schedule_group_conv2d_nchw",
    "schedule_injective",
    "schedule_matmul",
    "schedule_norm",
    "schedule_pool",
    "schedule_reduce",
    "schedule_softmax",
]
