"""The pure parts of benchmarks/bench_cpu_peak.py: FMA layout by CPU, nominal clock parsing,
and the clock sanity check that refuses a renamer-folded (17-19 GHz) reading."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_cpu_peak", Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cpu_peak.py")
peak = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(peak)  # type: ignore[union-attr]


@pytest.mark.parametrize("cpu, features, lanes, pipes", [
    ("emeraldrapids", "+avx512f,+fma", 16, 2),
    ("znver4", "+avx512f,+fma", 8, 2),       # 512-bit ops split into two 256-bit halves
    ("znver5", "+avx512f,+fma", 16, 2),
    ("haswell", "+avx2,+fma", 8, 2),
    ("unknowncpu", "+avx2,+avx512f,+fma", 16, 2),  # from the flags
    ("unknowncpu", "+avx2,+fma", 8, 2),
    ("unknowncpu", "+sse2,-avx512f", 4, 2),
])
def test_fma_layout(cpu: str, features: str, lanes: int, pipes: int) -> None:
    got = peak.fma_layout(cpu, features)
    assert got[:2] == (lanes, pipes)
    assert cpu in got[2]


@pytest.mark.parametrize("text, ghz", [
    ("model name\t: Intel(R) Xeon(R) Platinum 8480+ @ 2.00GHz\ncpu MHz\t\t: 2000.000\n", 2.0),
    ("model name\t: Intel(R) Xeon(R) Processor\ncpu MHz\t\t: 2300.000\n", 2.3),   # a KVM guest
    ("model name\t: AMD EPYC 9R14\ncpu MHz\t\t: 2596.000\n", 2.596),
    ("processor\t: 0\n", None),
])
def test_nominal_ghz(text: str, ghz: float | None) -> None:
    assert peak.nominal_ghz(text) == (pytest.approx(ghz) if ghz else None)


@pytest.mark.parametrize("add, imul, nominal, want, word", [
    (2.9, 2.88, 2.3, 2.9, "measured"),     # turbo above the nominal TSC rate: kept
    (18.0, 2.9, 2.3, 2.3, "disagree"),     # an add-immediate chain folded by the renamer
    (18.0, 18.0, 2.3, 2.3, "outside"),     # both chains fooled: still refused
    (0.9, 0.9, 2.3, 2.3, "outside"),       # heavily preempted
    (3.4, 3.4, None, 3.4, "measured"),
    (9.0, 3.0, None, 3.0, "no nominal"),
])
def test_checked_clock(add: float, imul: float, nominal: float | None, want: float, word: str) -> None:
    ghz, why = peak.checked_clock(add, imul, nominal)
    assert ghz == pytest.approx(want)
    assert word in why


def test_chain_latencies() -> None:
    # the clock divides cycles by seconds: each chain's per-link latency is what makes it a clock
    assert peak.CHAINS["add"][1] == 1 and peak.CHAINS["imul"][1] == 3
    assert "$" not in peak.CHAINS["add"][0]  # no immediate operand: Golden Cove folds those
