"""Block-RAM output registers on ECP5: a netlist step between Yosys and nextpnr.

Yosys maps every read port onto a DP16KD with its output register off (``REGMODE NOREG``),
so a register the RTL puts right after a buffer's read (the ACC read register, the INP/WGT
operand read registers) stays a fabric flip-flop, and the path into it still starts with
the block RAM's slow clock-to-out (5.8 ns at speed grade 6, nextpnr's figure: a third of a
75 MHz cycle). Each DP16KD port has its own output register, which is the same circuit:
a D flip-flop on the port's clock, enabled by ``OCEx``, reset by ``RSTx``, powering up at 0.

:func:`absorb_output_registers` moves such flip-flops into their block RAM's port on the
Yosys JSON netlist: the port's data outputs then drive the nets the flip-flops drove,
``REGMODE_x`` becomes ``OUTREG`` and ``OCEx`` takes the flip-flops' enable. A port is
moved only where that is the same circuit, bit for bit and cycle for cycle:

- every connected data output drives exactly one cell pin, a ``TRELLIS_FF``'s ``DI``;
- those flip-flops share the port's clock net (both non-inverted) and one enable (or none,
  ``CEMUX 1``), have no set/reset (``LSR`` constant 0), power up at 0 (``REGSET RESET``,
  as the block RAM's register does) and carry no ``keep`` (copies the board's Yosys
  script keeps apart on purpose);
- the port's own output-latch reset ``RSTx`` is constant 0 and its ``OCEx`` is 1.

Anything else is left as it was. The board build (:mod:`.build`) runs the step where a
board sets ``bram_output_registers`` and reports what it moved.
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
    """One block-RAM port whose read register moved inside it."""

    cell: str
    port: str  # "A" or "B"
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


def _register(cells: dict, ram: dict, port: str, pins: list[str], covers: tuple[str, ...], sinks: dict,
              ports: set[int]) -> tuple[dict[str, str], str] | None:
    """The flip-flops (data output pin -> flip-flop cell) that can move into `ram`'s read `port`
    and their enable ("1" or a net bit), or None."""
    p = ram["parameters"]
    conn = ram["connections"]
    clocks = {tuple(conn.get(f"CLK{c}", [])) for c in covers}
    if len(clocks) != 1 or not _is_const(conn.get(f"OCE{port}", ["1"]), "1"):
        return None
    clock = list(clocks.pop())
    if not clock or not isinstance(clock[0], int):
        return None
    for c in covers:
        if (p.get(f"REGMODE_{c}", "NOREG") != "NOREG" or p.get(f"CLK{c}MUX", f"CLK{c}") != f"CLK{c}"
                or not _is_const(conn.get(f"RST{c}", ["0"]), "0")):
            return None
    moved: dict[str, str] = {}
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
        if (ff["type"] != "TRELLIS_FF" or fc.get("CLK") != clock or fp.get("CLKMUX", "CLK") != "CLK"
                or not _is_const(fc.get("LSR", ["0"]), "0") or fp.get("REGSET", "RESET") != "RESET"
                or fp.get("GSR", "DISABLED") != "DISABLED" or ff.get("attributes", {}).get("keep")):
            return None
        cemux = fp.get("CEMUX", _CE_ALWAYS).strip()
        if cemux == _CE_ALWAYS or _is_const(fc.get("CE", ["1"]), "1"):
            enables.add("1")
        elif cemux == "CE" and isinstance(fc["CE"][0], int):
            enables.add(fc["CE"][0])
        else:  # an inverted enable: the block RAM's OCE has no inversion to match
            return None
        moved[pin] = s[0][0]
    if not moved or len(enables) != 1:
        return None
    return moved, enables.pop()


def absorb_output_registers(netlist: dict, module: str = "top") -> list[Absorbed]:
    """Move the read registers after `module`'s DP16KD ports into the ports (see the module
    docstring for when); edits `netlist` in place and returns what moved."""
    cells = netlist["modules"][module]["cells"]
    sinks = _sinks(cells)
    ports = _port_bits(netlist["modules"][module])
    done: list[Absorbed] = []
    for name in sorted(n for n, c in cells.items() if c["type"] == "DP16KD"):
        ram = cells[name]
        for port, pins, covers in _read_ports(ram):
            found = _register(cells, ram, port, pins, covers, sinks, ports)
            if found is None:
                continue
            moved, ce = found
            for pin, ff in moved.items():
                ram["connections"][pin] = list(cells[ff]["connections"]["Q"])
                del cells[ff]
            for c in covers:  # in the 36-bit mode both halves' registers, whichever OCE drives them
                ram["parameters"][f"REGMODE_{c}"] = "OUTREG"
                ram["connections"][f"OCE{c}"] = ["1"] if ce == "1" else [ce]
            done.append(Absorbed(name, port, len(moved), str(ce)))
    return done


def absorb_file(path: str | Path, module: str = "top") -> list[Absorbed]:
    """:func:`absorb_output_registers` on a Yosys JSON file, rewritten in place."""
    path = Path(path)
    netlist = json.loads(path.read_text())
    done = absorb_output_registers(netlist, module)
    path.write_text(json.dumps(netlist))
    return done
