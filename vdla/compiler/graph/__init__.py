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
(int8), :mod:`.models` (built-ins), :mod:`.passes` (the pipeline); :mod:`.strategy` (which
operator a node becomes on each target: one table keyed by target kind) and
:mod:`.executor` (ONE compiled-model runner for every target: a plan of steps, values kept
on the device that made them, the one-file format); the jobs: :mod:`.zoo` (the built-in
models' settings, loading a model), :mod:`.build` (a model onto VDLA), :mod:`.job` (``vdla
run MODEL``: run and check), :mod:`.report` (the per-layer report) and :mod:`.compare`
(float models on llvm/cuda, and ``--compare``: one model on every target).
"""

from . import ops  # noqa: F401  (registers every operator before any graph is checked)
from .ir import Graph, GraphError, Node, TensorType
from .reference import run

__all__ = ["Graph", "GraphError", "Node", "TensorType", "run"]
