"""The VDLA environment under VTA's names (vta.get_env().BATCH, INP_WIDTH, LOG_BLOCK_IN, TARGET ...)."""

from __future__ import annotations

import pytest

from vdla.compiler.targets.vdla.env import get_env
from vdla.config import preset
from vdla.runtime import ndarray


@pytest.mark.parametrize("cfg", ["default", "small", "batch2"])
def test_names_follow_the_config(cfg):
    c = preset(cfg)
    env = get_env(c)
    assert (env.BATCH, env.BLOCK_IN, env.BLOCK_OUT) == (c.batch, c.block_in, c.block_out)
    assert (env.INP_WIDTH, env.WGT_WIDTH, env.ACC_WIDTH, env.OUT_WIDTH) == (
        c.inp_width, c.wgt_width, c.acc_width, c.out_width)
    assert env.inp_dtype == f"int{c.inp_width}" and env.acc_dtype == f"int{c.acc_width}"
    assert 1 << env.LOG_BLOCK_IN == c.block_in and 1 << env.LOG_INP_WIDTH == c.inp_width
    assert env.ACC_BUFF_SIZE == c.acc_buff_size and env.WGT_ELEM_BITS == 8 * c.wgt_elem_bytes
    assert (env.inp_scope, env.wgt_scope, env.acc_scope) == (
        "local.inp_buffer", "local.wgt_buffer", "local.acc_buffer")
    assert (env.dma_copy, env.alu) == ("dma_copy", "alu") and env.gemm.name == "GEMM"
    assert env.target.kind.name == "ext_dev" and str(env.target.host) == env.target_host == "llvm"
    with pytest.raises(AttributeError, match="NO_SUCH"):
        _ = env.NO_SUCH


def test_target_follows_the_ext_dev_backend():
    env = get_env()
    try:
        for backend, name in [("fsim", "sim"), ("pysim", "tsim"), ("verilator", "tsim"), ("serial:/dev/x", "serial")]:
            ndarray.set_ext_dev_backend(backend)
            assert env.TARGET == name
    finally:
        ndarray.set_ext_dev_backend("fsim")


def test_with_env_makes_it_current():
    small = get_env(preset("small"))
    assert get_env().config == preset("default")
    with small:
        assert get_env() is small
    assert get_env() is not small
