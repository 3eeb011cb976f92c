"""The requantisation tail fused into the GEMMs (:mod:`vdla.compiler.targets.vdla.fuse_tail`):
CFG's epilogue and GEMM init replace a tile's reset and its ALU ADD bias / SHR / MAX / MIN.

Differential: each layer built with the pass on and off gives the same output bit for bit on
the golden simulator (and the int8 reference's); the rewrite happens where it should (the ALU
and reset instructions go) and nowhere a precondition fails (synthetic task lists name the
failing precondition). The reduced MobileNetV2 and ResNet-18 stay bit-exact, with fewer cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from support.graph import int8
from support.templates import conv_case, conv_operands

from vdla import Device
from vdla.compiler import te
from vdla.compiler.accelerator import build
from vdla.compiler.graph import Graph
from vdla.compiler.graph.executor import compile_model
from vdla.compiler.graph.job import run_job
from vdla.compiler.graph.partition import PartitionPolicy
from vdla.compiler.graph.passes import prepare
from vdla.compiler.targets.vdla import fuse_tail
from vdla.compiler.targets.vdla.fuse_tail import TaskInsn, fuse_requant_tails, place_cfg
from vdla.compiler.targets.vdla.sync import Task
from vdla.compiler.targets.vdla.top import (
    Knobs,
    Tail,
    conv2d_packed,
    dense_packed,
    dense_reference,
    depthwise_window,
    pack_bias,
    pack_dense_data,
    pack_dense_weight,
    schedule_dense_packed,
    unpack_dense_data,
)
from vdla.compiler.targets.vdla.top.tiling import fused_tail
from vdla.config import preset
from vdla.isa import AluOp, Mem, Op, Stage
from vdla.runtime import Loop, UopKernel

DEFAULT = preset("default")


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Set the pass on or off for what the test builds next; depthwise layers stay on the grouped
    template (the window template's GEMMs compute the tail themselves: nothing for the pass)."""
    monkeypatch.setattr(depthwise_window, "ENABLED", False)
    return lambda on: monkeypatch.setattr(fuse_tail, "ENABLED", on)


# -- differential: one-layer graphs built with the pass on and off ------------------------------


@dataclass(frozen=True)
class Layer:
    """An int8 conv (or dense) + bias, an optional ReLU6-like clip, an optional int8 residual, then
    the requantising shift to int8: the tails the model zoo's layers have."""

    id: str
    cin: int
    cout: int
    k: int = 1
    stride: int = 1
    groups: int = 1
    clip: int | None = None  # the clip's upper bound in the accumulator's scale (ReLU6)
    residual: bool = False
    dense: bool = False
    size: int = 8
    n: int = 9  # the requantising shift
    fused: bool = True  # whether the pass rewrites its tiles


def _graph(c: Layer) -> Graph:
    rng = np.random.default_rng(7)
    g = Graph(c.id)
    if c.dense:
        g.add_input("x", (1, c.cin), "int8")
        y = g.add_node("dense", ["x", g.add_const("w", int8(rng, (c.cout, c.cin), -127))], name="fc")
        bshape: tuple[int, ...] = (1, c.cout)
    else:
        g.add_input("x", (1, c.cin, c.size, c.size), "int8")
        w = g.add_const("w", int8(rng, (c.cout, c.cin // c.groups, c.k, c.k), -127))
        y = g.add_node("conv2d", ["x", w], name="conv", padding=(c.k // 2,) * 4, strides=(c.stride,) * 2,
                       groups=c.groups)
        bshape = (1, c.cout, 1, 1)
    y = g.add_node("add", [y, g.add_const("b", rng.integers(-3000, 3001, bshape).astype(np.int32))], name="bias")
    if c.clip is not None:
        y = g.add_node("clip", [y], name="act", min=0, max=c.clip)
    if c.residual:
        g.add_input("r", g.type_of(y).shape, "int8")
        y = g.add_node("add", [y, g.add_node("cast", ["r"], name="r.i32", dtype="int32")], name="res")
    g.set_outputs(g.add_node("requantize", [y], name="out", shift=c.n))
    return g.infer_types()


def _run(c: Layer):  # type: ignore[no-untyped-def]
    g = _graph(c)
    m = compile_model(prepare(g, None, DEFAULT, policy=PartitionPolicy(skip_first_conv=False)), DEFAULT)
    rng = np.random.default_rng(1)
    x = {name: int8(rng, t.shape) for name, t in g.inputs.items()}
    res = m.run(x, reference=True)
    vd = [r for r in res.layers if r.target == "vdla"]
    assert vd, "nothing ran on VDLA"
    assert all(r.exact and r.max_err == 0 for r in res.layers if r.target == "vdla")
    insns = [i for f in m.functions for i in f.program.instructions()]
    return res.outputs[0], sum(r.cycles for r in vd), insns


def _count(insns: list, op: Op, **fields: int) -> int:
    return sum(1 for i in insns if i.opcode == op and all(getattr(i, k) == v for k, v in fields.items()))


LAYERS = [
    Layer("1x1-ci1-relu6", 16, 32, clip=6 << 9),
    Layer("1x1-ci2-relu6", 32, 64, clip=6 << 9),
    Layer("1x1-ci3-plain", 48, 32),
    Layer("1x1-24to40-relu6", 24, 40, clip=6 << 9),
    Layer("1x1-40to24-plain", 40, 24),
    Layer("3x3-relu6", 32, 32, k=3, clip=6 << 9),
    Layer("dw-s1-relu6", 32, 32, k=3, groups=32, clip=6 << 9),
    Layer("dw-s2-relu6", 48, 48, k=3, stride=2, groups=48, clip=6 << 9),
    Layer("dw-40-s1-plain", 40, 40, k=3, groups=40),
    Layer("1x1-residual", 32, 32, residual=True, fused=False),  # bias, shift, residual, clip: left alone
]


@pytest.mark.parametrize("c", LAYERS, ids=[c.id for c in LAYERS])
def test_pass_on_and_off_bit_identical(c: Layer, switch) -> None:  # type: ignore[no-untyped-def]
    switch(False)
    out_off, cycles_off, off = _run(c)
    switch(True)
    out_on, cycles_on, on = _run(c)
    np.testing.assert_array_equal(out_on, out_off)
    assert len(np.unique(out_on)) > 4  # neither saturated nor constant
    alu_off, alu_on = _count(off, Op.ALU), _count(on, Op.ALU)
    if not c.fused:
        assert (alu_on, _count(on, Op.CFG), cycles_on) == (alu_off, 0, cycles_off)
        return
    assert alu_off > 0 and alu_on == 0
    assert _count(on, Op.GEMM, init=1) > 0 and _count(on, Op.CFG) > 0
    # every reset left copies the bias (reset + init); where the first GEMM writes each row once, none is left
    assert _count(on, Op.GEMM, reset=1) == _count(on, Op.GEMM, reset=1, init=1) <= _count(off, Op.GEMM, reset=1)
    assert cycles_on < cycles_off


TEMPLATE_1X1 = [
    ("ci1", 16, Knobs()),
    ("ci2-per-block", 32, Knobs(tile_ci=1)),
    ("ci3-per-block", 48, Knobs(tile_ci=1)),
    ("ci2-oc-threads", 32, Knobs(tile_ci=1, oc_nthread=2)),
    ("ci4-chunks-of-2-row-threads", 64, Knobs(tile_ci=2, h_nthread=2)),
    # the first GEMM covers every input-channel block (2 or 3) of the tile: split, its first part the init GEMM
    ("ci2-one-gemm", 32, Knobs(tile_ci=2)),
    ("ci3-one-gemm", 48, Knobs(tile_ci=3)),
    ("ci2-one-gemm-oc-threads", 32, Knobs(tile_co=2, tile_ci=2, oc_nthread=2)),
    ("ci3-one-gemm-row-threads", 48, Knobs(tile_ci=3, tile_h=3, h_nthread=2)),
    ("ci3-one-gemm-one-block-out", 48, Knobs(tile_co=1, tile_h=3, tile_w=6, tile_ci=3)),
]


def _conv_off_on(args: tuple, switch) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """`conv_case(*args)` built with the pass off, then on: both equal, and equal to numpy."""
    switch(False)
    off = conv_case(*args)
    switch(True)
    on = conv_case(*args)
    np.testing.assert_array_equal(on["got"], on["ref"])
    np.testing.assert_array_equal(off["got"], on["got"])
    return off, on


@pytest.mark.parametrize("ic, knobs", [c[1:] for c in TEMPLATE_1X1], ids=[c[0] for c in TEMPLATE_1X1])
def test_1x1_template_one_gemm_per_input_block(ic: int, knobs: Knobs, switch) -> None:  # type: ignore[no-untyped-def]
    """The 1x1 conv template with one GEMM per input-channel block, chunk or tile: on, the first
    GEMM of each tile (or its first part) starts from the bias (no reset), the others
    accumulate, and the ALU has no work."""
    args = (DEFAULT, ic, 64, 6, 1, 1, 0, Tail(bias=True, shift=8, clip=(0, 96)), knobs)
    off, on = _conv_off_on(args, switch)
    insns = on["f"].program.instructions()
    assert _count(insns, Op.ALU) == 0 and _count(insns, Op.GEMM, init=1) > 0
    assert _count(insns, Op.GEMM, reset=1) == 0
    assert on["report"].cycles < off["report"].cycles


@pytest.mark.parametrize("tile_ci, nthread", [(1, 1), (2, 1), (2, 2)])
def test_3x3_template_padded_bias(tile_ci: int, nthread: int, switch) -> None:  # type: ignore[no-untyped-def]
    """3x3: the first GEMM of a tile sums 9 taps of each input-channel block into each row; its
    first tap of the first block splits off as the init GEMM, whose WGT index steps by 9 * tile_ci
    per output-channel block: the bias load pads its rows that far apart (18: zeros before each
    row too, past the pad field's 15). No reset, no ALU; bit-exact, and fewer cycles."""
    args = (DEFAULT, 32, 64, 8, 3, 1, 1, Tail(bias=True, shift=9, clip=(0, 96)),
            Knobs(tile_co=2, tile_h=4, tile_w=8, tile_ci=tile_ci, oc_nthread=nthread))
    off, on = _conv_off_on(args, switch)
    insns = on["f"].program.instructions()
    assert _count(insns, Op.ALU) == 0 and _count(insns, Op.GEMM, reset=1) == 0 and _count(insns, Op.GEMM, init=1) > 0
    pads = {(i.x_pad_0, i.x_pad_1) for i in insns if i.opcode == Op.LOAD and i.memory_type == Mem.ACC}
    assert pads == {(0, 8)} if tile_ci == 1 else pads == {(2, 15)}
    assert on["report"].cycles < off["report"].cycles


@pytest.mark.parametrize("nthread", [1, 2])
def test_dense_template(nthread: int, switch) -> None:  # type: ignore[no-untyped-def]
    """Dense: one GEMM sums every input block into each row, so the reset stays as the bias copy."""
    B, CI, CO = DEFAULT.batch, DEFAULT.block_in, DEFAULT.block_out
    rng = np.random.default_rng(3)
    n, k, o = 2 * B, 96, 64
    x, w = int8(rng, (n, k)), int8(rng, (o, k), -127)
    b = rng.integers(-5000, 5000, (o,), dtype=np.int32)
    tail = Tail(bias=True, shift=8, clip=(-127, 127))
    outs = []
    for on in (False, True):
        switch(on)
        D = te.placeholder((n // B, k // CI, B, CI), "int8", name="D")
        W = te.placeholder((o // CO, k // CI, CO, CI), "int8", name="W")
        Bt = te.placeholder((o // CO, B, CO), "int32", name="bias")
        out = dense_packed(D, W, tail, bias=Bt, config=DEFAULT)
        f = build(schedule_dense_packed(out, Knobs(oc_nthread=nthread), config=DEFAULT), [D, W, Bt, out],
                  config=DEFAULT)
        got = np.zeros((n // B, o // CO, B, CO), np.int8)
        report = f(Device("fsim", config=DEFAULT), pack_dense_data(x, B, CI), pack_dense_weight(w, CO, CI),
                   pack_bias(b, B, CO), got)
        outs.append((unpack_dense_data(got), f.program.instructions(), report.cycles))
    (off, _, cycles_off), (got, insns, cycles_on) = outs
    np.testing.assert_array_equal(got, dense_reference(x, w, tail, bias=b))
    np.testing.assert_array_equal(got, off)
    assert _count(insns, Op.ALU) == 0 and _count(insns, Op.GEMM, reset=1) == _count(insns, Op.GEMM, reset=1, init=1)
    assert cycles_on < cycles_off


def test_depthwise_first_tap_starts_from_the_bias(switch) -> None:  # type: ignore[no-untyped-def]
    """Depthwise: the GEMM sums the taps into each row (a loop over them, uops over the rest):
    its first tap splits off as the init GEMM, so no reset is left."""
    switch(True)
    _, _, dw = _run(Layer("dw", 32, 32, k=3, groups=32, clip=6 << 9))
    assert _count(dw, Op.GEMM, reset=1) == 0 and _count(dw, Op.GEMM, init=1) > 0 and _count(dw, Op.ALU) == 0


def test_tail_without_clip_is_left_alone(switch) -> None:  # type: ignore[no-untyped-def]
    """Bias and shift but no MAX/MIN: the ALU keeps the low 8 bits, which the epilogue's clip
    would saturate instead."""
    switch(True)
    r = conv_case(DEFAULT, 32, 32, 4, 1, 1, 0, Tail(bias=True, shift=4, clip=None), Knobs())
    np.testing.assert_array_equal(r["got"], r["ref"])
    insns = r["f"].program.instructions()
    assert _count(insns, Op.CFG) == 0 and _count(insns, Op.ALU, alu_opcode=AluOp.SHR) > 0


# -- whole models ------------------------------------------------------------------------------------


# (MobileNetV2 reduced with the pass on is also checked bit-exact by the graph tests; its on/off
# comparison, 12 s, runs in nox -s slow)
@pytest.mark.parametrize("model", [pytest.param("mobilenet_v2", marks=pytest.mark.slow), "resnet18"])
def test_reduced_model_bit_exact_and_faster(model: str, switch) -> None:  # type: ignore[no-untyped-def]
    switch(True)
    on = run_job(model, "fsim", DEFAULT, reduced=True, check_fp32=False)
    assert on.ok and on.vdla_layers and all(r.exact for r in on.vdla_layers), on.table()
    switch(False)
    off = run_job(model, "fsim", DEFAULT, reduced=True, check_fp32=False)
    assert sum(r.cycles for r in on.vdla_layers) < sum(r.cycles for r in off.vdla_layers)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mobilenet_v2", "resnet18"])
def test_full_model_bit_exact(model: str, switch) -> None:  # type: ignore[no-untyped-def]
    switch(True)
    res = run_job(model, "fsim", DEFAULT, check_fp32=False)
    assert res.ok and all(r.exact for r in res.vdla_layers), res.table()


# -- the preconditions, on synthetic task lists ------------------------------------------------------

ROWS = 8  # one tile: ACC rows 0..7, two output-channel blocks of 4 rows; bias rows 100, 101


def _k(uops, loops=()) -> UopKernel:  # type: ignore[no-untyped-def]
    return UopKernel(tuple(uops), tuple(Loop(*lp) for lp in loops))


def _compute(kind: str, kernel: UopKernel, label: str, reads=(), writes=(), **kw) -> Task:  # type: ignore[no-untyped-def]
    return Task(Stage.COMPUTE, None, list(reads), list(writes), label, insn=TaskInsn(kind, kernel=kernel, **kw))


def _tile(add_kernel: UopKernel | None = None, tail: tuple = ("shr", "max", "min"), shift: int = 7,
          clip: tuple[int, int] = (0, 96), gemm: UopKernel | None = None,
          reset: UopKernel | None = None) -> list[Task]:
    """reset; GEMM (row d: weight d // 4); LOAD ACC bias; ADD bias; the tail; STORE."""
    acc = [("ACC", 0, ROWS), ("OUT", 0, ROWS)]
    rows = _k([(0, 0, 0)], [(ROWS, 1, 0, 0)])
    add = add_kernel or _k([(0, 100, 0), (4, 101, 0)], [(4, 1, 0, 0)])
    imms = {"shr": (AluOp.SHR, shift), "max": (AluOp.MAX, clip[0]), "min": (AluOp.MIN, clip[1])}
    tasks = [
        _compute("gemm", reset or rows, "gemm reset", writes=acc, reset=True),
        _compute("gemm", gemm or _k([(0, 0, 0), (4, 0, 1)], [(4, 1, 1, 0)]), "gemm",
                 reads=[("INP", 0, 4), ("WGT", 0, 2)], writes=acc),
        Task(Stage.COMPUTE, None, [], [("ACC", 100, 102)], "load ACC", insn=TaskInsn("load", mem=Mem.ACC, arg=2)),
        _compute("alu", add, "alu ADD", reads=[("ACC", 0, ROWS), ("ACC", 100, 102)], writes=acc, alu_op=AluOp.ADD),
    ]
    for name in tail:
        op, imm = imms[name]
        tasks.append(_compute("alu", rows, f"alu {op.name}", reads=acc[:1], writes=acc, alu_op=op, imm=imm))
    tasks.append(Task(Stage.STORE, None, [("OUT", 0, ROWS)], [], "store", insn=TaskInsn("store", mem=Mem.OUT, arg=3)))
    return tasks


def _why(tasks: list[Task], monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[Task]]:
    monkeypatch.setattr(fuse_tail, "REJECTED", [])
    out = fuse_requant_tails(tasks, DEFAULT)
    return [r.split(": ", 1)[1] for r in fuse_tail.REJECTED], out


def test_synthetic_tile_is_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    why, out = _why(_tile(), monkeypatch)
    assert why == []
    assert [t.label for t in out] == ["load ACC", "cfg", "gemm init", "store"]
    init = out[2].insn
    assert init.init and not init.reset and init.need == (100, 7, 0, 96)  # row d: bias 100 + d // 4 = 100 + weight


#: a GEMM over rows 0..7 that no split makes write each row once: uop u writes rows d_u, d_u + 1
#: (0, 1; 1, 2; 3, 4; 5, 6; 6, 7): the uops that write only new rows miss rows 2 and 7
UNSPLIT = _k([(0, 0, 0), (1, 0, 1), (3, 0, 0), (5, 0, 1), (6, 0, 0)], [(2, 1, 1, 0)])


def test_unsplittable_tile_copies_the_bias_with_the_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    # the GEMM writes rows twice and splits into no init GEMM: the reset copies, its WGT indices chosen
    blocks = _k([(0, 0, 0), (4, 0, 0)], [(4, 1, 0, 0)])  # one uop per output-channel block
    why, out = _why(_tile(gemm=UNSPLIT, reset=blocks), monkeypatch)
    assert why == []
    assert [t.label for t in out] == ["load ACC", "cfg", "gemm reset init", "gemm", "store"]
    k = out[2].insn.kernel
    assert out[2].insn.need == (100, 7, 0, 96) and k.uops == ((0, 0, 0), (4, 0, 1)) and k.loops == (Loop(4, 1),)
    assert out[3].insn.need == (None, 7, 0, 96)  # the epilogue on, any init base
    # one uop over all rows: its WGT index cannot follow the bias row (100, 100, 100, 100, 101, ...)
    why, out = _why(_tile(gemm=UNSPLIT), monkeypatch)
    assert why == ["init: no constant init_base for the first GEMM, no WGT indices for the reset"]


def _gemm_iterations(kernels: list[UopKernel]) -> list[tuple[int, int, int]]:
    return sorted(t for k in kernels for t in zip(*(a.tolist() for a in fuse_tail._iterations(k)), strict=True))


# (first GEMM, its parts' uops and loops): rows d = 4 * o-block + 2 * half + (0, 1) (a loop over the rows
# of a half); a uop per (input-channel block or tap, o-block, half) when the uops cover several
SPLITS = [
    # two taps in a loop that moves no row (depthwise): the loop's first iteration, then the rest
    ("taps-loop", _k([(0, 0, 0), (4, 0, 1)], [(2, 0, 0, 2), (4, 1, 1, 0)]),
     [(((0, 0, 0), (4, 0, 1)), (Loop(1, 0, 0, 2), Loop(4, 1, 1, 0))),
      (((0, 0, 2), (4, 0, 3)), (Loop(1, 0, 0, 2), Loop(4, 1, 1, 0)))]),
    # uops over (input-channel block, o-block, half), 2 and 3 blocks (WGT 2 or 3 * o-block + block):
    # the first block's uops, then the rest
    ("uops-ci2", _k([(0, 0, 0), (2, 2, 0), (4, 0, 2), (6, 2, 2), (0, 4, 1), (2, 6, 1), (4, 4, 3), (6, 6, 3)],
                    [(2, 1, 1, 0)]),
     [(((0, 0, 0), (2, 2, 0), (4, 0, 2), (6, 2, 2)), (Loop(2, 1, 1, 0),)),
      (((0, 4, 1), (2, 6, 1), (4, 4, 3), (6, 6, 3)), (Loop(2, 1, 1, 0),))]),
    ("uops-ci3", _k([(0, 0, 0), (2, 2, 0), (4, 0, 3), (6, 2, 3), (0, 4, 1), (2, 6, 1), (4, 4, 4), (6, 6, 4),
                     (0, 8, 2), (2, 10, 2), (4, 8, 5), (6, 10, 5)], [(2, 1, 1, 0)]),
     [(((0, 0, 0), (2, 2, 0), (4, 0, 3), (6, 2, 3)), (Loop(2, 1, 1, 0),)),
      (((0, 4, 1), (2, 6, 1), (4, 4, 4), (6, 6, 4), (0, 8, 2), (2, 10, 2), (4, 8, 5), (6, 10, 5)),
       (Loop(2, 1, 1, 0),))]),
    # both: a loop over two input-channel blocks, uops over (tap, o-block, half): three GEMMs
    ("loop-and-uops", _k([(0, 0, 0), (2, 2, 0), (4, 0, 4), (6, 2, 4), (0, 1, 1), (2, 3, 1), (4, 1, 5), (6, 3, 5)],
                         [(2, 0, 8, 2), (2, 1, 1, 0)]),
     [(((0, 0, 0), (2, 2, 0), (4, 0, 4), (6, 2, 4)), (Loop(1, 0, 8, 2), Loop(2, 1, 1, 0))),
      (((0, 1, 1), (2, 3, 1), (4, 1, 5), (6, 3, 5)), (Loop(1, 0, 8, 2), Loop(2, 1, 1, 0))),
      (((0, 8, 2), (2, 10, 2), (4, 8, 6), (6, 10, 6), (0, 9, 3), (2, 11, 3), (4, 9, 7), (6, 11, 7)),
       (Loop(1, 0, 8, 2), Loop(2, 1, 1, 0)))]),
]


@pytest.mark.parametrize("gemm, parts", [c[1:] for c in SPLITS], ids=[c[0] for c in SPLITS])
def test_split_first_gemm(gemm: UopKernel, parts: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first GEMM that writes rows more than once splits into an init GEMM writing each row once
    and plain GEMMs with the rest of its iterations (the same multiset); the bias load pads its
    rows apart where K1's WGT index steps by more than one per output-channel block."""
    monkeypatch.setattr(fuse_tail, "WEIGH", False)  # an 8-row tile: the split costs more than the reset
    got = fuse_tail._split_first(gemm, 256)
    assert got is not None and [(k.uops, k.loops) for k in got] == parts
    assert _gemm_iterations(got) == _gemm_iterations([gemm])
    d1 = fuse_tail._iterations(got[0])[0]
    assert sorted(d1.tolist()) == list(range(ROWS))
    tasks = _tile(gemm=gemm)
    tasks[2].insn = replace(tasks[2].insn, load=(100, 2, 1, 2, 0, 0, 0, 0),
                            remake=lambda *a: ("padded", a))  # LOAD ACC of rows 100, 101: one row of 2
    why, out = _why(tasks, monkeypatch)
    assert why == []
    labels = [t.label for t in out]
    step = next(w for d, _, w in got[0].uops if d == 4)  # K1's WGT index of o-block 1 (block 0's is 0)
    if step == 1:  # bias row 100 + o = init_base + WGT index: the load as it is
        assert labels == ["load ACC", "cfg", "gemm init", *["gemm"] * (len(parts) - 1), "store"]
        assert out[2].insn.need == (100, 7, 0, 96)
    else:  # the load pads each bias row to `step` rows, above every row the tile uses (102: past the bias)
        assert labels == ["load ACC bias padded", "cfg", "gemm init", *["gemm"] * (len(parts) - 1), "store"]
        assert out[0].emit == ("padded", (102, 1, 2, 1, (0, step - 1), (0, 0)))
        assert out[0].writes == [("ACC", 102, 102 + 2 * step)] and out[2].insn.need == (102, 7, 0, 96)
    assert [t.insn.kernel for t in out if t.label in ("gemm init", "gemm")] == got
    assert all(t.insn.need[1:] == (7, 0, 96) for t in out if t.label in ("gemm init", "gemm"))


def test_padded_bias_load_past_the_pad_field() -> None:
    """K1's WGT index steps by more than the pad field holds + 1: zeros before each row too."""
    step = fuse_tail._PAD_MAX + 5
    bias_of = np.full(256, -1, np.int64)
    bias_of[:ROWS] = 100 + np.arange(ROWS) // 4
    dst = np.arange(ROWS)
    li = TaskInsn("load", mem=Mem.ACC, arg=2, load=(100, 2, 1, 2, 0, 0, 0, 0), remake=lambda *a: a)
    got = fuse_tail._relayout(li, bias_of, dst, step * (dst // 4), 102, None, DEFAULT)
    assert got == (106, step, 2, 106)  # rows 102..105 before the first bias row: its leading zeros
    t = fuse_tail._padded_load(Task(Stage.COMPUTE, None, [], [("ACC", 100, 102)], "load ACC", insn=li), li, *got[:3])
    assert t.emit == (102, 1, 2, 1, (4, fuse_tail._PAD_MAX), (0, 0)) and t.writes == [("ACC", 102, 102 + 2 * step)]
    assert fuse_tail._relayout(li, bias_of, dst, (2 * fuse_tail._PAD_MAX + 2) * (dst // 4), 102, None, DEFAULT) is None


def test_unsplittable_kernels() -> None:
    assert fuse_tail._split_first(UNSPLIT, 256) is None
    once = _k([(0, 0, 0), (4, 0, 1)], [(4, 1, 1, 0)])  # writes each row once already: nothing to split
    assert fuse_tail._split_first(once, 256) is None


@pytest.mark.parametrize("case, reason", [
    ({"tail": ("shr", "max")}, "tail: not ADD"),
    ({"tail": ("shr", "min", "max")}, "tail: not ADD"),
    ({"shift": 40}, "tail: not ADD"),  # beyond acc_width: SHR would shift left
    ({"clip": (-200, 96)}, "tail: not ADD"),  # MAX's bound outside int8
    # row d's bias 100 + (d % 4 == 0): not b(d) - weight constant, and the reset cannot take such WGT indices
    ({"add_kernel": _k([(0, 101, 0), (1, 100, 0), (2, 100, 0), (3, 100, 0)], [(2, 4, 0, 0)])}, "init: no constant"),
], ids=["no-min", "min-before-max", "shift-40", "clip-lo-200", "bias-map"])
def test_preconditions_that_fail_leave_the_tile(case: dict, reason: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _tile(**case)
    why, out = _why(tasks, monkeypatch)
    assert len(why) == 1 and why[0].startswith(reason), why
    assert out == tasks


def test_tail_rows_read_afterwards_or_touched_between(monkeypatch: pytest.MonkeyPatch) -> None:
    acc = [("ACC", 0, ROWS), ("OUT", 0, ROWS)]
    reader = _compute("alu", _k([(0, 0, 0)], [(ROWS, 1, 0, 0)]), "alu ADD", reads=acc[:1], writes=acc,
                      alu_op=AluOp.ADD, imm=1)
    why, _ = _why([*_tile(), reader], monkeypatch)
    assert why == ["after: the tail's ACC rows are read before being rewritten"]
    tasks = _tile()  # a store of OUT rows inside the tail
    tasks.insert(4, Task(Stage.STORE, None, [("OUT", 0, 1)], [], "store", insn=TaskInsn("store", arg=3)))
    why, _ = _why(tasks, monkeypatch)
    assert why == ["tile: another task touches the tail's rows"]
    tasks = _tile()  # the bias rows read between the GEMM and their load: the load cannot move up
    tasks.insert(2, _compute("alu", _k([(50, 100, 0)]), "alu ADD", reads=[("ACC", 50, 51), ("ACC", 100, 101)],
                             writes=[("ACC", 50, 51)], alu_op=AluOp.ADD))
    why, _ = _why(tasks, monkeypatch)
    assert why[-1] == "bias: the load cannot move before the GEMM that reads it"  # (the other ADD is no tail)


def test_cfg_only_where_the_state_changes() -> None:
    def gemm(need):  # type: ignore[no-untyped-def]
        return _compute("gemm", _k([(0, 0, 0)]), "gemm", need=need)

    a, b = (5, 7, 0, 96), (6, 7, 0, 96)
    tasks = [gemm(None), gemm(a), gemm((None, 7, 0, 96)), gemm(a), gemm(b), gemm(None), gemm(None), gemm(b)]
    labels = [t.label for t in place_cfg(tasks)]
    assert labels == ["gemm", "cfg", "gemm", "gemm", "gemm", "cfg", "gemm", "cfg", "gemm", "gemm", "cfg", "gemm"]


# -- the tile picker's view of the pass ----------------------------------------------------------------


@pytest.mark.parametrize("tail, fused", [
    (Tail(bias=True, shift=8, clip=(0, 96)), True),
    (Tail(bias=True, clip=(-128, 127)), True),  # no shift
    (Tail(bias=True, shift=8, clip=None), False),  # no clip: the ALU keeps the low bits
    (Tail(bias=True, shift=8, residual=True, clip=(0, 96)), False),
    (Tail(shift=8, clip=(0, 96)), False),  # no bias
], ids=["bias-shift-clip", "bias-clip", "no-clip", "residual", "no-bias"])
def test_picker_knows_which_tails_fuse(tail: Tail, fused: bool, switch) -> None:  # type: ignore[no-untyped-def]
    """The conv tile picker models a fused tail (no ALU, no reset) exactly where the pass can fuse
    it, and only with the pass on (off: the old model, the same tiles as before the pass)."""
    op = conv_operands(DEFAULT, 32, 32, 4, 1, 1, 0, tail)
    out = conv2d_packed(op.D, op.K, 1, 0, tail, bias=op.Bt, residual=op.Rt, config=DEFAULT)
    switch(True)
    assert fused_tail(out, DEFAULT) == fused
    switch(False)
    assert not fused_tail(out, DEFAULT)
