"""CFG, the GEMM epilogue and GEMM init on the core in Amaranth's simulator, against the
golden simulator (`isa.SEMANTIC_CHOICES`, vdla.simulator.machine).

Each case of `CASES` loads random INP, WGT and ACC rows, runs a few CFG / GEMM / ALU
instructions and stores every OUT row; fsim and pysim must leave the same DRAM and the same
ACC and OUT buffers, bit for bit. The cases cover the epilogue (off, shifts 0/7/31, clip
bounds negative or crossed, a reset's zeros, ALU writes untouched, a CFG between GEMMs) and
init (1x1 kernels with a bias row per weight, a copy with reset, a row written twice, init
rows that the same instruction writes at every forwarding distance, under each of the
tensor pipeline's optional registers). Then: an init row past ACC (UOP_INDEX, the golden
ExecutionError), CFG state gone after FINISH and at the next run, CFG's tokens, and the
epilogue and init costing no cycle.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import vdla.simulator.rtl.pysim  # noqa: F401  (registers the backend)
from vdla import isa
from vdla.config import PRESETS, Config
from vdla.runtime import AluOp, CommandStream, Device, Loop, Mem, Program, Stage, UopKernel
from vdla.simulator import ExecutionError, ProgramError

DRAM = 1 << 18
ROWS = 16  # INP and WGT rows loaded
ACC_ROWS = 64  # ACC rows loaded (and OUT rows stored)


def _devices(c: Config, **pysim_options) -> tuple[Device, Device]:
    return Device("fsim", config=c, dram_size=DRAM), Device("pysim", config=c, dram_size=DRAM, **pysim_options)


def _buffers(dev: Device) -> dict[str, list[int]]:
    """The ACC and OUT buffers' rows as raw integers (pysim's `read_buffer` form)."""
    if dev.name == "pysim":
        sim = dev.backend.sim
        return {kind: sim.read_buffer(kind) for kind in ("acc", "out")}
    m, c = dev.backend.machine, dev.config
    acc = m.acc.astype(f"<i{c.acc_width // 8}")
    out = m.out.astype(f"<i{c.out_width // 8}")
    return {kind: [int.from_bytes(row.tobytes(), "little") for row in rows] for kind, rows in (("acc", acc), ("out", out))}


def _data(c: Config, seed: int) -> dict[Mem, np.ndarray]:
    """Random rows: INP and WGT over all of int8, ACC at every scale (so shifts 0 ... 31 and
    the clip bounds all matter)."""
    rng = np.random.default_rng(seed)
    lanes = ACC_ROWS * c.batch * c.block_out
    scale = 1 << rng.integers(0, c.acc_width - 1, lanes)
    acc = (rng.integers(-(1 << 30), 1 << 30, lanes) % scale * rng.choice([-1, 1], lanes)).astype(np.int32)
    return {
        Mem.INP: rng.integers(-128, 128, ROWS * c.inp_elem_bytes, dtype=np.int8),
        Mem.WGT: rng.integers(-128, 128, ROWS * c.wgt_elem_bytes, dtype=np.int8),
        Mem.ACC: acc,
    }


def _run_both(c: Config, build: Callable[[CommandStream], None], seed: int = 0, **pysim_options) -> None:
    """`build`'s instructions after the loads, then every OUT row stored: fsim and pysim agree."""
    results = []
    for dev in _devices(c, **pysim_options):
        data = _data(c, seed)
        s = CommandStream(c, build.__name__)
        s.load_2d(Mem.INP, 0, dev.array(data[Mem.INP]), x_size=ROWS)
        s.load_2d(Mem.WGT, 0, dev.array(data[Mem.WGT]), x_size=ROWS)
        s.dep_push(Stage.LOAD, Stage.COMPUTE)
        s.dep_pop(Stage.LOAD, Stage.COMPUTE)
        s.load_2d(Mem.ACC, 0, dev.array(data[Mem.ACC]), x_size=ACC_ROWS)
        build(s)
        s.dep_push(Stage.COMPUTE, Stage.STORE)
        s.dep_pop(Stage.COMPUTE, Stage.STORE)
        out = dev.alloc(ACC_ROWS * c.out_elem_bytes)
        s.store_2d(0, out, x_size=ACC_ROWS)
        report = dev.run(s.finish())
        results.append((out.read(np.uint8), _buffers(dev), report))
    (want, want_bufs, gold), (got, got_bufs, rtl) = results
    for kind in ("acc", "out"):
        diff = [i for i, (a, b) in enumerate(zip(want_bufs[kind], got_bufs[kind])) if a != b]
        assert not diff, f"{kind.upper()} rows {diff[:8]} differ: golden {want_bufs[kind][diff[0]]:#x}, RTL {got_bufs[kind][diff[0]]:#x}"
    assert np.array_equal(want, got), f"stored OUT differs at byte {int(np.argmax(want != got))}"
    assert rtl.counters == gold.counters


def _one_by_one(dst: int, src: int, wgt: int, n: int, *, wgt_step: int = 1) -> UopKernel:
    """`n` iterations, each its own dst row (dst, dst + 1, ...), INP row and WGT row."""
    return UopKernel.single(dst, src, wgt, loops=(Loop(n, dst=1, src=1, wgt=wgt_step),))


def _gemm_under(shift: int, lo: int, hi: int, epilogue: bool = True) -> Callable[[CommandStream], None]:
    def build(s: CommandStream) -> None:
        s.cfg(shift=shift, clip_lo=lo, clip_hi=hi, epilogue=epilogue)
        s.gemm(_one_by_one(0, 0, 0, ROWS))  # accumulates onto the random ACC rows
        s.gemm(UopKernel.single(ROWS, loops=(Loop(4, dst=1),)), reset=True)  # zeros, then the epilogue
    build.__name__ = f"epilogue-{shift}-{lo}-{hi}-{int(epilogue)}"
    return build


def _alu_untouched(s: CommandStream) -> None:
    s.cfg(shift=4, clip_lo=-8, clip_hi=8, epilogue=True)
    s.alu(UopKernel.single(0, loops=(Loop(8, dst=1),)), AluOp.ADD, 1000)  # the low bits, as ever
    s.gemm(_one_by_one(8, 0, 0, 8))


def _cfg_between_gemms(s: CommandStream) -> None:
    s.cfg(shift=9, clip_lo=-50, clip_hi=100, epilogue=True)
    s.gemm(_one_by_one(0, 0, 0, 8))
    s.cfg(shift=1, clip_lo=-128, clip_hi=127, epilogue=True, init_base=40)
    s.gemm(_one_by_one(8, 0, 0, 8), init=True)
    s.cfg()  # back to VTA's narrowing
    s.gemm(_one_by_one(16, 0, 0, 8))


def _init_one_by_one(s: CommandStream) -> None:
    """Two output blocks per weight row, each from the bias row init_base + its WGT index."""
    s.cfg(init_base=32, shift=6, clip_lo=-100, clip_hi=100, epilogue=True)
    s.gemm(UopKernel(((0, 0, 0), (8, 1, 1)), loops=(Loop(4, dst=1, src=2, wgt=2), Loop(2, dst=4))), init=True)


def _init_reset_copy(s: CommandStream) -> None:
    s.cfg(init_base=40, shift=3, clip_lo=-128, clip_hi=127, epilogue=True)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(3, dst=1, wgt=2), Loop(4, dst=3, wgt=1))), reset=True, init=True)
    s.cfg(init_base=48)  # a copy narrowed as VTA does
    s.gemm(UopKernel.single(12, ROWS + 5, 0, loops=(Loop(4, dst=1, wgt=1),)), reset=True, init=True)  # src unread


def _init_row_twice(s: CommandStream) -> None:
    """Rows 0-3 written twice by one init GEMM: the last iteration (WGT 1, bias row 33) counts."""
    s.cfg(init_base=32)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(2, wgt=1), Loop(4, dst=1, src=1))), init=True)
    s.gemm(UopKernel.single(8, 0, 0, loops=(Loop(2, wgt=1), Loop(4, dst=1, src=1))), reset=True, init=True)


def _init_chain(distance: int, reset: bool, base: int = 20, n: int = ROWS - 2) -> Callable[[CommandStream], None]:
    """Iteration t < n writes row base + distance + t and starts from row base + t (init_base
    `base` + WGT index t): the row iteration t - distance wrote, still in flight for small distances."""
    def build(s: CommandStream) -> None:
        s.cfg(init_base=base, shift=2, clip_lo=-90, clip_hi=90, epilogue=True)
        s.gemm(UopKernel.single(base + distance, 0, 0, loops=(Loop(n, dst=1, src=1, wgt=1),)), reset=reset, init=True)
    build.__name__ = f"init-chain-{distance}{'-reset' if reset else ''}"
    return build


def _init_row_ahead(s: CommandStream) -> None:
    """Init rows that later iterations write (read before they are written) and a row that is
    its own init row (init_base + WGT index = dst)."""
    s.cfg(init_base=2)
    s.gemm(UopKernel.single(0, 0, 0, loops=(Loop(6, dst=1, src=1, wgt=1),)), init=True)  # reads 2.., writes 0..
    s.cfg(init_base=10)
    s.gemm(UopKernel.single(10, 0, 0, loops=(Loop(3, src=1), Loop(4, dst=1, wgt=1))), init=True)  # row = its init row


CASES: dict[str, Callable[[CommandStream], None]] = {
    "epilogue-off": _gemm_under(7, -3, 3, epilogue=False),
    "shift-0": _gemm_under(0, -128, 127),
    "shift-7": _gemm_under(7, -20, 50),
    "shift-31": _gemm_under(31, -128, 127),
    "shift-31-clipped": _gemm_under(31, 0, 0),
    "clip-lo-above-hi": _gemm_under(3, 5, -5),
    "clip-negative": _gemm_under(2, -100, -10),
    "clip-positive": _gemm_under(12, 10, 20),
    "alu-untouched": _alu_untouched,
    "cfg-between-gemms": _cfg_between_gemms,
    "init-1x1": _init_one_by_one,
    "init-reset-copy": _init_reset_copy,
    "init-row-twice": _init_row_twice,
    "init-row-ahead": _init_row_ahead,
    **{f"init-chain-{d}": _init_chain(d, False) for d in (1, 2, 3, 4, 6)},
    **{f"init-chain-{d}-reset": _init_chain(d, True) for d in (1, 2, 5)},
}


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
        _init_row_ahead(s)
        _cfg_between_gemms(s)
        for k, d in enumerate((1, 2, 3, 4)):  # apart: each chain's rows stay as it left them
            _init_chain(d, d % 2 == 0, base=16 * k, n=10)(s)

    _run_both(c, build, seed=3, **pysim_options)


def test_batch2_epilogue_and_init():
    """Two batch rows per element (each lane shifted and clipped on its own)."""
    def build(s: CommandStream) -> None:
        _init_one_by_one(s)
        _init_chain(2, False)(s)
        _gemm_under(5, -60, 70)(s)

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
    assert _buffers(fsim) == _buffers(pysim)


def test_cfg_state_ends_with_finish_and_with_each_run():
    """A run's CFG does not reach the next run: after FINISH, nor after a run that stopped on an
    error before its FINISH (the datapath's reset at start)."""
    c = PRESETS["small"]
    for dev_pair in [_devices(c)]:
        bufs = []
        for dev in dev_pair:
            data = _data(c, 1)
            first = CommandStream(c, "cfg then finish")
            first.load_2d(Mem.ACC, 0, dev.array(data[Mem.ACC]), x_size=ACC_ROWS)
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
            bufs.append(_buffers(dev))
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
def test_epilogue_and_init_cost_no_cycle(same_row):
    """A GEMM under the epilogue, with init, keeps compute busy exactly as long as a plain one
    (OUT is written a cycle after ACC, in the cycle the pipeline drains), on the RTL and in
    the golden cycle model; a CFG costs what a NOP does."""
    c = PRESETS["small"]
    busy = {}
    for mode in ("plain", "cfg-nop", "epilogue-init"):
        for dev in _devices(c):
            data = _data(c, 2)
            s = CommandStream(c, mode)
            s.load_2d(Mem.INP, 0, dev.array(data[Mem.INP]), x_size=ROWS)
            s.load_2d(Mem.WGT, 0, dev.array(data[Mem.WGT]), x_size=ROWS)
            s.dep_push(Stage.LOAD, Stage.COMPUTE)
            s.dep_pop(Stage.LOAD, Stage.COMPUTE)
            if mode == "plain":
                s.nop(Stage.COMPUTE)
            else:
                s.cfg(init_base=16, shift=3, clip_lo=-7, clip_hi=7, epilogue=mode != "cfg-nop")
            loops = (Loop(4), Loop(ROWS, dst=0 if same_row else 1, src=1, wgt=1))
            s.gemm(UopKernel.single(0, 0, 0, loops=loops), init=mode == "epilogue-init")
            busy[mode, dev.name] = dev.run(s.finish()).modules["compute"].busy
    for backend in ("fsim", "pysim"):
        assert busy["plain", backend] == busy["cfg-nop", backend] == busy["epilogue-init", backend], busy
