"""Amaranth HDL description of the VDLA core.

The core (`Core`, in `core.py`) is four stages joined by command and token queues, each
its own `wiring.Component`: `Fetch` (routes the instruction stream), `Load` (2D DMA with
zero padding into INP/WGT), `Compute` (uop/ACC loads, the `TensorPipeline` with the
`GemmArray` and `TensorAlu`, FINISH) and `Store` (OUT to memory), plus `TokenQueue`s and
the buffers (`buffers.py`). Every module takes a `vdla.config.Config`; instruction
layouts come from `vdla.isa.amaranth_layout`, so there is no second copy of the field
table. `testbench.CoreSim` runs the core in Amaranth's simulator against a numpy DRAM.

    from amaranth.back import verilog
    verilog.convert(Core(PRESETS["small"]), name="vdla_core")
"""

from .core import COUNTER_NAMES, Core
from .errors import ErrorCode

__all__ = ["Core", "ErrorCode", "COUNTER_NAMES"]
