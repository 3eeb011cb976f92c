"""An analytic resource and clock estimate of a board build, from its Config alone (no synthesis).

`estimate(board, config)` predicts what nextpnr would report for `board`'s part with
`config` in it: DSP blocks, block RAMs, LUTs and an fmax, and :func:`overflows` names each
resource the part cannot hold. `vdla sweep --no-synth` uses it in place of synthesis and
place-and-route, and the full sweep uses it to refuse a point before a build starts.

It is an estimate, counted from the same structure the gateware has:

- DSPs: one MULT18X18D (ECP5) / SB_MAC16 (iCE40) per GEMM multiplier on a DSP lane, and the
  tensor ALU's MUL per ALU lane (3 blocks for a 32-bit accumulator, 1 for 16 bits). GEMM
  output lanes that do not fit go to LUT multipliers (`Board.lut_lanes`), as the board
  presets do.
- Block RAM: each buffer (`vdla.hardware.buffers`: ACC twice, for its two read ports), the
  three 128-bit command queues, the board's program/data memory and the bridge's block
  buffer, each mapped onto the best aspect ratio of the part's RAM block.
- LUTs: a linear model, fitted by least squares to the committed
  ``bitstreams/*/report.json`` (see :data:`LUT_COEFFS` and :func:`calibration`): a fixed part,
  a LUT multiplier per LUT MAC, the adder tree per product bit, and the ALU per accumulator
  bit of a lane.
- fmax: the family's fmax, lowered per doubling of the GEMM output lanes (a wider core
  spreads over more of the die: longer routes), fitted the same way.

:func:`calibration` compares the estimate with every committed report, and
:func:`calibration_table` prints it (``vdla sweep --calibration``); the README quotes it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config
from ..hardware.boards import Board
from ..hardware.buffers import KINDS, row_bits, write_lanes

__all__ = ["PARTS", "Part", "Estimate", "estimate", "overflows", "lut_lanes_for", "calibration",
           "calibration_table", "LUT_COEFFS", "FMAX_COEFFS"]

#: The instruction width the command queues hold (vdla.isa.INSN_BITS; a fact of the ISA).
_INSN_BITS = 128


@dataclass(frozen=True)
class Part:
    """An FPGA part's capacity in the units nextpnr reports."""

    name: str
    family: str  # "ecp5" | "ice40"
    luts: int
    dsps: int
    brams: int
    #: (depth, width) shapes one block RAM can take.
    bram_shapes: tuple[tuple[int, int], ...]


_DP16KD = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
_SB_RAM40 = ((2048, 2), (1024, 4), (512, 8), (256, 16))

#: Capacity per board (Lattice data sheets; the same numbers nextpnr prints as "available").
PARTS: dict[str, Part] = {
    "ulx3s-85f": Part("LFE5U-85F", "ecp5", 83640, 156, 208, _DP16KD),
    "ulx3s-45f": Part("LFE5U-45F", "ecp5", 43848, 72, 108, _DP16KD),
    "ulx3s-25f": Part("LFE5U-25F", "ecp5", 24288, 28, 56, _DP16KD),
    "icebreaker": Part("iCE40UP5K", "ice40", 5280, 8, 30, _SB_RAM40),
}

#: LUT model per family: fixed + per LUT MAC + per adder-tree bit (product x acc_width) + per ALU bit
#: (lane x acc_width). The LUT MAC is fixed at 80 LUT4 (a radix-4 Booth 8x8 multiplier: four 9-bit
#: partial products and their adders); the other three are solved from the three ULX3S reports
#: (their features are nearly collinear, so three boards pin them exactly but do not validate them).
#: iCE40: the same per-bit costs, the fixed part solved from the iCEBreaker (its LCs count LUT+FF).
LUT_COEFFS: dict[str, tuple[float, float, float, float]] = {
    "ecp5": (6894.0, 80.0, 2.746, 25.92),
    "ice40": (4242.6, 80.0, 2.746, 25.92),
}
#: fmax model per family: MHz = f0 - slope * log2(GEMM output lanes): wider rows spread the design
#: over more of the die and its block RAMs (longer routes). ECP5: the line with the smallest worst
#: relative error over the three committed ULX3S reports (within 0.2 % of each: 82.3 MHz on the
#: 25F, 78.8 on the 45F, 75.8 on the 85F; their critical paths are mostly routing); iCE40: the slope scaled by the families' f0 ratio,
#: f0 solved from the iCEBreaker.
FMAX_COEFFS: dict[str, tuple[float, float]] = {
    "ecp5": (88.6, 3.23),
    "ice40": (21.63, 0.824),
}


@dataclass
class Estimate:
    """Predicted use of a part (counts in nextpnr's units) and the clock it would close at."""

    part: str
    family: str
    luts: int
    dsps: int
    brams: int
    available: dict[str, int]
    fmax_mhz: float
    dsp_macs: int
    lut_macs: int
    lut_lanes: int
    bram_detail: dict[str, int] = field(default_factory=dict)

    @property
    def used(self) -> dict[str, int]:
        return {"LUT": self.luts, "DSP": self.dsps, "BRAM": self.brams}

    @property
    def clock_mhz(self) -> float:
        """The clock a build would be constrained to: fmax rounded down to a whole MHz."""
        return float(max(1, math.floor(self.fmax_mhz)))

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "family": self.family, "used": self.used, "available": self.available,
                "percent": {k: round(100 * v / self.available[k], 1) for k, v in self.used.items()},
                "fmax_mhz": round(self.fmax_mhz, 2), "clock_mhz": self.clock_mhz,
                "macs": {"dsp": self.dsp_macs, "lut": self.lut_macs}, "lut_lanes": self.lut_lanes,
                "bram_detail": self.bram_detail}


def _alu_dsps(config: Config) -> int:
    """DSP blocks of the tensor ALU's MUL: one per 18-bit (ECP5) / 16-bit (iCE40) slice squared."""
    per_lane = 3 if config.acc_width > 16 else 1
    return config.batch * config.block_out * per_lane


def lut_lanes_for(board: Board, config: Config) -> int:
    """GEMM output lanes built from LUTs: the board's own split for its geometry, else what the DSPs leave."""
    c, b = config, board.config
    if (c.batch, c.block_in, c.block_out, c.acc_width) == (b.batch, b.block_in, b.block_out, b.acc_width):
        return board.lut_lanes
    part = PARTS[board.name]
    free = max(0, part.dsps - _alu_dsps(c))
    dsp_lanes = min(c.block_out, free // (c.batch * c.block_in))
    return c.block_out - dsp_lanes


def _blocks(depth: int, width: int, shapes: tuple[tuple[int, int], ...]) -> int:
    return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in shapes)


def _brams(board: Board, config: Config, part: Part) -> dict[str, int]:
    detail = {}
    for kind in KINDS:
        copies = 2 if kind == "acc" else 1  # two read ports: the mapper duplicates ACC
        # a row wider than the bus has a write enable per bus word: each word maps onto its own blocks
        lanes = write_lanes(config, kind)
        detail[kind] = copies * lanes * _blocks(getattr(config, f"{kind}_depth"), row_bits(config, kind) // lanes,
                                                part.bram_shapes)
    detail["cmd_queues"] = 3 * _blocks(config.cmd_queue_depth, _INSN_BITS, part.bram_shapes) \
        if config.cmd_queue_depth > 16 else 0  # shallow FIFOs stay in flip-flops
    if board.memory == "bram":
        detail["memory"] = _blocks(board.mem_size * 8 // config.bus_width, config.bus_width, part.bram_shapes)
    detail["bridge"] = _blocks(256, 8, part.bram_shapes)
    return detail


def _lut_features(config: Config, lut_macs: int) -> tuple[float, float, float, float]:
    products = config.batch * config.block_in * config.block_out
    lanes = config.batch * config.block_out
    return (1.0, float(lut_macs), float(products * config.acc_width), float(lanes * config.acc_width))


def estimate(board: Board, config: Config | None = None) -> Estimate:
    """The estimate for `config` (default: the board's own) on `board`'s part."""
    c = config or board.config
    part = PARTS[board.name]
    lanes = lut_lanes_for(board, c)
    lut_macs = c.batch * lanes * c.block_in
    dsp_macs = c.macs_per_cycle - lut_macs
    gemm_dsps = dsp_macs
    if part.family == "ice40" and c.block_in == 2:
        # a lane's sum of two products goes straight into a register (no adder tree between):
        # Yosys's ice40_dsp maps it as one SB_MAC16 multiply-add, the other product in LUTs
        gemm_dsps = dsp_macs // 2
    dsps = gemm_dsps + _alu_dsps(c)
    detail = _brams(board, c, part)
    brams = sum(detail.values())
    coeffs = LUT_COEFFS[part.family]
    luts = int(round(sum(a * x for a, x in zip(coeffs, _lut_features(c, lut_macs)))))
    f0, slope = FMAX_COEFFS[part.family]
    fmax = max(1.0, f0 - slope * math.log2(c.batch * c.block_out))
    return Estimate(part.name, part.family, luts, dsps, brams,
                    {"LUT": part.luts, "DSP": part.dsps, "BRAM": part.brams}, fmax, dsp_macs, lut_macs, lanes, detail)


def overflows(est: Estimate) -> list[str]:
    """'RESOURCE: used > available' for each resource the part cannot hold (empty: it fits)."""
    return [f"{k}: {v} > {est.available[k]} on {est.part}" for k, v in est.used.items() if v > est.available[k]]


#: nextpnr bel names of the estimated resources, per family.
_BELS = {"ecp5": {"LUT": "TRELLIS_COMB", "DSP": "MULT18X18D", "BRAM": "DP16KD"},
         "ice40": {"LUT": "ICESTORM_LC", "DSP": "ICESTORM_DSP", "BRAM": "ICESTORM_RAM"}}


def calibration(root: str | Path = "bitstreams") -> list[dict[str, Any]]:
    """Estimate vs report for each committed ``bitstreams/BOARD/report.json``: used counts and fmax, with errors."""
    from ..hardware.boards import BOARDS

    rows = []
    for path in sorted(Path(root).glob("*/report.json")):
        rep = json.loads(path.read_text())
        if rep.get("board") not in BOARDS:
            continue
        b = BOARDS[rep["board"]]
        cfg = Config.from_dict(rep["config"])
        est = estimate(b, cfg)
        by_bel = {r["bel"]: r["used"] for r in rep.get("resources", [])}
        row: dict[str, Any] = {"board": b.name}
        for k, bel in _BELS[est.family].items():
            real, guess = by_bel.get(bel, 0), est.used[k]
            row[k] = {"report": real, "estimate": guess, "error_pct": round(100 * (guess - real) / real, 1) if real else None}
        real_f = rep["clock"]["fmax_mhz"]
        row["fmax_mhz"] = {"report": real_f, "estimate": round(est.fmax_mhz, 1),
                           "error_pct": round(100 * (est.fmax_mhz - real_f) / real_f, 1)}
        rows.append(row)
    return rows


def calibration_table(root: str = "bitstreams") -> str:
    """The estimate next to each committed report: nextpnr / estimate (error)."""
    rows = calibration(root)
    if not rows:
        return f"no {root}/*/report.json to compare with"
    lines = [f"{'board':<12} {'LUT':>22} {'DSP':>16} {'BRAM':>16} {'fmax MHz':>22}   (nextpnr / estimate)"]
    for r in rows:
        cells = []
        for k, w in (("LUT", 22), ("DSP", 16), ("BRAM", 16), ("fmax_mhz", 22)):
            v = r[k]
            err = "" if v["error_pct"] is None else f" ({v['error_pct']:+.1f}%)"
            cells.append(f"{v['report']:g} / {v['estimate']:g}{err}".rjust(w))
        lines.append(f"{r['board']:<12} " + " ".join(cells))
    return "\n".join(lines)
