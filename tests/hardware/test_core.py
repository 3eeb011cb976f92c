"""The whole core in Amaranth's simulator against the golden simulator.

Every program runs on ``Device("pysim")`` and ``Device("fsim")``; final DRAM must agree
bit-exactly (a mismatch prints the seed and the first differing byte address), and so
must the golden counters (bytes moved, uop-iterations). Also: the hand-written examples,
the error bit for instructions the core rejects, the watchdog on a deadlocking token
program, and the GEMM core's one-uop-iteration-per-cycle throughput measured from the
RTL's counters.
"""

from __future__ import annotations

import contextlib
import importlib.util

import numpy as np
import pytest
from support import REPO, bad_indices

import vdla.simulator.rtl.pysim  # noqa: F401  (registers the backend)
from vdla import isa
from vdla.config import PRESETS, Config
from vdla.fuzz.randprog import random_program
from vdla.hardware.errors import ErrorCode
from vdla.hardware.testbench import CoreSim
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Program, Stage, UopKernel
from vdla.runtime.backends.pysim import PysimBackend
from vdla.simulator import DeadlockError, ExecutionError, ProgramError, SimulatorError
from vdla.simulator.rtl.pysim import error_class

ROOT = REPO
DRAM = 1 << 18


def _devices(c: Config) -> tuple[Device, Device]:
    return Device("fsim", config=c, dram_size=DRAM), Device("pysim", config=c, dram_size=DRAM)


def _first_diff(a: np.ndarray, b: np.ndarray, base: int) -> str:
    k = int(np.argmax(a != b))
    return f"first differing byte at {base + k:#x}: golden {a[k]:#04x}, RTL {b[k]:#04x}"


def _check_random(name: str, seed: int, **options) -> None:
    c = PRESETS[name].replace(**options)
    case = random_program(c, seed)
    fsim, pysim = _devices(c)
    ref, gold = case.run(fsim)
    got, rtl = case.run(pysim)
    assert np.array_equal(ref, got), f"{name} seed {seed}: {_first_diff(ref, got, case.out_range[0])}"
    assert rtl.counters == gold.counters, f"{name} seed {seed}: counters differ"
    assert rtl.modules["compute"].insns == gold.modules["compute"].insns


#: the default run's random programs on the small Config (``nox -s slow`` adds seeds 15-229)
SMALL_SEEDS = 15


@pytest.mark.parametrize("seed", range(SMALL_SEEDS))
def test_random_programs_small(seed):
    _check_random("small", seed)


@pytest.mark.parametrize("seed", range(3))
def test_random_programs_batch2(seed):
    _check_random("batch2", seed)


@pytest.mark.parametrize(("name", "seed"), [("small", 0), ("batch2", 4)]
                         + [pytest.param("small", seed, marks=pytest.mark.slow) for seed in range(1, 4)])
def test_random_programs_alu_compare_register(name, seed):
    """`Config.alu_compare_register` (MIN/MAX pick in the ALU's second stage) changes neither
    a result nor a cycle."""
    _check_random(name, seed, alu_compare_register=True)


#: (preset, WGT slices, Config.operand_read_register, Config.gemm_sum_register,
#: Config.inp_fanout_register, seed): the board build's options
SLICED_OR_REGISTERED = ([("small", n, False, False, False, seed) for n in (2, 4) for seed in range(4)]
                        + [("batch2", 8, False, False, False, 0)]
                        + [("small", n, True, False, False, seed) for n in (1, 2, 4) for seed in range(4)]
                        + [("batch2", 8, True, False, False, 0), ("batch2", 1, True, False, False, 1)]
                        + [("small", 1, False, True, False, seed) for seed in range(3)]
                        + [("small", 4, True, True, False, seed) for seed in range(4)]
                        + [("batch2", 8, True, True, False, 2)]
                        + [("small", n, True, True, True, seed) for n in (1, 4) for seed in range(3)]
                        + [("small", 2, False, False, True, 5), ("batch2", 8, True, True, True, 3)])


def _first_seed_by_default(cases: list[tuple]) -> list:
    """Each option set's first seed in the default run, its other seeds in ``nox -s slow`` (the
    45 Amaranth simulations took a third of the default run's hardware time)."""
    seen: set[tuple] = set()
    out: list = []
    for c in cases:
        out.append(c if c[:-1] not in seen else pytest.param(*c, marks=pytest.mark.slow))
        seen.add(c[:-1])
    return out


@pytest.mark.parametrize(("name", "slices", "operand_read_register", "gemm_sum_register", "inp_fanout_register", "seed"),
                         _first_seed_by_default(SLICED_OR_REGISTERED))
def test_random_programs_wgt_slices_and_tensor_registers(name, slices, operand_read_register, gemm_sum_register,
                                                         inp_fanout_register, seed):
    """The WGT buffer cut into column slices, each read at its own address register copy,
    and/or the INP/WGT read data registered once more (`Config.operand_read_register`, one
    INP copy per slice), and/or the GEMM adder tree's partial sums registered
    (`Config.gemm_sum_register`), and/or the INP word copied per slice after its read
    register (`Config.inp_fanout_register`, WGT read a cycle later): the same DRAM and
    counters as the golden simulator."""
    c = PRESETS[name].replace(operand_read_register=operand_read_register, gemm_sum_register=gemm_sum_register,
                              inp_fanout_register=inp_fanout_register)
    case = random_program(c, seed)
    fsim = Device("fsim", config=c, dram_size=DRAM)
    pysim = Device("pysim", config=c, dram_size=DRAM, wgt_slices=slices)
    ref, gold = case.run(fsim)
    got, rtl = case.run(pysim)
    if slices > 1:
        assert len(pysim.backend.sim.core.buffers["wgt"]) == slices
    assert gold.counters["gemm_counter"] > 0, f"{name} seed {seed}: no GEMM, nothing read from INP/WGT"
    assert np.array_equal(ref, got), f"{name} slices {slices} seed {seed}: {_first_diff(ref, got, case.out_range[0])}"
    assert rtl.counters == gold.counters


@pytest.mark.parametrize(("name", "slices"), [("small", 3), ("small", 8), ("default", 32), ("batch2", 0)])
def test_wgt_slices_that_do_not_divide_are_refused(name, slices):
    from vdla.hardware.core import Core

    with pytest.raises(ValueError, match=f"wgt_slices={slices}: .*block_out"):
        Core(PRESETS[name], wgt_slices=slices)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SMALL_SEEDS, 230))
def test_random_programs_small_many(seed):
    _check_random("small", seed)


@pytest.mark.slow
@pytest.mark.parametrize("name,seed", [(n, s) for n in ("default", "batch2") for s in range(10)])
def test_random_programs_other_configs(name, seed):
    _check_random(name, seed)


# -- the examples ---------------------------------------------------------------------------------


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_blocked_matmul_example():
    ex = _example("blocked_matmul")
    c = PRESETS["small"]
    m, n, k, shift = 8, 8, 16, 4
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    ref = np.clip((a.astype(np.int64) @ w.astype(np.int64).T) >> shift, -128, 127).astype(np.int8)
    cycles = {}
    for dev in _devices(c):
        a_buf = dev.array(ex.pack(a, c.batch, c.block_in), "A")
        w_buf = dev.array(ex.pack(w, c.block_out, c.block_in), "W")
        c_buf = dev.alloc(m * n, "C")
        prog, _ = ex.matmul_program(c, a_buf, w_buf, c_buf, m, n, k, shift, -128, 127)
        report = dev.run(prog)
        got = c_buf.read(np.int8, (m // c.batch, n // c.block_out, c.batch, c.block_out))
        got = got.transpose(0, 2, 1, 3).reshape(m, n)
        assert np.array_equal(got, ref), f"{dev.name}: blocked matmul differs from numpy"
        cycles[dev.name] = report.cycles
    assert cycles["pysim"] > 0


def test_alu_only_example_logic():
    """examples/alu_only.py's program (residual add, requantise, max-pool) at 8 rows."""
    c = PRESETS["small"]
    rows, pooled = 8, 2
    lanes = (c.batch, c.block_out)
    rng = np.random.default_rng(0)
    x = rng.integers(-3000, 3000, (rows, *lanes), dtype=np.int32)
    y = rng.integers(-3000, 3000, (rows, *lanes), dtype=np.int32)
    z_ref = np.clip(((x.astype(np.int64) + y) * 3) >> 2, 0, 127).astype(np.int8)
    p_ref = x.reshape(pooled, 4, *lanes).max(axis=1).astype(np.int8)
    for dev in _devices(c):
        xb, yb = dev.array(x), dev.array(y)
        zb, pb = dev.alloc(rows * c.out_elem_bytes), dev.alloc(pooled * c.out_elem_bytes)
        X, Y, P = 0, rows, 2 * rows
        s = CommandStream(c, "alu_only")
        s.load_2d(Mem.ACC, X, xb, x_size=rows)
        s.load_2d(Mem.ACC, Y, yb, x_size=rows)
        s.gemm(UopKernel.single(P, loops=(Loop(pooled, dst=1),)), reset=True)
        s.alu(UopKernel.single(P, X, loops=(Loop(pooled, dst=1, src=4),)), AluOp.ADD)
        s.alu(UopKernel.single(P, X + 1, loops=(Loop(pooled, dst=1, src=4), Loop(3, src=1))), AluOp.MAX)
        s.alu(UopKernel.single(X, Y, loops=(Loop(rows, dst=1, src=1),)), AluOp.ADD)
        row = UopKernel.single(X, loops=(Loop(rows, dst=1),))
        for op, imm in ((AluOp.MUL, 3), (AluOp.SHR, 2), (AluOp.MAX, 0), (AluOp.MIN, 127)):
            s.alu(row, op, imm)
        s.dep_push(Stage.COMPUTE, Stage.STORE)
        s.dep_pop(Stage.COMPUTE, Stage.STORE)
        s.store_2d(X, zb, x_size=rows)
        s.store_2d(P, pb, x_size=pooled)
        dev.run(s.finish())
        assert np.array_equal(zb.read(np.int8, (rows, *lanes)), z_ref), dev.name
        assert np.array_equal(pb.read(np.int8, (pooled, *lanes)), p_ref), dev.name


# -- errors, watchdog, restart ------------------------------------------------------------------------


def _raw_program(c: Config, insns: list) -> tuple[np.ndarray, int]:
    """A DRAM image holding `insns` (instruction objects or raw 128-bit ints) at 0x1000."""
    dram = np.zeros(1 << 16, np.uint8)
    words = [w if isinstance(w, int) else isa.encode_one(w, c) for w in insns]
    for i, w in enumerate(words):
        dram[0x1000 + 16 * i : 0x1000 + 16 * (i + 1)] = np.frombuffer(w.to_bytes(16, "little"), np.uint8)
    return dram, len(words)


def _with_field(c: Config, insn, fmt: str, name: str, value: int) -> int:
    """`insn` encoded, with field `name` overwritten by a raw value the encoder would refuse."""
    w = isa.encode_one(insn, c)
    slot = isa.layout(c).formats[fmt].slot(name)
    mask = ((1 << slot.width) - 1) << slot.bit
    return (w & ~mask) | (value << slot.bit)


@pytest.fixture(scope="module")
def small_sim() -> CoreSim:
    return CoreSim(PRESETS["small"], latency=4, watchdog=500)


@pytest.mark.parametrize("bad,code", [
    ("opcode", ErrorCode.ILLEGAL_OPCODE),
    ("load_out", ErrorCode.BAD_MEMORY_TYPE),
    ("load_type7", ErrorCode.BAD_MEMORY_TYPE),
    ("store_inp", ErrorCode.BAD_MEMORY_TYPE),
    ("alu_opcode", ErrorCode.BAD_ALU_OPCODE),
])
def test_rejected_instruction_sets_the_error_bit_and_stops(small_sim, bad, code):
    c = small_sim.config
    nop = isa.nop(Stage.COMPUTE)
    broken = {
        "opcode": _with_field(c, isa.finish(), "finish", "opcode", 6),
        "load_out": isa.encode_one(isa.load(Mem.INP, x_size=1, y_size=1, x_stride=1), c) & ~(0b111 << 7) | (4 << 7),
        "load_type7": _with_field(c, isa.load(Mem.INP, x_size=1, y_size=1, x_stride=1), "mem", "memory_type", 7),
        "store_inp": _with_field(c, isa.store(x_size=1, y_size=1, x_stride=1), "mem", "memory_type", int(Mem.INP)),
        "alu_opcode": _with_field(c, isa.alu(AluOp.ADD, uop_end=1, iter_out=1, iter_in=1), "alu", "alu_opcode", 6),
    }[bad]
    dram, n = _raw_program(c, [nop, nop, broken, nop, isa.finish()])
    res = small_sim.run(dram, 0x1000, n)
    assert res.done and res.error == code and res.error_index == 2, res
    # The core starts cleanly after an error.
    dram, n = _raw_program(c, [nop, isa.finish()])
    res = small_sim.run(dram, 0x1000, n)
    assert res.done and res.error == ErrorCode.NONE and res.counters["compute_insns"] == 2


def test_missing_finish_and_empty_stream_are_errors(small_sim):
    c = small_sim.config
    dram, n = _raw_program(c, [isa.nop(Stage.COMPUTE), isa.nop(Stage.LOAD)])
    res = small_sim.run(dram, 0x1000, n)
    assert res.error == ErrorCode.NO_FINISH and res.error_index == 2
    res = small_sim.run(dram, 0x1000, 0)
    assert res.done and res.error == ErrorCode.NO_FINISH


def test_error_surfaces_as_program_error_on_the_device():
    c = PRESETS["small"]
    dev = Device("pysim", config=c, dram_size=DRAM)
    insns = np.array(isa.encode([isa.nop(Stage.COMPUTE), isa.finish()], c))
    insns[0, 0] = (int(insns[0, 0]) & ~0b111) | 7
    with pytest.raises(ProgramError, match="ILLEGAL_OPCODE at instruction 0"):
        dev.run(Program(c, insns), validate=False)  # the core's own check
    with pytest.raises(ProgramError, match="instruction 0: unknown opcode 7"):  # the golden one, before the core
        dev.run(Program(c, insns))


@pytest.fixture(scope="module")
def small_pair() -> tuple[Device, Device]:
    return _devices(PRESETS["small"])


@pytest.mark.parametrize("name", sorted(bad_indices.cases(PRESETS["small"], 0)))
def test_an_index_past_a_buffer_gets_the_golden_verdict(small_pair, name):
    """Unvalidated, the core finds it itself: the golden simulator's error class and instruction."""
    fsim, pysim = small_pair
    c = fsim.config
    buf = pysim.alloc(bad_indices.data_bytes(c))
    try:
        case = bad_indices.cases(c, buf.addr)[name]
        want = ("ok", None) if case.code is None else (error_class(case.code).__name__, case.index)
        assert bad_indices.verdict(fsim, case.program, validate=True) == want
        with pytest.raises(SimulatorError, match=case.code.name) if case.code else contextlib.nullcontext():
            pysim.run(case.program, validate=False)
        assert bad_indices.verdict(pysim, case.program, validate=False) == want
    finally:
        buf.free()


def test_an_element_past_a_buffer_is_never_written():
    """ACC rows are preloaded; a LOAD and an ALU loop that run past ACC never write the row they would wrap to."""
    c = PRESETS["small"]
    dev = Device("pysim", config=c, dram_size=DRAM)
    rng = np.random.default_rng(5)
    pattern = dev.array(rng.integers(0, 256, c.acc_depth * c.acc_elem_bytes, dtype=np.uint8))
    data = dev.array(np.full(bad_indices.data_bytes(c), 0x22, np.uint8))
    fill = isa.load(Mem.ACC, dram_base=pattern.addr // c.acc_elem_bytes, x_size=c.acc_depth, y_size=1,
                    x_stride=c.acc_depth)
    dev.run(Program(c, isa.encode([fill, isa.finish()], c)))
    sim = dev.backend.sim
    before, out_before = sim.read_buffer("acc"), sim.read_buffer("out")
    cases = bad_indices.cases(c, data.addr)
    with pytest.raises(ProgramError, match="SRAM_RANGE at instruction 1"):
        dev.run(cases["load_acc"].program, validate=False)  # rows acc-1 and acc (= row 0 wrapped)
    after = sim.read_buffer("acc")
    assert after[-1] != before[-1] and after[-1] == int.from_bytes(b"\x22" * c.acc_elem_bytes, "little")
    assert after[:-1] == before[:-1]
    with pytest.raises(ExecutionError, match="UOP_INDEX at instruction 1"):
        dev.run(cases["alu_dst"].program, validate=False)  # ACC[1] += 5, then ACC[acc] (= row 0 wrapped)
    acc, out = sim.read_buffer("acc"), sim.read_buffer("out")
    assert acc[0] == before[0] and out[0] == out_before[0]
    assert acc[2:] == after[2:]  # (row 1 is inside: written or not, depending on when the halt lands)


def test_deadlocking_program_trips_the_watchdog():
    c = PRESETS["small"]
    dev = Device("pysim", config=c, dram_size=DRAM)
    dev.backend = PysimBackend(dev, watchdog=300)
    # Compute pops l2g, which nothing ever pushes.
    prog = Program(c, isa.encode([isa.nop(Stage.COMPUTE, pop_prev=1), isa.finish()], c))
    with pytest.raises(DeadlockError, match="no progress for 300 cycles.*compute: WAIT"):
        dev.run(prog, validate=False)
    # The device still works afterwards.
    assert dev.run(Program(c, isa.encode([isa.finish()], c))).cycles > 0


def test_runs_back_to_back_on_one_device():
    """done is cleared on start; buffers persist across runs, as in fsim."""
    c = PRESETS["small"]
    case = random_program(c, 3)
    fsim, pysim = _devices(c)
    for _ in range(2):
        ref, gold = case.run(fsim)
        got, rtl = case.run(pysim)
        assert np.array_equal(ref, got) and rtl.cycles > 100


# -- throughput ---------------------------------------------------------------------------------------


def _gemm_program(c: Config, inp, wgt, n_iter: int, same_row: bool) -> Program:
    """Load 16 INP and 16 WGT rows, then one GEMM of `n_iter` uop-iterations over them."""
    s = CommandStream(c, "long gemm")
    s.load_2d(Mem.INP, 0, inp, x_size=16)
    s.load_2d(Mem.WGT, 0, wgt, x_size=16)
    s.dep_push(Stage.LOAD, Stage.COMPUTE)
    s.dep_pop(Stage.LOAD, Stage.COMPUTE)
    f = 0 if same_row else 1
    loops = (Loop(n_iter // 16), Loop(16, dst=f, src=1, wgt=1))
    s.gemm(UopKernel.single(0, 0, 0, loops=loops), reset=False)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, inp, x_size=16)  # results over the inputs: compared below
    return s.finish()


@pytest.mark.parametrize("same_row", [False, True], ids=["distinct-rows", "same-row"])
def test_gemm_sustains_one_uop_iteration_per_cycle(same_row):
    """The compute stage's busy cycles grow by exactly one per extra uop-iteration, also when
    every iteration accumulates into the same ACC row (forwarding, no stall)."""
    c = PRESETS["small"]
    rng = np.random.default_rng(1)
    data_inp = rng.integers(-128, 128, 16 * c.inp_elem_bytes, dtype=np.int8)
    data_wgt = rng.integers(-128, 128, 16 * c.wgt_elem_bytes, dtype=np.int8)
    busy = {}
    for n in (256, 1024):
        out = []
        for dev in _devices(c):
            inp, wgt = dev.array(data_inp), dev.array(data_wgt)
            report = dev.run(_gemm_program(c, inp, wgt, n, same_row))
            out.append(inp.read(np.int8))
            assert report.counters["gemm_counter"] == n
        assert np.array_equal(out[0], out[1]), f"{n} iterations: RTL result differs from fsim"
        busy[n] = report.modules["compute"].busy
    per_iter = (busy[1024] - busy[256]) / (1024 - 256)
    assert per_iter == 1.0, f"compute busy grows {per_iter} cycles per uop-iteration"


def _alu_program(c: Config, acc, out, n_iter: int, same_row: bool) -> Program:
    """Load 16 ACC rows, then one tensor-operand ADD of `n_iter` uop-iterations over them:
    same_row: ACC[0] += ACC[j] (every iteration reads the row the one before wrote);
    otherwise ACC[j] += ACC[j] (no two neighbours share a row)."""
    s = CommandStream(c, "long alu")
    s.load_2d(Mem.ACC, 0, acc, x_size=16)
    loops = (Loop(n_iter // 16), Loop(16, dst=0 if same_row else 1, src=1))
    s.alu(UopKernel.single(0, 0, 0, loops=loops), AluOp.ADD)
    s.dep_push(Stage.COMPUTE, Stage.STORE)
    s.dep_pop(Stage.COMPUTE, Stage.STORE)
    s.store_2d(0, out, x_size=16)
    return s.finish()


@pytest.mark.parametrize("same_row", [False, True], ids=["distinct-rows", "same-row"])
def test_alu_waits_only_for_a_row_still_in_flight(same_row):
    """The ALU's result is registered twice before write-back: an iteration that reads the
    row the previous one writes issues `timing.alu_raw_distance` cycles after it, others run
    at one per cycle, and the golden cycle model counts the same; results agree with fsim."""
    c = PRESETS["small"]
    rng = np.random.default_rng(2)
    data_acc = rng.integers(-1000, 1000, 16 * c.acc_elem_bytes // 4, dtype=np.int32)
    growth = []
    for dev in _devices(c):
        busy, outs = {}, []
        for n in (64, 256):
            acc, out = dev.array(data_acc), dev.alloc(16 * c.out_elem_bytes)
            report = dev.run(_alu_program(c, acc, out, n, same_row))
            outs.append(out.read(np.int8))
            assert report.counters["alu_counter"] == n
            busy[n] = report.modules["compute"].busy
        growth.append(((busy[256] - busy[64]) / (256 - 64), outs))
    (g_rate, g_out), (r_rate, r_out) = growth  # fsim, pysim
    for want, got in zip(g_out, r_out):
        assert np.array_equal(want, got), "RTL result differs from fsim"
    # same_row: every iteration but the first reads row 0, which the one before wrote
    expected = float(c.timing.alu_raw_distance if same_row else 1)
    assert r_rate == pytest.approx(expected, abs=0.01) and g_rate == r_rate


READ_REGISTERS = {  # the tensor pipeline's optional read registers
    "acc-read-register": {"acc_read_register": True},
    "no-acc-read-register": {"acc_read_register": False},
    "operand-read-register": {"operand_read_register": True},
    "both-read-registers": {"acc_read_register": False, "operand_read_register": True},
}


@pytest.mark.parametrize("registers", sorted(READ_REGISTERS))
@pytest.mark.parametrize("distance", range(1, 7))
def test_rows_revisited_at_every_forwarding_distance(distance, registers):
    """GEMM and ALU loops that come back to a row `distance` uop-iterations later (and an
    ALU that reads a row written `distance - 1` iterations before): every forwarding source
    of the tensor pipeline, and the ALU's stall, against fsim."""
    c = PRESETS["small"].replace(**READ_REGISTERS[registers])
    rng = np.random.default_rng(distance)
    rows = {Mem.INP: c.inp_elem_bytes, Mem.WGT: c.wgt_elem_bytes, Mem.ACC: c.acc_elem_bytes}
    data = {mem: rng.integers(-100, 100, 8 * n, dtype=np.int8) for mem, n in rows.items()}
    out = []
    for dev in _devices(c):
        s = CommandStream(c, f"rows revisited at distance {distance}")
        for mem in rows:
            s.load_2d(mem, 0, dev.array(data[mem]), x_size=8)
        s.dep_push(Stage.LOAD, Stage.COMPUTE)
        s.dep_pop(Stage.LOAD, Stage.COMPUTE)
        cycle = tuple((r, r, r) for r in range(distance))
        s.gemm(UopKernel(cycle, loops=(Loop(6),)), reset=False)
        shifted = tuple((r, (r + 1) % distance, 0) for r in range(distance))
        s.alu(UopKernel(shifted, loops=(Loop(6),)), AluOp.ADD)
        s.alu(UopKernel(cycle, loops=(Loop(3),)), AluOp.MUL, 3)
        s.dep_push(Stage.COMPUTE, Stage.STORE)
        s.dep_pop(Stage.COMPUTE, Stage.STORE)
        res = dev.alloc(8 * c.out_elem_bytes)
        s.store_2d(0, res, x_size=8)
        dev.run(s.finish())
        out.append(res.read(np.int8))
    assert np.array_equal(out[0], out[1]), _first_diff(out[0], out[1], 0)


@pytest.mark.parametrize("same_row", [False, True], ids=["distinct-rows", "same-row"])
def test_operand_read_register_costs_one_cycle_per_instruction(same_row):
    """`Config.operand_read_register`'s stage: a GEMM and an ALU instruction each keep
    compute busy one cycle longer on the RTL, and the golden cycle model
    (`pipeline_latency`) says the same; the results do not change."""
    base = PRESETS["small"]
    rng = np.random.default_rng(5)
    data_inp = rng.integers(-100, 100, 16 * base.inp_elem_bytes, dtype=np.int8)
    data_wgt = rng.integers(-100, 100, 16 * base.wgt_elem_bytes, dtype=np.int8)
    data_acc = rng.integers(-1000, 1000, 16 * base.acc_elem_bytes // 4, dtype=np.int32)
    busy, outs = {}, {}
    for extra in (False, True):
        c = base.replace(operand_read_register=extra)
        for backend, dev in zip(("fsim", "pysim"), _devices(c)):
            inp = dev.array(data_inp)
            gemm = dev.run(_gemm_program(c, inp, dev.array(data_wgt), 32, same_row))
            out = dev.alloc(16 * c.out_elem_bytes)
            alu = dev.run(_alu_program(c, dev.array(data_acc), out, 32, same_row))
            busy[extra, backend] = (gemm.modules["compute"].busy, alu.modules["compute"].busy)
            outs[extra, backend] = (inp.read(np.int8), out.read(np.int8))
    for backend in ("fsim", "pysim"):
        grew = tuple(b - a for a, b in zip(busy[False, backend], busy[True, backend]))
        assert grew == (1, 1), f"{backend}: compute busy (GEMM, ALU) {busy[False, backend]} -> {busy[True, backend]}"
        for without, with_ in zip(outs[False, backend], outs[True, backend]):
            assert np.array_equal(without, with_), f"{backend}: the extra register changed a result"
