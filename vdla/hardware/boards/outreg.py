"""Output registers of ECP5 block RAMs and multipliers: a netlist step between Yosys and nextpnr.

Yosys maps every read port onto a DP16KD with its output register off (``REGMODE NOREG``),
so a register the RTL puts right after a buffer's read (the ACC read register, the INP/WGT
operand read registers) stays a fabric flip-flop, and the path into it still starts with
the block RAM's slow clock-to-out (5.8 ns at speed grade 6, nextpnr's figure: a third of a
75 MHz cycle). Likewise each GEMM product register after a MULT18X18D is a fabric
flip-flop, one route away from the multiplier. Each DP16KD port and each MULT18X18D has
an output register of its own, which is the same circuit: a D flip-flop on one clock with
an enable (DP16KD ``OCEx``, MULT18X18D ``CE0``) and a reset (``RSTx``, ``RST0``), powering up
at 0.

:func:`absorb_output_registers` moves such flip-flops into their block on the Yosys JSON
netlist: the block's outputs then drive the nets the flip-flops drove, its register is
switched on (``REGMODE_x OUTREG``; ``REG_OUTPUT_CLK CLK0``) and takes the flip-flops' clock
and enable. A block is changed only where that is the same circuit, bit for bit and cycle
for cycle:

- every connected data output drives exactly one cell pin, a ``TRELLIS_FF``'s ``DI``;
- those flip-flops share one clock (a block RAM's port clock, both non-inverted) and one
  enable (or none, ``CEMUX 1``), have no set/reset (``LSR`` constant 0), power up at 0
  (``REGSET RESET``) and carry no ``keep`` (copies the board's Yosys script keeps apart on
  purpose);
- the block RAM port's output-latch reset ``RSTx`` is constant 0 and its ``OCEx`` is 1; the
  multiplier has no register in use (Yosys maps it with none).

Anything else is left as it was. The board build (:mod:`.build`) runs the step where a
board sets ``bram_output_registers`` / ``dsp_output_registers`` and reports what it moved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: The DP16KD's data outputs per port (18 bits each).
_DO_BITS = 18
#: A ``TRELLIS_FF`` parameter value Yosys writes padded ("1 "), so compare stripped.
_CE_ALWAYS = "1"


@dataclass(frozen=True)
class Absorbed:
    """One block-RAM read port or multiplier whose register moved inside it."""

    cell: str
    port: str  # "A" or "B" (a block RAM's read port), "P" (a multiplier's product)
    bits: int  # flip-flops removed
    enable: str  # "1" (always) or the enable net's bit number


def _is_const(bits: list, value: str) -> bool:
    return all(b == value for b in bits)


def _sinks(cells: dict) -> dict[int, list[tuple[str, str]]]:
    """Net bit -> the (cell, input port) pins it drives."""
    out: dict[int, list[tuple[str, str]]] = {}
    for name, c in cells.items():
        dirs = c.get("port_directions", {})
        for port, bits in c["connections"].items():
            if dirs.get(port) != "output":
                for b in bits:
                    if isinstance(b, int):
                        out.setdefault(b, []).append((name, port))
    return out


def _port_bits(module: dict) -> set[int]:
    """Net bits that are `module`'s own ports (a block RAM output that is one keeps its timing)."""
    return {b for p in module.get("ports", {}).values() for b in p["bits"] if isinstance(b, int)}


def _param_int(value) -> int:
    """A Yosys JSON parameter as an int (binary strings for integer parameters)."""
    return value if isinstance(value, int) else int(str(value).strip(), 2)


def _read_ports(ram: dict) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """`ram`'s read ports: (the port whose OCE enables it, its data pins, the ports whose clock,
    reset and REGMODE it uses). In the 36-bit pseudo-dual-port mode (DATA_WIDTH_A 36, as
    Yosys maps a PDPW16KD) port A writes and port B reads all 36 bits on DOA and DOB."""
    if _param_int(ram["parameters"].get("DATA_WIDTH_A", 18)) == 36:
        return [("B", [f"DO{p}{i}" for p in "AB" for i in range(_DO_BITS)], ("A", "B"))]
    return [(p, [f"DO{p}{i}" for i in range(_DO_BITS)], (p,)) for p in "AB"]


def _flip_flops(cells: dict, conn: dict, pins: list[str], clock: list | None, sinks: dict,
                ports: set[int]) -> tuple[dict[str, str], list, str] | None:
    """The flip-flops the data `pins` (of a cell with connections `conn`) feed, if they can
    move into it: pin -> flip-flop cell, their clock net, their enable ("1" or a net bit);
    None where they cannot. `clock`: the net they must share (None: any one net)."""
    moved: dict[str, str] = {}
    clocks: set = set()
    enables: set = set()
    for pin in pins:
        bits = conn.get(pin, [])
        if not bits or not isinstance(bits[0], int) or not sinks.get(bits[0]):
            continue  # unused output bit: registered or not, nothing reads it
        s = sinks[bits[0]]
        if len(s) != 1 or s[0][1] != "DI" or bits[0] in ports:
            return None
        ff = cells[s[0][0]]
        fp, fc = ff["parameters"], ff["connections"]
        if (ff["type"] != "TRELLIS_FF" or not isinstance(fc.get("CLK", [None])[0], int)
                or fp.get("CLKMUX", "CLK") != "CLK" or not _is_const(fc.get("LSR", ["0"]), "0")
                or fp.get("REGSET", "RESET") != "RESET" or fp.get("GSR", "DISABLED") != "DISABLED"
                or ff.get("attributes", {}).get("keep")):
            return None
        clocks.add(fc["CLK"][0])
        cemux = fp.get("CEMUX", _CE_ALWAYS).strip()
        if cemux == _CE_ALWAYS or _is_const(fc.get("CE", ["1"]), "1"):
            enables.add("1")
        elif cemux == "CE" and isinstance(fc["CE"][0], int):
            enables.add(fc["CE"][0])
        else:  # an inverted enable: the hard block's enable has no inversion to match
            return None
        moved[pin] = s[0][0]
    if not moved or len(enables) != 1 or len(clocks) != 1 or (clock is not None and [*clocks] != clock):
        return None
    return moved, [clocks.pop()], enables.pop()


def _take(cells: dict, cell: dict, moved: dict[str, str]) -> None:
    """The pins in `moved` drive what their flip-flops drove; the flip-flops go."""
    for pin, ff in moved.items():
        cell["connections"][pin] = list(cells[ff]["connections"]["Q"])
        del cells[ff]


def _block_ram(cells: dict, name: str, sinks: dict, ports: set[int]) -> list[Absorbed]:
    ram = cells[name]
    p, conn = ram["parameters"], ram["connections"]
    done = []
    for port, pins, covers in _read_ports(ram):
        clocks = {tuple(conn.get(f"CLK{c}", [])) for c in covers}
        if len(clocks) != 1 or not _is_const(conn.get(f"OCE{port}", ["1"]), "1"):
            continue
        clock = list(clocks.pop())
        if not clock or not isinstance(clock[0], int) or any(
                p.get(f"REGMODE_{c}", "NOREG") != "NOREG" or p.get(f"CLK{c}MUX", f"CLK{c}") != f"CLK{c}"
                or not _is_const(conn.get(f"RST{c}", ["0"]), "0") for c in covers):
            continue
        found = _flip_flops(cells, conn, pins, clock, sinks, ports)
        if found is None:
            continue
        moved, _, ce = found
        _take(cells, ram, moved)
        for c in covers:  # in the 36-bit mode both halves' registers, whichever OCE drives them
            p[f"REGMODE_{c}"] = "OUTREG"
            conn[f"OCE{c}"] = ["1"] if ce == "1" else [ce]
        done.append(Absorbed(name, port, len(moved), str(ce)))
    return done


#: The MULT18X18D's register clock selections; Yosys leaves them all NONE.
_DSP_CLOCKS = ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_INPUTC_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK")


def _multiplier(cells: dict, name: str, sinks: dict, ports: set[int]) -> list[Absorbed]:
    dsp = cells[name]
    p, conn = dsp["parameters"], dsp["connections"]
    if any(p.get(k, "NONE") != "NONE" for k in _DSP_CLOCKS) or any(
            isinstance(b, int) for k in ("CLK0", "CE0", "RST0") for b in conn.get(k, [])):
        return []
    found = _flip_flops(cells, conn, [f"P{i}" for i in range(36)], None, sinks, ports)
    if found is None:
        return []
    moved, clock, ce = found
    _take(cells, dsp, moved)
    p.update(REG_OUTPUT_CLK="CLK0", REG_OUTPUT_CE="CE0", REG_OUTPUT_RST="RST0")
    conn.update(CLK0=clock, CE0=["1"] if ce == "1" else [ce], RST0=["0"])
    dsp.setdefault("port_directions", {}).update(CLK0="input", CE0="input", RST0="input")
    return [Absorbed(name, "P", len(moved), str(ce))]


def absorb_output_registers(netlist: dict, module: str = "top", *, block_rams: bool = True,
                            multipliers: bool = False) -> list[Absorbed]:
    """Move the registers after `module`'s DP16KD read ports (`block_rams`) and MULT18X18D
    products (`multipliers`) into those blocks (see the module docstring for when); edits
    `netlist` in place and returns what moved."""
    cells = netlist["modules"][module]["cells"]
    sinks = _sinks(cells)
    ports = _port_bits(netlist["modules"][module])
    kinds = {"DP16KD": _block_ram if block_rams else None, "MULT18X18D": _multiplier if multipliers else None}
    done: list[Absorbed] = []
    for name in sorted(cells):
        step = kinds.get(cells[name]["type"]) if name in cells else None
        if step is not None:
            done += step(cells, name, sinks, ports)
    return done


def absorb_file(path: str | Path, module: str = "top", **kinds: bool) -> list[Absorbed]:
    """:func:`absorb_output_registers` on a Yosys JSON file, rewritten in place."""
    path = Path(path)
    netlist = json.loads(path.read_text())
    done = absorb_output_registers(netlist, module, **kinds)
    path.write_text(json.dumps(netlist))
    return done
