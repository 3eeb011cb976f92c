"""The operator library's autotvm templates, registered on import (``autotvm.task.create`` imports
this package when it meets a name it does not know yet).

``conv2d_NCHWc.x86``, ``conv2d_nchw.x86`` (what the graph compiler runs) and ``dense.x86`` (:mod:`.llvm`),
``depthwise_conv2d_nchw.x86``, ``depthwise_conv2d_NCHWc.x86``, ``pool2d.x86`` and ``matmul.x86`` (:mod:`.llvm_ops`) for the CPU; ``conv2d_packed.vdla``,
``group_conv2d_packed.vdla``, ``conv2d_transpose_packed.vdla`` and ``dense_packed.vdla``
(:mod:`.vdla`) for the accelerator; ``conv2d_nchw.cuda``, ``group_conv2d_nchw.cuda``,
``depthwise_conv2d_nchw.cuda``, ``dense.cuda``, ``matmul.cuda`` and ``conv2d_1x1.cuda`` (:mod:`.cuda`) for the GPU. Each declares the operator with the library's topi
function and calls the library's schedule, which defines the knobs; each has a numpy reference.
"""

from . import cuda, llvm, llvm_ops, vdla

__all__ = ["cuda", "llvm", "llvm_ops", "vdla"]
