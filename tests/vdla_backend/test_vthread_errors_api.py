"""Virtual threads overlap load and compute; schedules the hardware cannot run fail at
build time naming the stage, the buffer and the limit; the public API (vdla.build /
vdla.lower with target "vdla"), disassembly, token checking, save/load."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.targets.vdla import VDLAError, VDLAFunction, check_tokens, get_env, shift_right
from vdla.compiler.targets.vdla.resnet import OFFLOADED
from vdla.compiler.targets.vdla.topi import Knobs, Tail, conv2d_packed, schedule_conv2d_packed
from vdla.isa import Stage, decode, encode, stage_of
from vdla.runtime import Program

from .helpers import conv_case

DEFAULT = preset("default")


def _significant(report) -> bool:  # type: ignore[no-untyped-def]
    """Load and compute each busy for at least a fifth of the run."""
    m = report.modules
    return m["load"].busy >= 0.2 * report.cycles and m["compute"].busy >= 0.2 * report.cycles


#: Test size per layer. 3x3 layers: 8x8 (or the layer's own size). A 1x1 layer at 8x8 is a
#: single output tile, so two threads would each get one tile and nothing to overlap; these run
#: at a size where every thread has at least two output tiles (C11 at its full 14x14, where each
#: thread's one tile still has two input-channel chunks to pipeline) -- all in well under a second.
_SIZE = {"C3": 32, "C5": 32, "C8": 28, "C11": 14}


def _tasks(layer, size: int, k: Knobs) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(output tiles, output tiles x input-channel chunks) per virtual thread of a conv schedule."""
    oh = (size + 2 * layer.pad - layer.k) // layer.stride + 1
    nt = k.oc_nthread * k.h_nthread
    tiles = (layer.oc // DEFAULT.block_out // k.tile_co) * (oh // k.tile_h) * (oh // k.tile_w)
    chunks = layer.ic // DEFAULT.block_in // k.tile_ci
    return tiles // nt, tiles * chunks // nt


@pytest.mark.parametrize("layer", OFFLOADED, ids=[lay.name for lay in OFFLOADED])
def test_two_virtual_threads_reduce_cycles(layer) -> None:  # type: ignore[no-untyped-def]
    size = _SIZE.get(layer.name, min(8, layer.size))
    args = (DEFAULT, layer.ic, layer.oc, size, layer.k, layer.stride, layer.pad, Tail(bias=True, shift=8))
    one = conv_case(*args, Knobs())
    two = conv_case(*args, Knobs(vthreads=2))
    np.testing.assert_array_equal(two["got"], two["ref"])
    k2 = two["s"].vdla_knobs
    assert k2.oc_nthread * k2.h_nthread == 2
    tiles, tasks = _tasks(layer, size, k2)
    assert tasks >= 2, f"{layer.name} at {size}x{size}: one load/compute task per thread, nothing to overlap"
    if layer.k == 1 and layer.name != "C11":
        assert tiles >= 2, f"{layer.name} at {size}x{size}: {tiles} output tile(s) per thread"
    r1, r2 = one["report"], two["report"]
    assert _significant(r1), (
        f"{layer.name}: load {r1.modules['load'].busy} / compute {r1.modules['compute'].busy} busy of {r1.cycles} cycles"
    )
    assert r2.cycles < r1.cycles, f"{layer.name}: 2 threads {r2.cycles} cycles, 1 thread {r1.cycles}"


def _small_conv(knobs: Knobs, tail: Tail | None = None):  # type: ignore[no-untyped-def]
    tail = tail or Tail(shift=8)
    D = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="data")
    K = te.placeholder((2, 2, 3, 3, 16, 16), "int8", name="kernel")
    out = conv2d_packed(D, K, 1, 1, tail)
    return schedule_conv2d_packed(out, knobs), [D, K, out]


def test_public_api_lower_build_disassemble_save_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s, args = _small_conv(Knobs(oc_nthread=2))
    text = str(vdla.lower(s, args, target="vdla", config=DEFAULT))
    for word in ("VDLALoadBuffer2D", "VDLAStoreBuffer2D", "VDLAGemm", "VDLAAlu", "kernel", "virtual_thread"):
        assert word in text
    f = vdla.build(s, args, target="vdla", config=DEFAULT)
    assert isinstance(f, VDLAFunction)
    asm = f.disassemble()
    assert "GEMM" in asm and "ALU" in asm and "STORE" in asm and "FINISH" in asm
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 2, 8, 8, 1, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (2, 2, 3, 3, 16, 16), dtype=np.int8)
    o1 = np.zeros((1, 2, 8, 8, 1, 16), np.int8)
    rep = f(Device("fsim"), x, w, o1)
    assert rep.cycles > 0 and f.last_report is rep
    path = tmp_path / "conv.vdlaf"
    f.save(path)
    g = VDLAFunction.load(path)  # no recompilation: the stream comes from the file
    o2 = np.zeros_like(o1)
    g(Device("fsim"), x, w, o2)
    np.testing.assert_array_equal(o1, o2)
    assert np.array_equal(g.program.insns, f.program.insns)
    with pytest.raises(TypeError, match="expected int8"):
        f(Device("fsim"), x.astype(np.int16), w, o1)


def test_token_checker_explains_imbalance() -> None:
    s, args = _small_conv(Knobs())
    f = vdla.build(s, args, target="vdla")
    rep = f.check_tokens()
    assert rep.ok and rep.pushes == rep.pops
    insns = decode(f.program.insns, f.config)
    # drop the first pop of a load->compute token: one token is left over at the end
    k = next(i for i, x in enumerate(insns) if stage_of(x) == Stage.COMPUTE and x.pop_prev)
    insns[k] = insns[k].replace(pop_prev=0)
    bad = check_tokens(Program(f.config, encode(insns, f.config)))
    assert not bad.ok and "l2g" in str(bad) and "left" in str(bad)
    # drop a push instead: the matching pop can never be satisfied
    insns = decode(f.program.insns, f.config)
    k = next(i for i, x in enumerate(insns) if x.opcode == 0 and x.push_next)
    insns[k] = insns[k].replace(push_next=0)
    bad = check_tokens(Program(f.config, encode(insns, f.config)))
    assert not bad.ok and "deadlock" in str(bad) and "waits for a token on l2g" in str(bad)


# ------------------------------------------------------------------ schedules the hardware cannot run


def test_error_tile_larger_than_buffer() -> None:
    s, args = _small_conv(Knobs(tile_co=2, tile_h=8, tile_w=8, tile_ci=2, oc_nthread=1))
    cfg = DEFAULT.replace(name="tinyinp", inp_buff_size=1024)  # 64 INP elements
    with pytest.raises(VDLAError, match=r"INP buffer overflow: stages need 200 elements.*has 64.*conv2d_pad 200"):
        vdla.build(s, args, target="vdla", config=cfg)


def test_error_more_than_two_folded_loops() -> None:
    env = get_env(DEFAULT)
    A = te.placeholder((4, 3, 5, 16), "int32", name="A")
    B = te.placeholder((3, 4, 5, 16), "int32", name="B")
    res = te.compute((4, 3, 5, 16), lambda i, j, k, m: A[i, j, k, m] + B[j, i, k, m], name="res")
    out = te.compute((4, 3, 5, 16), lambda *i: res[i].astype("int8"), name="out")
    s = te.create_schedule(out.op)
    ca = s.cache_read(A, env.acc_scope, [s[res]])
    cb = s.cache_read(B, env.acc_scope, [s[res]])
    s[res].set_scope(env.acc_scope)
    for t in (ca, cb):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[0], env.alu)
    s[out].pragma(s[out].op.axis[0], env.dma_copy)
    with pytest.raises(VDLAError, match=r"stage 'res': alu: 3 loops remain.*at most 2"):
        vdla.build(s, [A, B, out], target="vdla")


def test_alu_only_stage_runs() -> None:
    """An element-wise ALU stage on its own (residual add + ReLU on loaded tensors)."""
    env = get_env(DEFAULT)
    A = te.placeholder((4, 6, 16), "int32", name="A")
    B = te.placeholder((4, 6, 16), "int8", name="B")
    res = te.compute((4, 6, 16), lambda i, j, k: (A[i, j, k] * 2) + (B[i, j, k].astype("int32") * 3), name="res")
    out = te.compute((4, 6, 16), lambda *i: res[i].astype("int8"), name="out")
    s = te.create_schedule(out.op)
    ca = s.cache_read(A, env.acc_scope, [s[res]])
    cb = s.cache_read(B, env.acc_scope, [s[res]])
    s[res].set_scope(env.acc_scope)
    for t in (ca, cb):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[0], env.alu)
    s[out].pragma(s[out].op.axis[0], env.dma_copy)
    with pytest.raises(VDLAError, match="not a chain"):
        vdla.build(s, [A, B, out], target="vdla")  # (A + B*3): B*3 is a second expression
    res2 = te.compute(
        (4, 6, 16), lambda i, j, k: shift_right(te.max(A[i, j, k] + B[i, j, k].astype("int32"), 0), 1), name="r2"
    )
    out2 = te.compute((4, 6, 16), lambda *i: res2[i].astype("int8"), name="out2")
    s = te.create_schedule(out2.op)
    ca = s.cache_read(A, env.acc_scope, [s[res2]])
    cb = s.cache_read(B, env.acc_scope, [s[res2]])
    s[res2].set_scope(env.acc_scope)
    for t in (ca, cb):
        s[t].pragma(s[t].op.axis[0], env.dma_copy)
    s[res2].pragma(s[res2].op.axis[0], env.alu)
    s[out2].pragma(s[out2].op.axis[0], env.dma_copy)
    f = vdla.build(s, [A, B, out2], target="vdla")
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, (4, 6, 16), dtype=np.int32)
    b = rng.integers(-128, 128, (4, 6, 16), dtype=np.int8)
    o = np.zeros((4, 6, 16), np.int8)
    f(Device("fsim"), a, b, o)
    np.testing.assert_array_equal(o, (np.maximum(a + b.astype(np.int32), 0) >> 1).astype(np.int8))


def test_error_consecutive_uops_write_one_accumulator_row() -> None:
    s, args = _small_conv(Knobs(tile_co=1, tile_h=1, tile_w=1, tile_ci=2))
    with pytest.raises(VDLAError, match=r"stage 'conv2d': GEMM.*micro-ops 0 and 1 both write accumulator row"):
        vdla.build(s, args, target="vdla")


def test_error_2d_pattern_not_found() -> None:
    s, args = _small_conv(Knobs(tile_h=4))
    pad = next(st for st in s.stages if st.name == "conv2d_pad")
    n, c, y, x, b, ci = pad.op.axis
    pad.reorder(n, c, x, y, b, ci)  # rows innermost: neither DRAM nor SRAM is contiguous
    with pytest.raises(VDLAError, match=r"stage 'conv2d_pad': dma_copy: 2D pattern not found"):
        vdla.build(s, args, target="vdla")


def test_error_not_lowered_names_the_stage() -> None:
    s, args = _small_conv(Knobs())
    out = next(st for st in s.stages if st.name == "conv2d_out")
    out.iter_var_attrs.clear()  # forget the dma_copy pragma of the store
    with pytest.raises(VDLAError, match=r"stage 'conv2d_out'.*not lowered to VDLA.*dma_copy"):
        vdla.build(s, args, target="vdla")


def test_compile_and_vthread_interleaving_visible_in_stream() -> None:
    """Two threads: loads of one thread sit between the GEMMs of the other in the stream."""
    r1 = conv_case(DEFAULT, 64, 64, 8, 3, 1, 1, Tail(shift=8), Knobs(oc_nthread=2, tile_ci=1))
    ops = [x.opcode for x in r1["f"].program.instructions()]
    gemms = [i for i, op in enumerate(ops) if op == 2]
    loads_between = [i for i, op in enumerate(ops) if op == 0 and gemms[0] < i < gemms[-1]]
    assert loads_between
    assert r1["f"].info["lower_s"] + r1["f"].info["codegen_s"] < 5
