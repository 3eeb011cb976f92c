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
CFG = bench.preset("default")


def test_mobilenet_v2_row_and_rooflines(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--models", "mobilenet_v2", "--reduced", "--layers", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert 0.5 < row["mac_share"] <= 1.0 and 0.0 <= row["host_share"] < 1.0
    kinds = {x["kind"] for x in row["layers"]}
    assert {"1x1/1", "dw/grouped/1", "dw/grouped/2"} <= kinds, kinds
    for x in row["layers"]:
        # No layer runs faster than DRAM allows. The roofline counts every read on the one AXI read
        # channel the hardware has; the cycle model gives each module its own port, so the bound it
        # must respect leaves out the compute module's own loads (micro-ops, the bias rows)
        read = x["bytes"] - x["written"] - x["compute_read"]
        model_bound = min(1.0, x["macs"] / max(read, x["written"], 1) * CFG.bus_bytes / CFG.macs_per_cycle)
        assert 0 < x["util"] <= model_bound * 1.0001 and x["bound"] <= model_bound, x
        # the compute module's busy cycles hold every GEMM MAC-row and every ALU uop-iteration
        busy = x["compute_busy"] * x["cycles"]
        assert busy >= x["macs"] / 256 + x["alu_iters"] - 0.5, x
        assert 0 < x["compute_busy"] <= 1 and x["util"] <= x["stream_bound"] * 1.0001, x
    # every conv's requantisation tail (bias, shift, clip) runs in its GEMMs (CFG's epilogue, GEMM
    # init); only the residual adds keep theirs on the ALU
    convs = [x for x in row["layers"] if x["kind"].startswith(("dw", "1x1"))]
    assert all(x["alu_iters"] == 0 for x in convs if ".add" not in x["node"]), convs
    adds = [x for x in convs if ".add" in x["node"]]
    assert adds and all(x["alu_iters"] > 0 for x in adds), convs
