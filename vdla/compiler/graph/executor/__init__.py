"""The graph executor: ONE compiled-model runner for every target.

::

    from vdla.compiler.graph import executor, models, passes
    g = passes.prepare(models.resnet18(), calib)         # int8, partitioned, packed, fused
    m = executor.compile_model(g, config)                # VDLA kernels built once, the CPU side on llvm
    res = m.run({"data": x}, Device("fsim", config=config))
    res.outputs, res.layers                              # outputs and per-node records
    m.save("resnet18.vdla"); m2 = executor.CompiledModel.load("resnet18.vdla")
    f = executor.compile_model(models.resnet18(), target="cuda")   # a float model on the GPU
    f.run({"data": x}).outputs

A compiled model is a plan of steps, one per node (:mod:`.plan`): a kernel on a device
(``vdla``, ``llvm``, ``cuda``), a ``view`` or a ``host`` step (numpy), decided by the graph's
strategies (:mod:`..strategy`) for every target the same way. :mod:`.compile` builds the
plan, :mod:`.place` places the host side (views, llvm or cuda kernels), :mod:`.run` runs it
(values stay on the device that made them; kernel outputs written into the buffers
:mod:`.memory` plans once, reused where lifetimes do not overlap), :mod:`.model_file` is the
one-file format.
"""

from ..strategy.vdla import AluChain, alu_chain
from .compile import compile_model
from .model_file import MAGIC, VERSION, ModelFileError, is_model_file
from .place import place
from .plan import STEP_TARGETS, HostStepError, Step, host_warning, require_device
from .run import FP32_RTOL, CompiledModel, ExecutorError, LayerRecord, RunResult, op_name

__all__ = [
    "ExecutorError", "ModelFileError", "AluChain", "alu_chain", "CompiledModel", "LayerRecord", "RunResult",
    "Step", "STEP_TARGETS", "HostStepError", "host_warning", "require_device", "compile_model", "place", "is_model_file", "MAGIC", "VERSION", "FP32_RTOL", "op_name",
]
