"""Registers of ECP5 block RAMs and multipliers: a netlist step between Yosys and nextpnr.

Yosys maps every read port onto a DP16KD with its output register off (``REGMODE NOREG``),
so a register the RTL puts right after a buffer's read (the ACC read register, the INP/WGT
operand read registers) stays a fabric flip-flop, and the path into it still starts with
the block RAM's slow clock-to-out (5.8 ns at speed grade 6, nextpnr's figure: a third of a
75 MHz cycle). Likewise each GEMM product register after a MULT18X18D, and each operand
register before one, is a fabric flip-flop, one route away from the multiplier. Each
DP16KD port has an output register of its own and each MULT18X18D input and output
registers, which are the same circuit: a D flip-flop on one clock with an enable (DP16KD
``OCEx``; MULT18X18D ``CE0``..``CE3``) and a reset (``RSTx``, ``RST0``), powering up at 0.

:func:`absorb_output_registers` moves such flip-flops into their block on the Yosys JSON
netlist: the block's outputs then drive the nets the flip-flops drove (or its operand pins
read what the flip-flops read), its register is switched on (``REGMODE_x OUTREG``;
``REG_OUTPUT_CLK`` / ``REG_INPUTA_CLK`` / ``REG_INPUTB_CLK CLK0``) and takes the flip-flops'
clock and enable. A block is changed only where that is the same circuit, bit for bit and
cycle for cycle:

- a block RAM's or multiplier's every connected data output drives exactly one cell pin, a
  ``TRELLIS_FF``'s ``DI``; a multiplier operand's every non-constant pin is driven by a
  ``TRELLIS_FF`` whose output feeds nothing but that operand's pins (its sign extension);
- those flip-flops share one clock (a block RAM's port clock, both non-inverted; one clock
  per multiplier) and one enable per register (or none, ``CEMUX 1``), have no set/reset
  (``LSR`` constant 0) and power up at 0 (``REGSET RESET``);
- a flip-flop after a block carries no ``keep`` (copies the board's Yosys script keeps apart
  on purpose); one before a multiplier may (the GEMM lanes' INP copies): inside its
  multiplier it stays apart all the same;
- the block RAM port's output-latch reset ``RSTx`` is constant 0 and its ``OCEx`` is 1; the
  multiplier has no register in use and a constant signedness (Yosys maps it so).

Anything else is left as it was. The board build (:mod:`.build`) runs the step where a
board sets ``bram_output_registers`` / ``dsp_output_registers`` / ``dsp_input_registers``
and reports what it moved.
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
    port: str  # "A" or "B" (a block RAM's read port or a multiplier's operand), "P" (a product)
    bits: int  # flip-flops removed
    enable: str  # "1" (always) or the enable net's bit number
    #: Which register: "block_ram_output", "multiplier_output" or "multiplier_input".
    kind: str = "block_ram_output"


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


def _ff_timing(ff: dict, *, allow_keep: bool = False) -> tuple[int, str] | None:
    """A flip-flop's clock net and enable ("1" or a net bit), if a hard block's register can
    stand in for it: a ``TRELLIS_FF`` on a rising edge, no set/reset (``LSR`` 0), power-up 0,
    not inverted-enabled, and no ``keep`` unless `allow_keep`; None otherwise."""
    fp, fc = ff["parameters"], ff["connections"]
    if (ff["type"] != "TRELLIS_FF" or not isinstance(fc.get("CLK", [None])[0], int)
            or fp.get("CLKMUX", "CLK") != "CLK" or not _is_const(fc.get("LSR", ["0"]), "0")
            or fp.get("REGSET", "RESET") != "RESET" or fp.get("GSR", "DISABLED") != "DISABLED"
            or (ff.get("attributes", {}).get("keep") and not allow_keep)):
        return None
    cemux = fp.get("CEMUX", _CE_ALWAYS).strip()
    if cemux == _CE_ALWAYS or _is_const(fc.get("CE", ["1"]), "1"):
        return fc["CLK"][0], "1"
    if cemux == "CE" and isinstance(fc["CE"][0], int):
        return fc["CLK"][0], fc["CE"][0]
    return None  # an inverted enable: the hard block's enable has no inversion to match


def _shared_timing(moved: dict[str, str], timings: list[tuple[int, str]],
                   clock: list | None = None) -> tuple[dict[str, str], list, str] | None:
    """`moved` (pin -> flip-flop) with its flip-flops' one clock net and one enable, if they
    share them (and the clock is `clock`, where given); None if nothing moves or they differ."""
    clocks, enables = {c for c, _ in timings}, {e for _, e in timings}
    if not moved or len(enables) != 1 or len(clocks) != 1 or (clock is not None and [*clocks] != clock):
        return None
    return moved, [clocks.pop()], enables.pop()


def _flip_flops(cells: dict, conn: dict, pins: list[str], clock: list | None, sinks: dict,
                ports: set[int]) -> tuple[dict[str, str], list, str] | None:
    """The flip-flops the data `pins` (of a cell with connections `conn`) feed, if they can
    move into it: pin -> flip-flop cell, their clock net, their enable ("1" or a net bit);
    None where they cannot. `clock`: the net they must share (None: any one net)."""
    moved: dict[str, str] = {}
    timings: list[tuple[int, str]] = []
    for pin in pins:
        bits = conn.get(pin, [])
        if not bits or not isinstance(bits[0], int) or not sinks.get(bits[0]):
            continue  # unused output bit: registered or not, nothing reads it
        s = sinks[bits[0]]
        if len(s) != 1 or s[0][1] != "DI" or bits[0] in ports or s[0][0] not in cells:
            return None  # (not in cells: gone into another multiplier's input register already)
        timing = _ff_timing(cells[s[0][0]])
        if timing is None:
            return None
        timings.append(timing)
        moved[pin] = s[0][0]
    return _shared_timing(moved, timings, clock)


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
        done.append(Absorbed(name, port, len(moved), str(ce), "block_ram_output"))
    return done


#: The MULT18X18D's register clock selections; Yosys leaves them all NONE.
_DSP_CLOCKS = ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_INPUTC_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK")
#: The MULT18X18D's clock enables (CE0..CE3): at most this many different enables per block.
_DSP_ENABLES = 4


def _drivers(cells: dict) -> dict[int, tuple[str, str]]:
    """Net bit -> the (cell, output port) driving it."""
    return {b: (name, port) for name, c in cells.items() for port, bits in c["connections"].items()
            if c.get("port_directions", {}).get(port) == "output" for b in bits if isinstance(b, int)}


def _operand(cells: dict, name: str, operand: str, sinks: dict, drivers: dict,
             ports: set[int]) -> tuple[dict[str, str], list, str] | None:
    """The flip-flops driving the multiplier `name`'s `operand` ("A" or "B") pins, if they can
    move into its input register: pin -> flip-flop, their clock, their enable; None where not.
    Each flip-flop must feed nothing but this operand's pins (its sign extension included). A
    ``keep`` copy may move: inside its multiplier it stays apart from the others."""
    conn = cells[name]["connections"]
    moved: dict[str, str] = {}
    timings: list[tuple[int, str]] = []
    for pin in (f"{operand}{i}" for i in range(_DO_BITS)):
        bits = conn.get(pin, [])
        if not bits or not isinstance(bits[0], int):
            continue  # a constant bit: nothing to register
        ff, out = drivers.get(bits[0], (None, None))
        if (ff not in cells or out != "Q" or bits[0] in ports or any(
                c != name or not (p[0] == operand and p[1:].isdigit()) for c, p in sinks.get(bits[0], []))):
            return None
        timing = _ff_timing(cells[ff], allow_keep=True)
        if timing is None:
            return None
        timings.append(timing)
        moved[pin] = ff
    return _shared_timing(moved, timings)


def _multiplier(cells: dict, name: str, sinks: dict, drivers: dict, ports: set[int], *,
                inputs: bool, output: bool) -> list[Absorbed]:
    """Move the flip-flops before the multiplier `name`'s operands (`inputs`) and after its
    product (`output`) into its registers: all on one clock (CLK0), each on its own or a
    shared clock enable (CE0..CE3), reset RST0 tied to 0."""
    dsp = cells[name]
    p, conn = dsp["parameters"], dsp["connections"]
    if any(p.get(k, "NONE") != "NONE" for k in _DSP_CLOCKS) or any(
            isinstance(b, int) for k in ("CLK0", "CE0", "CE1", "CE2", "CE3", "RST0", "SIGNEDA", "SIGNEDB")
            for b in conn.get(k, [])):
        return []
    found = []  # (register, its Absorbed port, pin -> flip-flop, clock, enable)
    if inputs:
        found += [(f"INPUT{o}", o, *f) for o in "AB"
                  if (f := _operand(cells, name, o, sinks, drivers, ports)) is not None]
    if output:
        f = _flip_flops(cells, conn, [f"P{i}" for i in range(36)], None, sinks, ports)
        found += [("OUTPUT", "P", *f)] if f is not None else []
    done: list[Absorbed] = []
    enables: list[str] = []
    taken: set[str] = set()
    for register, port, moved, clock, ce in found:
        if clock != found[0][3] or taken & {*moved.values()} or (ce not in enables and len(enables) == _DSP_ENABLES):
            continue  # one clock per block; a flip-flop both after the product and before an operand
        enables += [ce] if ce not in enables else []
        taken |= {*moved.values()}
        if port == "P":
            _take(cells, dsp, moved)
        else:  # each operand pin now reads what its flip-flop read
            for pin, ff in moved.items():
                conn[pin] = list(cells[ff]["connections"]["DI"])
            for ff in {*moved.values()}:
                del cells[ff]
        p.update({f"REG_{register}_CLK": "CLK0", f"REG_{register}_CE": f"CE{enables.index(ce)}",
                  f"REG_{register}_RST": "RST0"})
        done.append(Absorbed(name, port, len({*moved.values()}), str(ce),
                             "multiplier_output" if port == "P" else "multiplier_input"))
    if done:
        conn.update(CLK0=found[0][3], RST0=["0"], **{f"CE{i}": ["1"] if ce == "1" else [ce] for i, ce in enumerate(enables)})
        dsp.setdefault("port_directions", {}).update(CLK0="input", RST0="input", **{f"CE{i}": "input" for i in range(len(enables))})
    return done


def absorb_output_registers(netlist: dict, module: str = "top", *, block_rams: bool = True,
                            multipliers: bool = False, multiplier_inputs: bool = False) -> list[Absorbed]:
    """Move the registers after `module`'s DP16KD read ports (`block_rams`) and MULT18X18D
    products (`multipliers`), and before the MULT18X18D operands (`multiplier_inputs`), into
    those blocks (see the module docstring for when); edits `netlist` in place and returns
    what moved."""
    cells = netlist["modules"][module]["cells"]
    ports = _port_bits(netlist["modules"][module])
    done: list[Absorbed] = []
    if block_rams:
        sinks = _sinks(cells)
        for name in sorted(n for n, c in cells.items() if c["type"] == "DP16KD"):  # before any flip-flop goes
            done += _block_ram(cells, name, sinks, ports)
    if multipliers or multiplier_inputs:  # on the netlist as the block RAMs left it
        sinks, drivers = _sinks(cells), _drivers(cells)
        for name in sorted(n for n, c in cells.items() if c["type"] == "MULT18X18D"):
            done += _multiplier(cells, name, sinks, drivers, ports, inputs=multiplier_inputs, output=multipliers)
    return done


def absorb_file(path: str | Path, module: str = "top", **kinds: bool) -> list[Absorbed]:
    """:func:`absorb_output_registers` on a Yosys JSON file, rewritten in place."""
    path = Path(path)
    netlist = json.loads(path.read_text())
    done = absorb_output_registers(netlist, module, **kinds)
    path.write_text(json.dumps(netlist))
    return done
