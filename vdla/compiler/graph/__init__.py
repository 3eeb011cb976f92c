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

Modules: :mod:`.types` (TensorType, GraphError), :mod:`.ir` (Graph, Node, printer),
:mod:`.ops` (the operator registry and one module per operator family, numpy semantics),
:mod:`.reference` (the oracle executor), :mod:`.onnx_import` / :mod:`.onnx_export`,
:mod:`.fold` (constant and batch-norm folding), :mod:`.fuse` (operator fusion),
:mod:`.layout` (the packed-layout pass), :mod:`.partition` (CPU/VDLA), :mod:`.quantize`
(int8), :mod:`.models` (built-ins), :mod:`.passes` (the pipeline), then the executor's jobs:
:mod:`.compile` (a kernel per node), :mod:`.kernels` (the kernel table), :mod:`.model`
(``CompiledModel``: run it on any Device), :mod:`.model_file` (the one-file format), gathered
by :mod:`.executor`; and :mod:`.job` (``vdla run MODEL``: the per-layer report with the
bit-exact and onnxruntime checks). The targets' strategies (a node -> a kernel) live with
their targets (:mod:`vdla.compiler.targets`).
"""

from . import ops  # noqa: F401  (registers every operator before any graph is checked)
from .ir import Graph, GraphError, Node, TensorType
from .reference import run

__all__ = ["Graph", "GraphError", "Node", "TensorType", "run"]
