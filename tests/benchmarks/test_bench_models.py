"""benchmarks/bench_models.py on a reduced MobileNetV2 (on the golden simulator's cycle model):
the MAC share, the CPU nodes' share and every VDLA layer's roofline bound are reported, and no
layer beats its roofline bound (the cycle model and its DRAM byte counters agree), nor the bound
of its compute module's instruction stream (each GEMM and ALU uop-iteration takes that module a
cycle at least, and the module runs one instruction at a time)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_models", Path(__file__).resolve().parents[2] / "benchmarks" / "bench_models.py")
bench = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bench)  # type: ignore[union-attr]


def test_mobilenet_v2_row_and_rooflines(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--models", "mobilenet_v2", "--reduced", "--layers", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert 0.5 < row["mac_share"] <= 1.0 and 0.0 <= row["host_share"] < 1.0
    kinds = {x["kind"] for x in row["layers"]}
    assert {"1x1/1", "dw/grouped/1", "dw/grouped/2"} <= kinds, kinds
    for x in row["layers"]:
        assert 0 < x["util"] <= x["bound"] * 1.0001, x  # no layer runs faster than the roofline allows
        # the compute module's busy cycles hold every GEMM MAC-row and every ALU uop-iteration
        busy = x["compute_busy"] * x["cycles"]
        assert busy >= x["macs"] / 256 + x["alu_iters"] - 0.5, x
        assert 0 < x["compute_busy"] <= 1 and x["util"] <= x["stream_bound"] * 1.0001, x
    # the depthwise layers' requantisation tail runs on the ALU
    assert all(x["alu_iters"] > 0 for x in row["layers"] if x["kind"].startswith("dw")), row["layers"]
