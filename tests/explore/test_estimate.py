"""The analytic resource/clock estimate against the committed nextpnr reports, and overflow naming."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla.config import PRESETS
from vdla.explore.estimate import calibration, estimate, overflows
from vdla.hardware.boards import BOARDS, board

ROOT = Path(__file__).resolve().parents[2]


def test_estimate_matches_every_committed_report():
    rows = calibration(ROOT / "bitstreams")
    assert {r["board"] for r in rows} == set(BOARDS)
    for r in rows:
        # DSP and BRAM are counted from the structure, not fitted: they must match
        for res in ("DSP", "BRAM"):
            assert abs(r[res]["error_pct"]) <= 1.0, (r["board"], res, r[res])
        # LUTs: a linear model whose three ECP5 coefficients are solved from these reports (in
        # sample: exact on the ULX3S parts); the iCE40's fixed part from the iCEBreaker's
        assert abs(r["LUT"]["error_pct"]) <= 6.0, (r["board"], r["LUT"])
        # fmax: a line in log2(output lanes) through three ULX3S reports (within 0.2 % of each:
        # 82.3 MHz on the 25F, 78.8 on the 45F, 75.8 on the 85F; 6.8 % when the 45F was at 68.9)
        assert abs(r["fmax_mhz"]["error_pct"]) <= 2.0, (r["board"], r["fmax_mhz"])


@pytest.mark.parametrize("name", list(BOARDS))
def test_board_presets_fit_their_part(name):
    b = board(name)
    est = estimate(b)
    assert overflows(est) == [], est.used
    assert est.dsp_macs + est.lut_macs == b.config.macs_per_cycle
    assert est.lut_lanes == b.lut_lanes


@pytest.mark.parametrize("config, part, words", [
    ("default", "icebreaker", ["LUT:", "DSP:", "BRAM:"]),  # VTA's core on a UP5K: everything overflows
    ("batch2", "ulx3s-25f", ["BRAM:"]),  # 224 KiB of buffers on 56 block RAMs
])
def test_overflow_names_the_resource(config, part, words):
    est = estimate(board(part), PRESETS[config])
    over = overflows(est)
    assert [w for w in words if any(o.startswith(w) for o in over)] == words, over
    assert all(est.part in o for o in over)


def test_wider_gemm_costs_more():
    b = board("ulx3s-85f")
    small, big = (estimate(b, b.config.replace(block_out=n)) for n in (8, 16))
    assert small.luts < big.luts and small.fmax_mhz > big.fmax_mhz
    # DSPs first go to the ALU, GEMM lanes take what is left, the rest are LUT lanes
    assert big.dsps <= 156 and big.lut_lanes > 0


def test_cli_calibration_table(monkeypatch, capsys):
    from vdla.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["sweep", "--calibration"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:5] == ["board", "LUT", "DSP", "BRAM", "fmax"]
    assert sorted(r.split()[0] for r in rows[1:]) == sorted(BOARDS)
    assert "144 / 144" in next(r for r in rows if r.startswith("ulx3s-85f"))
