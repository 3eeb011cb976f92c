"""CFG, the GEMM epilogue, GEMM init and window mode on the core in Amaranth's simulator, against the
golden simulator (`isa.SEMANTIC_CHOICES`, vdla.simulator.machine).

Each case of `CASES` loads random INP, WGT and ACC rows, runs a few CFG / GEMM / ALU
instructions and stores every OUT row; fsim and pysim must leave the same DRAM and the same
ACC and OUT buffers, bit for bit. The cases cover the epilogue (off, shifts 0/7/31, clip
bounds negative or crossed, a reset's zeros, ALU writes untouched, a CFG between GEMMs) and
init (1x1 kernels with a bias row per weight, a copy with reset, a row written twice, init
rows that the same instruction writes at every forwarding distance, under each of the
tensor pipeline's optional registers) and window mode (warm-up 0 ... block_in - 1, several
uops and passes, init and the epilogue with it, rows hit again at distances 1-6 with warm-up
iterations among the writers, reset GEMMs and the ALU unaffected; under each optional
register and with batch 2). Then: an init row past ACC (UOP_INDEX, the golden
ExecutionError), CFG state gone after FINISH and at the next run, CFG's tokens, the
epilogue, init and the window costing no cycle, and no window logic where the Config has none.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from support.cfg_cases import (
    ACC_ROWS,
    CASES,
    ROWS,
    buffers,
    cfg_between_gemms,
    data,
    gemm_under,
    init_chain,
    init_one_by_one,
    init_row_ahead,
    run,
    window_forwarding,
    window_init,
    window_passes,
    window_warmup_max,
)

import vdla.simulator.rtl.pysim  # noqa: F401  (registers the backend)
from vdla import isa
from vdla.config import PRESETS, Config
from vdla.runtime import CommandStream, Device, Loop, Mem, Program, Stage, UopKernel
from vdla.simulator import ExecutionError, ProgramError
from vdla.simulator.golden import execute

DRAM = 1 << 18


def _devices(c: Config, **pysim_options) -> tuple[Device, Device]:
    return Device("fsim", config=c, dram_size=DRAM), Device("pysim", config=c, dram_size=DRAM, **pysim_options)


def _run_both(c: Config, build: Callable[[CommandStream], None], seed: int = 0, **pysim_options) -> None:
    """`support.cfg_cases.run` on fsim and pysim: the same stored OUT rows, ACC and OUT
    buffers and counters."""
    results = []
    for dev in _devices(c, **pysim_options):
        out, report = run(dev, build, seed)
        results.append((out, buffers(dev), report))
    (want, want_bufs, gold), (got, got_bufs, rtl) = results
    for kind in ("acc", "out"):
        diff = [i for i, (a, b) in enumerate(zip(want_bufs[kind], got_bufs[kind])) if a != b]
        assert not diff, (f"{kind.upper()} rows {diff[:8]} differ: golden {want_bufs[kind][diff[0]]:#x}, "
                          f"RTL {got_bufs[kind][diff[0]]:#x}")
    assert np.array_equal(want, got), f"stored OUT differs at byte {int(np.argmax(want != got))}"
    assert rtl.counters == gold.counters


@pytest.mark.parametrize("name", sorted(CASES))
def test_cfg_case_matches_golden(name):
    _run_both(PRESETS["small"], CASES[name], seed=len(name))


#: the tensor pipeline's optional registers (each moves the ACC read against the writes)
#: and WGT slices: (Config options, pysim options)
VARIANTS = {
    "no-acc-read-register": ({"acc_read_register": False}, {}),
    "operand-read-register": ({"operand_read_register": True}, {}),
    "all-registers-sliced": ({"operand_read_register": True, "gemm_sum_register": True, "inp_fanout_register": True},
                             {"wgt_slices": 2}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_init_forwarding_under_each_tensor_register(variant):
    options, pysim_options = VARIANTS[variant]
    c = PRESETS["small"].replace(**options)

    def build(s: CommandStream) -> None:
        init_row_ahead(s)
        cfg_between_gemms(s)
        for k, d in enumerate((1, 2, 3, 4)):  # apart: each chain's rows stay as it left them
            init_chain(d, d % 2 == 0, base=16 * k, n=10)(s)

    _run_both(c, build, seed=3, **pysim_options)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_window_under_each_tensor_register(variant):
    """Window mode with each of the optional registers between the INP read and the GEMM
    array's lane copies (its push/first flags must go with the INP word) and between the
    ACC read and the writes (the warm-up iterations' writes must not be forwarded)."""
    options, pysim_options = VARIANTS[variant]
    c = PRESETS["small"].replace(**options)

    def build(s: CommandStream) -> None:
        window_passes(s)
        window_forwarding(s)
        window_init(s)

    _run_both(c, build, seed=4, **pysim_options)


def test_batch2_window():
    """Two batch rows: lane (b, o) takes element (b, o) of each row of its window; warm-up up to
    block_in - 1 = 7."""
    def build(s: CommandStream) -> None:
        window_passes(s)
        window_warmup_max(s)
        window_forwarding(s)

    _run_both(PRESETS["batch2"], build, seed=5)


def test_a_config_without_the_window_builds_none_of_it():
    """gemm_window off (the board configs): the GEMM array has no window ports, and neither it
    nor the tensor pipeline has a window register."""
    from amaranth.back import rtlil

    from vdla.hardware.tensor import TensorPipeline

    c = PRESETS["small"]
    text = {cfg.gemm_window: rtlil.convert(TensorPipeline(cfg)) for cfg in (c, c.replace(gemm_window=False))}
    port = re.compile(r"input \d+ +\\push$", re.M)  # the GEMM array's
    assert port.search(text[True]) and not port.search(text[False])
    for name in ("win_0_0", "window_q", "s1_first", "s1_live", "s3_live"):
        assert name in text[True] and name not in text[False], name


def test_batch2_epilogue_and_init():
    """Two batch rows per element (each lane shifted and clipped on its own)."""
    def build(s: CommandStream) -> None:
        init_one_by_one(s)
        init_chain(2, False)(s)
        gemm_under(5, -60, 70)(s)

    _run_both(PRESETS["batch2"], build, seed=9)


# -- errors, runs, tokens, cycles -----------------------------------------------------------------


def _init_gemm(c: Config, init_base: int) -> Program:
    """A reset + init GEMM whose third outer iteration's init row is init_base + 2 (instruction 2)."""
    insns = [isa.load(Mem.UOP, x_size=1, y_size=1, x_stride=1), isa.cfg(init_base=init_base),
             isa.gemm(init=1, reset=1, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=1, wgt_factor_out=1),
             isa.finish()]
    return Program.from_words(c, isa.encode(insns, c), isa.encode_uops([isa.Uop(0, 0, 0)], c), name="init-gemm")


def test_an_init_row_past_acc_is_a_uop_index_error():
    """Unvalidated, the core finds it itself (UOP_INDEX); validated, every device gives the
    golden simulator's ExecutionError first. One row lower, the same GEMM runs."""
    c = PRESETS["small"]
    fsim, pysim = _devices(c)
    past = _init_gemm(c, c.acc_depth - 2)
    with pytest.raises(ExecutionError, match=r"instruction 2 \(GEMM\): ACC \(init: init_base \+ WGT index\) index "
                                             rf"{c.acc_depth} is past the buffer"):
        fsim.run(past)
    with pytest.raises(ExecutionError, match=r"instruction 2 \(GEMM\): ACC \(init"):
        pysim.run(past)  # the validator's verdict, before the core runs
    with pytest.raises(ExecutionError, match="UOP_INDEX at instruction 2"):
        pysim.run(past, validate=False)
    inside = _init_gemm(c, c.acc_depth - 3)
    for dev in (fsim, pysim):
        dev.run(inside)
    assert buffers(fsim) == buffers(pysim)


def test_cfg_state_ends_with_finish_and_with_each_run():
    """A run's CFG does not reach the next run: after FINISH, nor after a run that stopped on an
    error before its FINISH (the datapath's reset at start)."""
    c = PRESETS["small"]
    for dev_pair in [_devices(c)]:
        bufs = []
        for dev in dev_pair:
            rows = data(c, 1)
            first = CommandStream(c, "cfg then finish")
            first.load_2d(Mem.ACC, 0, dev.array(rows[Mem.ACC]), x_size=ACC_ROWS)
            first.cfg(init_base=30, shift=5, clip_lo=-1, clip_hi=1, epilogue=True)
            dev.run(first.finish())
            # a run that sets CFG and then stops on an error before its FINISH (a uop range past
            # the buffer: the core refuses the GEMM after the CFG has run; fsim, before the run)
            bad_range = isa.gemm(uop_bgn=0, uop_end=c.uop_depth + 1, iter_out=1, iter_in=1)
            failing = [isa.cfg(init_base=30, shift=5, clip_lo=-1, clip_hi=1, epilogue=1), bad_range, isa.finish()]
            with pytest.raises(ProgramError):
                dev.run(Program(c, isa.encode(failing, c)), validate=False)
            second = CommandStream(c, "no cfg")
            second.gemm(UopKernel.single(0, 0, 0, loops=(Loop(8, dst=1, src=1, wgt=1),)), init=True)  # init_base 0
            second.gemm(UopKernel.single(8, 0, 0, loops=(Loop(8, dst=1, src=1, wgt=1),)))  # narrowed
            dev.run(second.finish())
            bufs.append(buffers(dev))
        assert bufs[0] == bufs[1]


def test_cfg_moves_tokens_like_any_compute_instruction():
    c = PRESETS["small"]
    reports = []
    for dev in _devices(c):
        insns = [isa.nop(Stage.LOAD, push_next=1),
                 isa.cfg(pop_prev=1, push_next=1, shift=2, epilogue=1, clip_lo=-128, clip_hi=127),
                 isa.store(pop_prev=1, push_prev=1),
                 isa.cfg(pop_next=1, push_prev=1),
                 isa.nop(Stage.LOAD, pop_next=1),
                 isa.finish()]
        reports.append(dev.run(Program(c, isa.encode(insns, c))))
    gold, rtl = reports
    assert rtl.modules["compute"].insns == gold.modules["compute"].insns == 3  # two CFGs and FINISH
    assert rtl.modules["load"].insns == gold.modules["load"].insns == 2


@pytest.mark.parametrize("same_row", [False, True], ids=["distinct-rows", "same-row"])
def test_epilogue_init_and_window_cost_no_cycle(same_row):
    """A GEMM under the epilogue, with init, or in window mode (warm-up iterations included)
    keeps compute busy exactly as long as a plain one
    (OUT is written a cycle after ACC, in the cycle the pipeline drains), on the RTL and in
    the golden cycle model; a CFG costs what a NOP does."""
    c = PRESETS["small"]
    busy = {}
    for mode in ("plain", "cfg-nop", "epilogue-init", "window"):
        for dev in _devices(c):
            rows = data(c, 2)
            s = CommandStream(c, mode)
            s.load_2d(Mem.INP, 0, dev.array(rows[Mem.INP]), x_size=ROWS)
            s.load_2d(Mem.WGT, 0, dev.array(rows[Mem.WGT]), x_size=ROWS)
            s.dep_push(Stage.LOAD, Stage.COMPUTE)
            s.dep_pop(Stage.LOAD, Stage.COMPUTE)
            if mode == "plain":
                s.nop(Stage.COMPUTE)
            elif mode == "window":
                s.cfg(window=True, warmup=2)
            else:
                s.cfg(init_base=16, shift=3, clip_lo=-7, clip_hi=7, epilogue=mode != "cfg-nop")
            loops = (Loop(4), Loop(ROWS, dst=0 if same_row else 1, src=1, wgt=1))
            s.gemm(UopKernel.single(0, 0, 0, loops=loops), init=mode == "epilogue-init")
            busy[mode, dev.name] = dev.run(s.finish()).modules["compute"].busy
    for backend in ("fsim", "pysim"):
        assert len({busy[mode, backend] for mode in ("plain", "cfg-nop", "epilogue-init", "window")}) == 1, busy


def test_a_core_without_the_epilogue_refuses_cfg_and_init():
    """A Config with ``gemm_epilogue`` off (a board with no room, the iCEBreaker) has VTA's layout:
    its GEMM has no init bit (encoding one is an error naming the field), and fetch refuses CFG
    as ILLEGAL_OPCODE, naming the instruction, as the golden simulator's check does; a plain
    GEMM still runs."""
    from vdla.hardware.errors import ErrorCode
    from vdla.hardware.testbench import CoreSim

    c = PRESETS["small"].replace(name="small-no-epilogue", gemm_epilogue=False)
    assert "init" not in {s.name for s in isa.layout(c).formats["gemm"].slots}
    with pytest.raises(isa.FieldRangeError, match=r"field 'init' = 1 does not exist on this config \(Config.gemm_epilogue"):
        isa.encode([isa.gemm(reset=1, init=1, uop_end=1, iter_out=1, iter_in=1)], c)
    sim = CoreSim(c, latency=4, watchdog=500)
    plain = isa.gemm(reset=1, uop_end=1, iter_out=1, iter_in=1)
    program = [isa.nop(Stage.COMPUTE), plain, isa.cfg(epilogue=1), isa.finish()]
    dram, n = _raw_image(c, program)
    res = sim.run(dram, 0x1000, n)
    assert res.done and res.error == ErrorCode.ILLEGAL_OPCODE and res.error_index == 2, res
    with pytest.raises(ProgramError, match=r"instruction 2 .*has no GEMM epilogue"):
        execute(c, program, np.zeros(1 << 12, np.uint8))
    dram, n = _raw_image(c, [plain, isa.finish()])
    res = sim.run(dram, 0x1000, n)
    assert res.done and res.error == ErrorCode.NONE and res.counters["compute_insns"] == 2


def _raw_image(c: Config, insns: list) -> tuple[np.ndarray, int]:
    dram = np.zeros(1 << 16, np.uint8)
    for i, insn in enumerate(insns):
        word = isa.encode_one(insn, c)
        dram[0x1000 + 16 * i : 0x1000 + 16 * (i + 1)] = np.frombuffer(word.to_bytes(16, "little"), np.uint8)
    return dram, len(insns)
