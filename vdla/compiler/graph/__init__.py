"""The graph level of the vdla compiler: whole models as dataflow graphs.

::

    from vdla.compiler.graph import models, passes, quantize, reference
    g = models.resnet18(input_size=32)              # fp32, seeded weights
    g = passes.fold_batch_norm(passes.fold_constants(g))
    q = quantize.quantize(g, calib_inputs)          # int8, power-of-two scales
    q = passes.partition(q)                         # "cpu" / "vdla" per node
    q = layout.to_packed_layout(q, vdla.Config())   # NCHW{b}n{c}c, OIHW{o}o{i}i
    q = passes.fuse(q)                              # conv + bias + relu + add + requantise
    out = reference.run(q, {"data": x})[0]

Modules: :mod:`.ir` (Graph, Node, TensorType, printer), :mod:`.ops` (operator
definitions and numpy semantics), :mod:`.reference` (the oracle executor),
:mod:`.onnx_import` / :mod:`.onnx_export`, :mod:`.fold` (constant and batch-norm
folding), :mod:`.fuse` (operator fusion), :mod:`.layout` (packed layouts),
:mod:`.partition` (CPU/VDLA), :mod:`.quantize` (int8), :mod:`.models` (built-ins),
:mod:`.executor` (compile a prepared graph per node onto VDLA kernels and the CPU, run it
on any Device, save/load one file) and :mod:`.job` (``vdla run MODEL``: the per-layer
report with the bit-exact and onnxruntime checks).
"""

from .ir import Graph, GraphError, Node, TensorType
from .reference import run

__all__ = ["Graph", "GraphError", "Node", "TensorType", "run"]
