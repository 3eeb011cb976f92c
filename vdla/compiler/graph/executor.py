"""The graph executor: compile a prepared graph node by node onto its targets and run it.

::

    from vdla.compiler.graph import executor, models, passes
    g = passes.prepare(models.resnet18(), calib)         # int8, partitioned, packed, fused
    m = executor.compile_model(g, config)                # VDLA kernels built once
    res = m.run({"data": x}, Device("fsim", config=config))
    res.outputs, res.layers                              # outputs and per-node records
    m.save("resnet18.vdla"); m2 = executor.CompiledModel.load("resnet18.vdla")

Targets. A ``vdla`` node becomes an accelerator kernel through the VDLA strategy
(:mod:`vdla.compiler.targets.vdla.top.strategy`); every other node, and any ``vdla`` node
the templates cannot express (the reason is recorded), runs on the host: on ``llvm`` where
it maps onto topi (:mod:`vdla.compiler.targets.llvm.strategy`), else on the numpy kernels
of :mod:`.ops`. ``pack`` / ``unpack`` nodes inserted by :mod:`.layout` are the transfers
between the two.

The jobs live in their own modules: :mod:`.compile` (``compile_model``), :mod:`.kernels`
(the kernel table, CPU nodes onto llvm), :mod:`.model` (``CompiledModel`` and running it)
and :mod:`.model_file` (the file format). This module gathers their public names.
"""

from ..targets.vdla.top.strategy import AluChain, alu_chain
from .compile import compile_model
from .kernels import Kernel, compile_llvm
from .model import FP32_RTOL, CompiledModel, ExecutorError, LayerRecord, RunResult
from .model_file import MAGIC, VERSION, ModelFileError, is_model_file

__all__ = [
    "ExecutorError", "ModelFileError", "AluChain", "alu_chain", "CompiledModel", "LayerRecord", "RunResult",
    "Kernel", "compile_model", "compile_llvm", "is_model_file", "MAGIC", "VERSION", "FP32_RTOL",
]
