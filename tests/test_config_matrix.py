"""One cross-section of the compiler and runtime on each of several Configs, so that a Config
change (a new preset, a board's buffer sizes, batch > 1) cannot silently break either.

Per Config: a GEMM written in te and scheduled by hand as in VTA's matrix-multiply tutorial
(DMA pragmas, the GEMM intrinsic by tensorize); an ALU-only stage (add, max, shift); the
conv2d template with a fused tail (bias, requantise, residual); each built for the VDLA
target and run on the golden simulator (fsim) against numpy bit-exactly; and a reduced graph
model (a ResNet block) compiled, partitioned onto VDLA and checked bit-exact node by node.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.templates import alu_pair_schedule, conv_case

import vdla
from vdla import Device
from vdla.compiler import te
from vdla.compiler.graph.job import run_job
from vdla.compiler.targets.vdla import VDLAError, get_env, shift_right
from vdla.compiler.targets.vdla.top import Knobs, Tail
from vdla.config import Config, preset
from vdla.hardware.boards import board_config

#: default 1x16x16, small (1x4x4, 32-bit bus), batch2 (2x8x8), the ULX3S-85F and iCEBreaker boards' Configs.
CONFIGS: dict[str, Config] = {n: preset(n) for n in ("default", "small", "batch2")}
CONFIGS["ulx3s-85f"] = board_config("ulx3s-85f")
CONFIGS["icebreaker"] = board_config("icebreaker")
SEED = 20261124

#: Known gaps, found by this matrix: a 16-bit accumulator (the iCEBreaker's). Strict: a fix turns them
#: into XPASS failures, so the mark is removed with the fix.
ACC16_RESIDUAL = ("the conv2d tail's residual add is built as int32(int16(...)), which the ALU lowering rejects "
                  "as not a chain when acc_width is 16")
ACC16_MODEL = ("with acc_width 16 the graph flow offloads the block's first conv and it is not bit-exact against "
               "the int8 reference (likely its sums overflowing 16 bits: the partitioner should keep it on the CPU "
               "or the reference model the 16-bit accumulator)")


def _known_gap(request, cfg: Config, reason: str, raises: type[BaseException]) -> None:  # type: ignore[no-untyped-def]
    if cfg.acc_width == 16:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason, raises=raises))


@pytest.fixture(params=list(CONFIGS), ids=list(CONFIGS))
def cfg(request) -> Config:  # type: ignore[no-untyped-def]
    print(f"config {request.param}, seed {SEED}")
    return CONFIGS[request.param]


def test_hand_scheduled_gemm(cfg: Config) -> None:
    """C = (A . B^T) truncated to int8, blocks of the Config's geometry, k in two chunks."""
    env = get_env(cfg)
    o, n, m = 2, 4, 3  # batch blocks, k blocks, output blocks
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, name="A")
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, name="B")
    A_buf = te.compute(A.shape, lambda *i: A[i], name="A_buf")
    B_buf = te.compute(B.shape, lambda *i: B[i], name="B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
                                      * B_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
        name="C_buf")
    C = te.compute(C_buf.shape, lambda *i: C_buf[i].astype(env.out_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    k_outer, k_inner = s[C_buf].split(ko, factor=n // 2)
    bo, co, bi, ci = s[C_buf].op.axis
    s[C_buf].reorder(k_outer, bo, co, k_inner, bi, ci, ki)
    s[A_buf].compute_at(s[C_buf], k_outer)
    s[B_buf].compute_at(s[C_buf], k_outer)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(bi, env.gemm)
    f = vdla.build(s, [A, B, C], target="vdla", config=cfg)
    rng = np.random.default_rng(SEED)
    a = rng.integers(-128, 128, (o, n, cfg.batch, cfg.block_in), dtype=np.int8)
    b = rng.integers(-128, 128, (m, n, cfg.block_out, cfg.block_in), dtype=np.int8)
    c = np.zeros((o, m, cfg.batch, cfg.block_out), np.int8)
    rep = f(Device("fsim", config=cfg), a, b, c)
    ref = np.einsum("okbi,mkci->ombc", a.astype(np.int32), b.astype(np.int32)).astype(np.int8)
    np.testing.assert_array_equal(c, ref)
    assert rep.cycles > 0 and rep.gemm_utilisation > 0


def test_alu_stage(cfg: Config) -> None:
    """out = (max(A + B, 0) >> 1) as int8, on the tensor ALU (elements of batch x block_out lanes)."""
    env = get_env(cfg)
    shape = (3, cfg.batch, cfg.block_out)
    A = te.placeholder(shape, env.acc_dtype, name="A")
    B = te.placeholder(shape, "int8", name="B")
    res = te.compute(shape, lambda i, b, k: shift_right(te.max(A[i, b, k] + B[i, b, k].astype(env.acc_dtype), 0), 1),
                     name="res")
    out = te.compute(shape, lambda *i: res[i].astype("int8"), name="out")
    s = alu_pair_schedule(env, A, B, res, out)
    f = vdla.build(s, [A, B, out], target="vdla", config=cfg)
    rng = np.random.default_rng(SEED)
    a = rng.integers(-300, 300, shape).astype(env.acc_dtype)
    b = rng.integers(-128, 128, shape, dtype=np.int8)
    o = np.zeros(shape, np.int8)
    f(Device("fsim", config=cfg), a, b, o)
    np.testing.assert_array_equal(o, (np.maximum(a + b.astype(a.dtype), 0) >> 1).astype(np.int8))


def test_conv2d_template(cfg: Config, request) -> None:  # type: ignore[no-untyped-def]
    _known_gap(request, cfg, ACC16_RESIDUAL, VDLAError)
    ch = 2 * max(cfg.block_in, cfg.block_out)
    r = conv_case(cfg, ch, ch, 6, 3, 1, 1, Tail(bias=True, shift=8, residual=True, clip=(-128, 127)),
                  Knobs(oc_nthread=2), seed=SEED)
    np.testing.assert_array_equal(r["got"], r["ref"])
    assert r["report"].gemm_utilisation > 0


def test_graph_model_bit_exact(cfg: Config, request) -> None:  # type: ignore[no-untyped-def]
    _known_gap(request, cfg, ACC16_MODEL, AssertionError)
    res = run_job("resnet_block", "fsim", cfg, reduced=True, check_fp32=False)
    assert res.vdla_layers, "nothing was offloaded to VDLA"
    assert res.ok, res.table()
    assert all(r.exact for r in res.vdla_layers)
