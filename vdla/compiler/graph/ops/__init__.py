"""Graph operators: each an :class:`~.registry.OpDef` with attributes, shape/dtype
inference and numpy semantics, registered by name.

:mod:`.registry` holds the table and its look-ups (``get_op``, ``normalize_attrs``,
``op_kind``); one module per family defines and registers its operators:
:mod:`.elemwise`, :mod:`.math` (float math and activations, div/pow/max/min/prelu, expand),
:mod:`.nn` (conv, dense, matmul), :mod:`.nd` (conv / transposed conv / pooling of any rank),
:mod:`.pooling`, :mod:`.norm` (LRN, instance/layer norm, log-softmax), :mod:`.shape`,
:mod:`.tensor` (transpose, pad, slice, take, reductions, scatter_nd), :mod:`.logic`
(comparisons, logic, where), :mod:`.image` (resize), :mod:`.rnn` (the LSTM
recurrence as one op), :mod:`.packed` (VDLA's packed
layouts), :mod:`.nchwc` (the CPU's NCHW[x]c layout), :mod:`.gpu` (the GPU's Winograd and 1x1-GEMM
convolutions) and :mod:`.fused`. Importing this package registers them all
(``vdla.compiler.graph`` does so on import, so the graph IR always finds every op).
"""

from . import elemwise, fused, gpu, image, logic, math, nchwc, nd, nn, norm, packed, pooling, rnn, shape, tensor  # noqa: F401  (each registers its operators)
from .elemwise import shift_round
from .nn import conv2d_nchw, conv2d_transpose_nchw, conv_out, exact_matmul
from .registry import OPS, OpDef, get_op, normalize_attrs, op_kind, register
from .shape import reshape_target

__all__ = [
    "OpDef", "OPS", "get_op", "normalize_attrs", "register", "op_kind", "reshape_target", "shift_round",
    "conv2d_nchw", "conv2d_transpose_nchw", "conv_out", "exact_matmul",
]
