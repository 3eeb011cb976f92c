"""CommandStream (vdla.runtime.stream): dependency flags as literal tables (VTA runtime §5.3, §5.5)
and argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from support.sim import flag_table

from vdla import isa
from vdla.config import PRESETS
from vdla.runtime import (
    Allocator,
    AluOp,
    Buffer,
    CommandStream,
    Device,
    Loop,
    Mem,
    Stage,
    StreamError,
    UopKernel,
)
from vdla.simulator import TokenUnderflowError

SMALL = PRESETS["small"]


DEFAULT = PRESETS["default"]


L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


PAGE = 4096


def _table(s: CommandStream):
    return flag_table(s.insns)


def test_pending_pop_attaches_to_next_instruction_of_that_stage():
    c = SMALL
    s = CommandStream(c)
    s.dep_pop(L, G)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)  # load stage: not affected
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)  # first compute instruction takes the pop
    s.load_2d(Mem.ACC, 1, PAGE, x_size=1)
    s.dep_pop(G, L)
    s.dep_pop(S, G)
    s.load_2d(Mem.WGT, 0, PAGE, x_size=1)
    s.store_2d(0, PAGE, x_size=1)  # store stage: no pending pop
    s.load_2d(Mem.ACC_8BIT, 0, PAGE, x_size=1)
    assert _table(s) == [
        ("LOAD.INP", "-"),
        ("LOAD.ACC", "pop_prev"),
        ("LOAD.ACC", "-"),
        ("LOAD.WGT", "pop_next"),
        ("STORE", "-"),
        ("LOAD.ACC_8BIT", "pop_next"),
    ]


def test_pending_pop_goes_to_uop_load_of_a_new_kernel():
    """VTA's PushGEMMOp emits the LOAD UOP first, so it carries the pending pop; a cached
    kernel emits no load and the GEMM itself carries it."""
    s = CommandStream(SMALL)
    k = UopKernel.single(loops=(Loop(4, dst=1),), name="k")
    s.dep_pop(L, G)
    s.gemm(k)
    s.dep_pop(L, G)
    s.gemm(k)
    assert _table(s) == [("LOAD.UOP", "pop_prev"), ("GEMM", "-"), ("GEMM", "pop_prev")]


def test_second_pending_pop_commits_a_nop():
    s = CommandStream(SMALL)
    s.dep_pop(L, G)
    s.dep_pop(L, G)  # the first becomes a compute NOP
    s.dep_pop(S, G)  # other kind: no NOP, both pending
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)
    s.dep_pop(G, S)
    s.dep_pop(G, S)
    s.dep_pop(G, L)
    s.dep_pop(G, L)
    s.store_2d(0, PAGE, x_size=1)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    assert _table(s) == [
        ("NOP.G", "pop_prev"),
        ("LOAD.ACC", "pop_prev+pop_next"),
        ("NOP.S", "pop_prev"),
        ("NOP.L", "pop_next"),
        ("STORE", "pop_prev"),
        ("LOAD.INP", "pop_next"),
    ]


def test_dep_push_sets_flag_on_last_instruction_or_emits_nop():
    s = CommandStream(SMALL)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)  # 0
    s.dep_push(L, G)  # flag on 0
    s.dep_push(L, G)  # flag taken: NOP.L 1
    s.load_2d(Mem.ACC, 0, PAGE, x_size=1)  # 2
    s.dep_push(L, G)  # last is compute: NOP.L 3
    s.dep_push(G, L)  # last is load: NOP.G 4
    s.dep_push(G, S)  # last is compute with push_next free: flag on 4
    s.dep_pop(G, L)  # pending on load
    s.dep_push(L, G)  # commits the pending pop as NOP.L 5, then sets push_next on it
    s.store_2d(0, PAGE, x_size=1)  # 6
    s.dep_push(S, G)  # flag on 6
    assert _table(s) == [
        ("LOAD.INP", "push_next"),
        ("NOP.L", "push_next"),
        ("LOAD.ACC", "-"),
        ("NOP.L", "push_next"),
        ("NOP.G", "push_prev+push_next"),
        ("NOP.L", "pop_next+push_next"),
        ("STORE", "push_prev"),
    ]


def test_finish_on_empty_stream_is_vta_synchronize():
    prog = CommandStream(SMALL).finish()
    assert flag_table(prog.instructions()) == [
        ("NOP.S", "push_prev"),
        ("NOP.L", "push_next"),
        ("NOP.G", "pop_prev+pop_next"),
        ("FINISH", "-"),
    ]
    assert Device("fsim:small").run(prog).warnings == []


def test_finish_after_store_and_pending_pop():
    s = CommandStream(SMALL)
    s.gemm(UopKernel.single(loops=(Loop(2, dst=1),), name="z"), reset=True)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, PAGE, x_size=2)
    s.dep_pop(L, G)  # left pending by the user: finish() must not put it on FINISH
    prog = s.finish()
    assert flag_table(prog.instructions()) == [
        ("LOAD.UOP", "-"),
        ("GEMM", "push_next"),
        ("STORE", "pop_prev+push_prev"),  # dep_push(S, G) finds the store's push_prev free
        ("NOP.L", "push_next"),
        # dep_pop(S, G) joins the user's pending pop_prev; dep_pop(L, G) then finds pop_prev
        # pending and commits both as a NOP before recording its own
        ("NOP.G", "pop_prev+pop_next"),
        ("NOP.G", "pop_prev"),
        ("FINISH", "-"),
    ]
    assert not any(i.pop_prev or i.pop_next for i in prog.instructions() if i.opcode == isa.Op.FINISH)
    with pytest.raises(TokenUnderflowError, match="l2g"):  # two pops, one push: the user's bug
        Device("fsim:small").run(prog)


def test_finish_program_runs_clean():
    s = CommandStream(SMALL)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    s.gemm(UopKernel.single(name="r"), reset=True)
    s.dep_push(G, S)
    s.dep_pop(G, S)
    s.store_2d(0, PAGE, x_size=1)
    report = Device("fsim:small").run(s.finish())
    assert report.warnings == []


@pytest.mark.parametrize(("a", "b"), [(L, S), (S, L), (G, G), (L, L)])
def test_no_queue_between_stages(a, b):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match="no token queue"):
        s.dep_pop(a, b)
    with pytest.raises(StreamError, match=rf"dep_push\({a.name}, {b.name}\)"):
        s.dep_push(a, b)


def test_stream_is_closed_after_finish():
    s = CommandStream(SMALL)
    s.finish()
    with pytest.raises(StreamError, match="finished"):
        s.load_2d(Mem.INP, 0, PAGE, x_size=1)


def test_misaligned_buffer():
    s = CommandStream(DEFAULT)
    with pytest.raises(StreamError, match=r"load_2d\(WGT, sram=0\): address 0x1010 is not aligned to the WGT "
                                          r"element size \(256 bytes\)"):
        s.load_2d(Mem.WGT, 0, PAGE + 16, x_size=1)
    dram = np.zeros(1 << 16, np.uint8)
    odd = Buffer(dram, Allocator(1 << 16), PAGE + 8, 64, "odd")
    with pytest.raises(StreamError, match="odd is not aligned"):
        s.load_2d(Mem.INP, 0, odd, x_size=1)
    with pytest.raises(StreamError, match=r"store_2d\(sram=0\).*not aligned"):
        s.store_2d(0, odd, x_size=1)
    assert s.insns == []


@pytest.mark.parametrize("call", [
    lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=0),
    lambda s: s.load_2d(Mem.ACC, 0, PAGE, x_size=2, y_size=0),
    lambda s: s.store_2d(0, PAGE, x_size=0),
])
def test_zero_sizes(call):
    with pytest.raises(StreamError, match="must be positive"):
        call(CommandStream(SMALL))


def test_load_out_rejected():
    with pytest.raises(StreamError, match="OUT cannot be loaded"):
        CommandStream(SMALL).load_2d(Mem.OUT, 0, PAGE, x_size=1)


def test_rejected_call_keeps_pending_pop():
    s = CommandStream(SMALL)
    s.dep_pop(G, L)
    with pytest.raises(StreamError):
        s.load_2d(Mem.INP, 0, PAGE, x_size=70000)
    s.load_2d(Mem.INP, 0, PAGE, x_size=1)
    assert _table(s) == [("LOAD.INP", "pop_next")]


@pytest.mark.parametrize("imm", [32768, -32769, 1 << 20])
def test_immediate_out_of_range(imm):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match=rf"alu\(ADD, 'k'\): immediate {imm} does not fit in 16 bits "
                                          r"\(-32768..32767\)"):
        s.alu(UopKernel.single(name="k"), AluOp.ADD, imm)


def test_immediate_range_ends_ok():
    s = CommandStream(SMALL)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, 32767)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, -32768)
    s.alu(UopKernel.single(name="k"), AluOp.ADD, 0)
    assert [(i.use_imm, i.imm) for i in s.insns[1:]] == [(1, 32767), (1, -32768), (1, 0)]


@pytest.mark.parametrize(("call", "what", "field"), [
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=70000), r"load_2d\(INP, sram=0\)", "x_size"),
    (lambda s: s.load_2d(Mem.INP, 70000, PAGE, x_size=1), r"load_2d\(INP, sram=70000\)", "sram_base"),
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=1, x_pad=(16, 0)), r"load_2d\(INP, sram=0\)", "x_pad_0"),
    (lambda s: s.load_2d(Mem.INP, 0, PAGE, x_size=2, y_size=2, x_stride=1 << 16), r"load_2d", "x_stride"),
    (lambda s: s.store_2d(0, PAGE, x_size=1, y_size=70000), r"store_2d\(sram=0\)", "y_size"),
    (lambda s: s.gemm(UopKernel.single(loops=(Loop(1 << 14),), name="big")), r"gemm\('big'\)", "iter_out"),
    (lambda s: s.alu(UopKernel.single(loops=(Loop(2, dst=200),), name="f"), AluOp.MAX, 0), r"alu\(MAX, 'f'\)",
     "dst_factor_out"),
])
def test_field_overflow_names_the_call(call, what, field):
    s = CommandStream(SMALL)
    with pytest.raises(StreamError, match=what) as ei:
        call(s)
    assert f"'{field}'" in str(ei.value)


@pytest.mark.parametrize("call", ["cfg", "init"])
def test_cfg_and_init_refused_on_a_config_without_the_epilogue(call: str) -> None:
    c = PRESETS["small"].replace(name="small-no-epilogue", gemm_epilogue=False)
    s = CommandStream(c)
    with pytest.raises(StreamError, match="has no GEMM epilogue"):
        if call == "cfg":
            s.cfg(shift=1, epilogue=True)
        else:
            s.gemm(UopKernel.single(0, 0, 0), init=True)
    s.gemm(UopKernel.single(0, 0, 0))  # a plain GEMM is fine
