"""`AxiTop`: the VDLA core with an AXI4 memory master and an AXI4-Lite control slave.

The ports have flat, Verilog-friendly names, as a Zynq/LiteX integration or cocotbext-axi
expects them (``AxiBus.from_prefix(dut, "m_axi")``, ``AxiLiteBus.from_prefix(dut, "s_axil")``)::

    clk, rst                      the sync domain (reset active high)
    m_axi_aw*, m_axi_w*, m_axi_b*, m_axi_ar*, m_axi_r*    AXI4 manager (32-bit address,
                                  config.bus_width data, 2-bit IDs)
    s_axil_aw*, s_axil_w*, s_axil_b*, s_axil_ar*, s_axil_r*   AXI4-Lite subordinate (8-bit
                                  address, 32-bit data): the registers of `vdla.hardware.axi`
    irq                           high while done (level; cleared by the next start)

Bursts, arbitration and the register map are described in `vdla.hardware.axi`.

    from amaranth.back import verilog
    verilog.convert(AxiTop(PRESETS["small"]), name="vdla_axi_top")
"""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ..config import Config
from .axi import READ_PORTS, AxiLiteControl, AxiMaster, axi4_lite_signature, axi4_signature
from .core import Core, Counters, debug_layout
from .interfaces import ADDR_WIDTH

__all__ = ["AxiTop"]


def _flat(prefix: str, sig: wiring.Signature, flip: bool) -> dict:
    members = {}
    for name, member in sig.members.items():
        members[f"{prefix}_{name}"] = member.flip() if flip else member
    return members


class AxiTop(wiring.Component):
    """Core + `AxiMaster` + `AxiLiteControl`; keyword arguments go to `AxiMaster`."""

    def __init__(self, config: Config, *, ctrl_addr_width: int = 8, **axi_options) -> None:
        self.config = config
        self.ctrl_addr_width = ctrl_addr_width
        self.axi_options = axi_options
        self.m_axi_signature = axi4_signature(ADDR_WIDTH, config.bus_width)
        self.s_axil_signature = axi4_lite_signature(ctrl_addr_width)
        super().__init__({
            **_flat("m_axi", self.m_axi_signature, flip=False),
            **_flat("s_axil", self.s_axil_signature, flip=True),
            "irq": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        c = self.config
        m.submodules.core = core = Core(c)
        m.submodules.axi = axi = AxiMaster(c, **self.axi_options)
        m.submodules.ctrl = ctrl = AxiLiteControl(c, Counters, debug_layout(c), self.ctrl_addr_width)
        self.core = core  # for testbenches (buffers)

        for name in READ_PORTS:
            wiring.connect(m, getattr(core, f"{name}_mem"), getattr(axi, name))
        wiring.connect(m, core.store_mem, axi.store)

        m.d.comb += [
            core.start.eq(ctrl.start), core.insn_addr.eq(ctrl.insn_addr), core.insn_count.eq(ctrl.insn_count),
            ctrl.running.eq(core.running), ctrl.done.eq(core.done), ctrl.error.eq(core.error),
            ctrl.error_code.eq(core.error_code), ctrl.error_index.eq(core.error_index),
            ctrl.counters.eq(core.counters), ctrl.debug.eq(core.debug),
            ctrl.bus_error.eq(axi.bus_error), axi.clear.eq(ctrl.start & ~core.running),
            self.irq.eq(core.done),
        ]

        # Flat ports <-> the AXI master's and the control slave's interfaces.
        for name, member in self.m_axi_signature.members.items():
            top, inner = getattr(self, f"m_axi_{name}"), getattr(axi.bus, name)
            m.d.comb += (top.eq(inner) if member.flow == wiring.Out else inner.eq(top))
        for name, member in self.s_axil_signature.members.items():
            top, inner = getattr(self, f"s_axil_{name}"), getattr(ctrl.bus, name)
            m.d.comb += (inner.eq(top) if member.flow == wiring.Out else top.eq(inner))
        return m
