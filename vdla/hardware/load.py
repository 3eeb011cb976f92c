"""The load stage: LOAD INP and LOAD WGT, 2D strided DMA with zero padding into the INP/WGT buffers.

Its tokens: pop_next waits for compute's g2l token (compute is done reading the
region: WAR), push_next sends an l2g token once the data is in SRAM (RAW). Load has no
previous stage; pop_prev/push_prev are ignored. A LOAD with x_size = 0 is a NOP that
only moves tokens. Fetch sends only LOAD INP/WGT here. A row past the buffer is dropped and
reported (``error`` = `ErrorCode.SRAM_RANGE`, see `Loader2D`).
"""

from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import isa
from ..config import Config
from .dma import Loader2D, Target
from .errors import ErrorCode
from .interfaces import read_master, token
from .stage import run_stage, stage_status
from .tokens import TokenPorts

__all__ = ["Load"]


class Load(wiring.Component):
    def __init__(self, config: Config, *, io_registers: bool = True, wgt_slices: int = 1) -> None:
        self.config = config
        c = config
        inp = Target("inp", isa.Mem.INP, c.inp_elem_bytes, c.log_inp_depth)
        wgt = Target("wgt", isa.Mem.WGT, c.wgt_elem_bytes, c.log_wgt_depth, slices=wgt_slices)
        self.loader = Loader2D(c, [inp, wgt], io_registers=io_registers)
        super().__init__({
            "cmd": In(stream.Signature(isa.INSN_BITS)),
            "g2l": In(token()),
            "l2g": Out(token()),
            "mem": Out(read_master(c.bus_width)),
            # the loader's SRAM write ports, passed through
            "inp_wr": self.loader.signature.members["inp_wr"],
            "wgt_wr": self.loader.signature.members["wgt_wr"],
            "inp_elem": Out(1),
            "wgt_elem": Out(1),
            **stage_status(),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.loader = loader = self.loader
        raw = Signal(isa.INSN_BITS)
        insn = data.View(isa.amaranth_layout(self.config, "mem"), raw)
        is_wgt = insn.memory_type == isa.Mem.WGT
        tokens = TokenPorts(pops={"next": self.g2l}, pushes={"next": self.l2g})
        pops = {"next": insn.pop_next}
        pushes = {"next": insn.push_next}

        m.d.comb += loader.insn.eq(insn)
        wiring.connect(m, wiring.flipped(self.inp_wr), loader.inp_wr)
        wiring.connect(m, wiring.flipped(self.wgt_wr), loader.wgt_wr)
        wiring.connect(m, wiring.flipped(self.mem), loader.mem)
        m.d.comb += [self.inp_elem.eq(loader.elem & ~is_wgt), self.wgt_elem.eq(loader.elem & is_wgt),
                     self.error.eq(Mux(loader.range_error, ErrorCode.SRAM_RANGE, ErrorCode.NONE))]
        run_stage(m, self, raw=raw, tokens=tokens, pops=pops, pushes=pushes,
                  nop=insn.x_size == 0, start=loader.start, done=loader.done)
        return m
