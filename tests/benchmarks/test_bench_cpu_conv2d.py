"""benchmarks/bench_cpu_conv2d.py on one layer, one round: the hand and the log's tuned schedule
are built, checked against numpy's convolution (inside bench_layer) and timed natively."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports its sibling bench_cpu_matmul
_spec = importlib.util.spec_from_file_location("bench_cpu_conv2d", ROOT / "benchmarks" / "bench_cpu_conv2d.py")
bench = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bench)  # type: ignore[union-attr]


def test_one_layer_hand_and_tuned() -> None:
    layer = next(ly for ly in bench.LAYERS if ly.name == "C11")
    rows = bench.bench_layer(layer, repeat=2, thread_counts=[1], rounds=1,
                             log=str(ROOT / "docs" / "tuning" / "llvm_conv2d_top.log"), top=1)
    assert [r["schedule"] for r in rows] == ["hand", "tuned"]
    for r in rows:
        # seconds per call from the native loop (a 13 MFLOP layer: tens of microseconds, never 0)
        assert 0 < float(r["vdla_ms"]) < 1000 and float(r["vdla_gflops"]) > 0
    assert rows[1]["knobs"] and rows[1]["blocks"].startswith("ic")
