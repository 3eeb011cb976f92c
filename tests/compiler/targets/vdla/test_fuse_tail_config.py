"""The requantisation tail stays on the ALU for a core without CFG (``Config.gemm_epilogue`` off,
as the iCEBreaker's and the ULX3S boards'): no CFG and no GEMM init in the program, the result
still equal to numpy's, and the same layer on the default config fused."""

from __future__ import annotations

import pytest
from support.templates import conv_case

from vdla import isa
from vdla.compiler.targets.vdla.top import Knobs, Tail
from vdla.config import PRESETS

TAIL = Tail(bias=True, shift=6, clip=(0, 96))


@pytest.mark.parametrize("epilogue", [True, False])
def test_tail_fused_only_where_the_config_has_the_epilogue(epilogue: bool) -> None:
    cfg = PRESETS["default"].replace(name=f"default-epilogue-{epilogue}", gemm_epilogue=epilogue)
    r = conv_case(cfg, 32, 32, 8, 1, 1, 0, TAIL, Knobs())
    assert (r["got"] == r["ref"]).all()
    insns = isa.decode(r["f"].program.insns, cfg)
    cfgs = sum(i.opcode == isa.Op.CFG for i in insns)
    alus = sum(i.opcode == isa.Op.ALU for i in insns)
    assert (cfgs > 0 and alus == 0) if epilogue else (cfgs == 0 and alus > 0), (cfgs, alus)
    assert (r["report"].counters["alu_counter"] == 0) == epilogue
