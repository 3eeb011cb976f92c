"""benchmarks/bench_cpu_models.py on one small model, one round: it compiles, agrees with
onnxruntime, times both and fills the per-convolution table (JSON on stdout, Markdown to --out)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mobilenet_v2_at_32(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    md = tmp_path / "bench.md"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cpu_models.py"), "--models", "mobilenet_v2",
                        "--size", "32", "--repeat", "1", "--rounds", "1", "--json", "--out", str(md)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout)
    (row,) = res["rows"]
    assert row["status"] == "ok" and row["rel_err"] <= 1e-4 and res["failed"] == []
    assert row["vdla_ms"] > 0 and row["ort_ms"] > 0 and row["ratio"] > 0 and row["host_steps"] == 0
    assert row["native"] and row["stepwise_ms"] > 0  # timed as one native call, and step by step
    layers = row["layers"]
    assert len(layers) == 52  # every conv of MobileNet v2, fused or not
    assert sum(" dw " in c["layer"] for c in layers) == 17
    assert all(c["gflops"] > 0 and c["alone_ms"] > 0 for c in layers)
    text = md.read_text()
    assert "| mobilenet_v2 |" in text and f"{res['threads']} thread(s)" in text
