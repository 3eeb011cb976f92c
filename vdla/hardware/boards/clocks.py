"""Clock domains for the board tops: the platform's oscillator directly, or an ECP5 PLL.

`clock_for(board)` returns ``None`` when the core runs from the board oscillator (the
platform's default ``sync`` domain, with its power-on reset), else a function that adds
the ``sync`` domain to a module and returns its reset request: an EHXPLLL from the
oscillator, and a signal that is high until the PLL has locked. That domain has no reset
of its own: one reset net from the synchroniser to every flip-flop crossed the 85F's die
twice on its way (its critical path), so `vdla.hardware.boards.soc.BoardTop` holds each unit
in reset through a register of its own instead. `ecp5_pll_params` finds exact dividers
(VCO 400..800 MHz), as ``ecppll`` does.
"""

from __future__ import annotations

from amaranth import ClockDomain, ClockSignal, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import FFSynchronizer

__all__ = ["clock_for", "ecp5_pll_params"]


def ecp5_pll_params(fin_mhz: float, fout_mhz: float) -> dict[str, int]:
    """CLKI_DIV, CLKFB_DIV, CLKOP_DIV for fout = fin * CLKFB_DIV / CLKI_DIV, VCO = fout * CLKOP_DIV."""
    best = None
    for idiv in range(1, 129):
        if fin_mhz / idiv < 3.125:
            break
        for fbdiv in range(1, 81):
            f = fin_mhz * fbdiv / idiv
            if abs(f - fout_mhz) > 1e-6:
                continue
            for opdiv in range(1, 129):
                vco = f * opdiv
                if 400 <= vco <= 800:
                    score = abs(vco - 600)
                    if best is None or score < best[0]:
                        best = (score, idiv, fbdiv, opdiv)
    if best is None:
        raise ValueError(f"no exact ECP5 PLL setting makes {fout_mhz} MHz from {fin_mhz} MHz")
    _, idiv, fbdiv, opdiv = best
    return {"CLKI_DIV": idiv, "CLKFB_DIV": fbdiv, "CLKOP_DIV": opdiv}


def _ecp5_pll(fin_mhz: float, fout_mhz: float):
    p = ecp5_pll_params(fin_mhz, fout_mhz)

    def make(m: Module, platform) -> Signal:
        m.submodules.clk_buf = clk_buf = io.Buffer("i", platform.request(platform.default_clk, dir="-"))
        m.domains.sync = ClockDomain("sync", reset_less=True)
        locked = Signal()
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=str(fin_mhz), a_FREQUENCY_PIN_CLKOP=str(fout_mhz), a_ICP_CURRENT="12",
            a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p["CLKI_DIV"], p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p["CLKOP_DIV"],
            p_CLKOP_CPHASE=p["CLKOP_DIV"] - 1, p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=p["CLKFB_DIV"],
            i_RST=0, i_STDBY=0, i_CLKI=clk_buf.i, i_CLKFB=ClockSignal("sync"), i_PHASESEL0=0, i_PHASESEL1=0,
            i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0,
            o_CLKOP=ClockSignal("sync"), o_LOCK=locked,
        )
        locked_sync = Signal()
        m.submodules.lock_sync = FFSynchronizer(locked, locked_sync, init=0)
        return ~locked_sync

    return make


def clock_for(board):
    """The clock-domain maker for `board` (None: the platform's default clock)."""
    if board.family == "ecp5":
        fin = 25.0
        return None if board.clk_mhz == fin else _ecp5_pll(fin, board.clk_mhz)
    if board.family == "ice40":
        if board.clk_mhz != 12.0:
            raise ValueError("iCEBreaker boards run the core from the 12 MHz oscillator")
        return None
    raise ValueError(f"unknown FPGA family {board.family!r}")
