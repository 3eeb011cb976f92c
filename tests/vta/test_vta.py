"""vdla.vta: VTA's API -- build/lower for the accelerator, ext_dev NDArrays, simulator statistics."""

from __future__ import annotations

import numpy as np
import pytest

import vdla
import vdla.vta as vta
from vdla import te
from vdla.vta.testing import simulator


def _gemm(env, m=2, n=2):
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    A = te.placeholder((1, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute(A.shape, lambda *i: A(*i), "A_buf")
    B_buf = te.compute(B.shape, lambda *i: B(*i), "B_buf")
    C_buf = te.compute(
        (1, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype) * B_buf[co, ko, ci, ki].astype(env.acc_dtype), axis=[ko, ki]),
        name="C_buf")
    C_shr = te.compute(C_buf.shape, lambda *i: C_buf(*i) >> 2, name="C_shr")  # on the tensor ALU
    C = te.compute(C_buf.shape, lambda *i: C_shr(*i).astype(env.out_dtype), name="C")
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    s[C_shr].set_scope(env.acc_scope)
    s[C_shr].pragma(s[C_shr].op.axis[0], env.alu)
    ax = s[C_buf].op.axis
    s[C_buf].reorder(ko, ax[0], ax[1], ax[2], ax[3], ki)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].tensorize(ax[2], env.gemm)
    return s, (A, B, C)


def _ref(env, a, b):
    acc = np.einsum("xkbi,mkoi->xmbo", a.astype("int32"), b.astype("int32"))
    return (acc >> 2).astype(env.out_dtype)


@pytest.mark.parametrize("cfg", ["default", "batch2"])
def test_build_and_run_on_ext_dev(cfg):
    env = vta.get_env(vdla.preset(cfg)) if cfg != "default" else vta.get_env()
    with env:
        s, (A, B, C) = _gemm(env)
        text = str(vta.lower(s, [A, B, C], simple_mode=True))
        assert "VDLAGemm" in text and "VDLALoadBuffer2D" in text
        with vta.build_config(debug_flag=simulator.DEBUG_DUMP_INSN):
            f = vta.build(s, [A, B, C], vdla.target.Target("ext_dev", host=env.target_host), name="g")
    rng = np.random.default_rng(3)
    print("seed 3", cfg)
    a = rng.integers(-128, 128, [int(x.value) for x in A.shape], dtype="int8")
    b = rng.integers(-128, 128, [int(x.value) for x in B.shape], dtype="int8")
    ctx = vdla.ext_dev(0)
    a_nd, b_nd = vdla.nd.array(a, ctx), vdla.nd.array(b, ctx)
    c_nd = vdla.nd.empty([int(x.value) for x in C.shape], env.out_dtype, ctx)
    simulator.clear_stats()
    f(a_nd, b_nd, c_nd)
    np.testing.assert_array_equal(c_nd.numpy(), _ref(env, a, b))
    st = simulator.stats()
    assert st["gemm_counter"] > 0 and st["alu_counter"] > 0 and st["inp_load_nbytes"] == a.nbytes and st["wgt_load_nbytes"] == b.nbytes
    assert st["out_store_nbytes"] == c_nd.numpy().nbytes and st["cycles"] > 0
    ev = f.time_evaluator(f.entry_name, ctx, number=2)
    assert ev(a_nd, b_nd, c_nd).mean == pytest.approx(f.last_report.seconds)  # the cycle model's time
    simulator.clear_stats()
    assert simulator.stats() == {}


def test_save_upload_load_like_the_tutorial(tmp_path):
    env = vta.get_env()
    s, (A, B, C) = _gemm(env, m=1, n=1)
    f = vta.build(s, [A, B, C], "ext_dev", name="my_gemm")
    f.save(tmp_path / "gemm.o")
    remote = vdla.rpc.LocalSession()
    remote.upload(str(tmp_path / "gemm.o"))
    g = remote.load_module("gemm.o")
    ctx = remote.ext_dev(0)
    a = np.ones((1, 1, 1, 16), "int8")
    b = np.full((1, 1, 16, 16), 2, "int8")
    c = vdla.nd.empty((1, 1, 1, 16), "int8", ctx)
    g(vdla.nd.array(a, ctx), vdla.nd.array(b, ctx), c)
    np.testing.assert_array_equal(c.numpy(), _ref(env, a, b))
    with pytest.raises(TypeError, match="its arrays are on cpu"):
        g(vdla.nd.array(a), vdla.nd.array(b), vdla.nd.empty((1, 1, 1, 16), "int8"))
    out = np.zeros((1, 1, 1, 16), "int8")
    with pytest.raises(TypeError, match="must be a device"):
        g(a, a, b, out)
    g(vdla.Device("fsim"), a, b, out)  # vdla's own call form still works
    np.testing.assert_array_equal(out, _ref(env, a, b))


def test_no_ops_and_errors():
    assert simulator.enabled()
    vta.program_fpga(None, bitstream=None)
    vta.reconfig_runtime(None)
    with pytest.raises(RuntimeError, match="no RPC"):
        vdla.rpc.connect("192.168.2.99", 9091)
    with pytest.raises(ValueError, match="DEBUG"):
        simulator.debug_mode(-1)
    env = vta.get_env()
    s, args = _gemm(env, 1, 1)
    assert isinstance(vta.build(s, list(args), None), vdla.compiler.targets.vdla.module.VDLAFunction)
