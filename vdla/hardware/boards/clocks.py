"""Clock domains for the board tops: the platform's oscillator directly, or an ECP5 PLL.

`clock_for(board)` returns ``None`` when the core runs from the board oscillator (the
platform's default ``sync`` domain, with its power-on reset), else a function that adds
the ``sync`` domain to a module and returns its reset request: an EHXPLLL from the
oscillator, and a signal that is high until the PLL has locked. That domain has no reset
of its own: one reset net from the synchroniser to every flip-flop crossed the 85F's die
twice on its way (its critical path), so `vdla.hardware.boards.soc.BoardTop` holds each unit
in reset through a register of its own instead. `ecp5_pll_params` finds exact dividers
(VCO 400..800 MHz), as ``ecppll`` does.

On an iCE40 an SB_PLL40_PAD makes the clock from the 12 MHz oscillator's pad
(`ice40_pll_params`, as ``icepll`` does); that small a part keeps one reset for the domain,
held until the PLL has locked and the block RAMs have woken (`ICE40_BRAM_WAKE_S`).
"""

from __future__ import annotations

from amaranth import ClockDomain, ClockSignal, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import FFSynchronizer

__all__ = ["clock_for", "ecp5_pll_params", "ice40_pll_params"]


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


def ice40_pll_params(fin_mhz: float, fout_mhz: float) -> dict[str, int]:
    """DIVR, DIVF, DIVQ, FILTER_RANGE for fout = fin * (DIVF+1) / ((DIVR+1) * 2**DIVQ) on an
    iCE40 SB_PLL40 (phase detector 10..133 MHz, VCO 533..1066 MHz, as ``icepll`` checks)."""
    best = None
    for divr in range(16):
        pfd = fin_mhz / (divr + 1)
        if not 10 <= pfd <= 133:
            continue
        for divf in range(128):
            vco = pfd * (divf + 1)
            if not 533 <= vco <= 1066:
                continue
            for divq in range(1, 7):
                if abs(vco / 2 ** divq - fout_mhz) < 1e-6 and (best is None or divr < best[0]):
                    best = (divr, divf, divq, pfd)
    if best is None:
        raise ValueError(f"no exact iCE40 PLL setting makes {fout_mhz} MHz from {fin_mhz} MHz")
    divr, divf, divq, pfd = best
    # The loop filter's range follows the phase detector's frequency (iCE40 sysCLOCK guide).
    filter_range = next(k for k, top in enumerate((17, 26, 44, 66, 101), start=1) if pfd < top) if pfd < 101 else 6
    return {"DIVR": divr, "DIVF": divf, "DIVQ": divq, "FILTER_RANGE": filter_range}


#: iCE40 block RAMs read as zeros for about 3 us after configuration: the domain stays in reset
#: this long after the PLL locks (Amaranth's own iCE40 default domain waits likewise).
ICE40_BRAM_WAKE_S = 10e-6


def _ice40_pll(fin_mhz: float, fout_mhz: float):
    p = ice40_pll_params(fin_mhz, fout_mhz)

    def make(m: Module, platform) -> None:
        m.domains.sync = sync = ClockDomain("sync")
        m.domains.por = por = ClockDomain("por", reset_less=True, local=True)
        platform.add_clock_constraint(sync.clk, fout_mhz * 1e6)
        locked = Signal()
        # The oscillator's pin is the PLL's own pad on the UP5K: the _PAD variant takes it raw.
        m.submodules.pll = Instance(
            "SB_PLL40_PAD", p_FEEDBACK_PATH="SIMPLE", p_DIVR=p["DIVR"], p_DIVF=p["DIVF"], p_DIVQ=p["DIVQ"],
            p_FILTER_RANGE=p["FILTER_RANGE"],
            i_PACKAGEPIN=platform.request(platform.default_clk, dir="-").io, i_RESETB=1, i_BYPASS=0,
            o_PLLOUTGLOBAL=sync.clk, o_LOCK=locked,
        )
        m.d.comb += por.clk.eq(sync.clk)
        locked_por = Signal()
        m.submodules.lock_sync = FFSynchronizer(locked, locked_por, o_domain="por", init=0)
        wake = int(ICE40_BRAM_WAKE_S * fout_mhz * 1e6)
        timer, ready = Signal(range(wake + 1)), Signal()
        with m.If(~locked_por):
            m.d.por += [timer.eq(0), ready.eq(0)]
        with m.Elif(timer == wake):
            m.d.por += ready.eq(1)
        with m.Else():
            m.d.por += timer.eq(timer + 1)
        m.d.comb += sync.rst.eq(~ready)

    return make


def clock_for(board):
    """The clock-domain maker for `board` (None: the platform's default clock)."""
    if board.family == "ecp5":
        fin = 25.0
        return None if board.clk_mhz == fin else _ecp5_pll(fin, board.clk_mhz)
    if board.family == "ice40":
        fin = 12.0
        return None if board.clk_mhz == fin else _ice40_pll(fin, board.clk_mhz)
    raise ValueError(f"unknown FPGA family {board.family!r}")
