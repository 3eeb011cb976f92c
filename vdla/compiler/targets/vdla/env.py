"""The VDLA target environment: memory scopes, pragmas, dtypes and the GEMM intrinsic,
all derived from a :class:`~vdla.config.Config` (VTA's ``vta.get_env()``).

    env = get_env(config)
    s[cdata].set_scope(env.inp_scope); s[cdata].pragma(axis, env.dma_copy)
    s[conv].tensorize(bi, env.gemm)

Scopes name the on-chip buffers (``local.inp_buffer``, ``local.wgt_buffer``,
``local.acc_buffer``); the output buffer has no scope: stores always read OUT at the
row an accumulator-scope buffer occupies (GEMM and ALU write both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....config import Config
from ....isa import Mem
from ... import te
from ...tir.nodes import AddressOf, CallExtern, Evaluate, Expr, IntImm, seq, shift

__all__ = [
    "Env", "get_env", "INP_SCOPE", "WGT_SCOPE", "ACC_SCOPE", "DMA_COPY", "ALU", "SCOPE_MEM",
    "shift_right", "shift_left", "VDLAError",
]

INP_SCOPE = "local.inp_buffer"
WGT_SCOPE = "local.wgt_buffer"
ACC_SCOPE = "local.acc_buffer"
DMA_COPY = "dma_copy"
ALU = "alu"
SCOPE_MEM = {INP_SCOPE: Mem.INP, WGT_SCOPE: Mem.WGT, ACC_SCOPE: Mem.ACC}

#: intrinsic call names in the lowered IR
GEMM_UPDATE = "VDLAGemm"
GEMM_RESET = "VDLAGemmReset"


class VDLAError(ValueError):
    """A schedule the VDLA hardware cannot run; the message names the stage, the buffer and the limit."""


def _int_dtype(bits: int) -> str:
    return f"int{bits}"


@dataclass(eq=False)
class Env:
    config: Config
    gemm: Any = field(default=None, repr=False)

    inp_scope = INP_SCOPE
    wgt_scope = WGT_SCOPE
    acc_scope = ACC_SCOPE
    dma_copy = DMA_COPY
    alu = ALU

    @property
    def BATCH(self) -> int:  # noqa: N802 - VTA's names
        return self.config.batch

    @property
    def BLOCK_IN(self) -> int:  # noqa: N802
        return self.config.block_in

    @property
    def BLOCK_OUT(self) -> int:  # noqa: N802
        return self.config.block_out

    @property
    def inp_dtype(self) -> str:
        return _int_dtype(self.config.inp_width)

    @property
    def wgt_dtype(self) -> str:
        return _int_dtype(self.config.wgt_width)

    @property
    def acc_dtype(self) -> str:
        return _int_dtype(self.config.acc_width)

    @property
    def out_dtype(self) -> str:
        return _int_dtype(self.config.out_width)

    def elem_scalars(self, mem: Mem) -> int:
        """Scalars (lanes) in one element of a memory type."""
        c = self.config
        return {
            Mem.INP: c.batch * c.block_in,
            Mem.WGT: c.block_out * c.block_in,
            Mem.ACC: c.batch * c.block_out,
            Mem.ACC_8BIT: c.batch * c.block_out,
            Mem.OUT: c.batch * c.block_out,
        }[mem]

    def depth(self, mem: Mem) -> int:
        c = self.config
        return {Mem.INP: c.inp_depth, Mem.WGT: c.wgt_depth, Mem.ACC: c.acc_depth, Mem.OUT: c.out_depth}[mem]


def _gemm_intrin(env: Env) -> Any:
    c = env.config
    inp = te.placeholder((c.batch, c.block_in), env.inp_dtype, name="inp")
    wgt = te.placeholder((c.block_out, c.block_in), env.wgt_dtype, name="wgt")
    k = te.reduce_axis((0, c.block_in), name="k")
    out = te.compute(
        (c.batch, c.block_out),
        lambda i, j: te.sum(inp[i, k].astype(env.acc_dtype) * wgt[j, k].astype(env.acc_dtype), axis=k),
        name="gemm",
    )

    def fintrin(ins: Any, outs: Any) -> Any:
        a, w = ins
        (o,) = outs
        update = Evaluate(CallExtern(GEMM_UPDATE, [o.access_ptr(), a.access_ptr(), w.access_ptr()]))
        reset = Evaluate(CallExtern(GEMM_RESET, [o.access_ptr()]))
        return seq(reset, update), reset, update

    return te.decl_tensor_intrin(out.op, fintrin, name="GEMM")


_ENVS: dict[Config, Env] = {}


def get_env(config: Config | None = None) -> Env:
    """The environment of ``config`` (the default Config if None); one object per Config."""
    config = config or Config()
    env = _ENVS.get(config)
    if env is None:
        env = Env(config)
        env.gemm = _gemm_intrin(env)
        _ENVS[config] = env
    return env


def shift_right(x: Any, n: Any) -> Expr:
    """Arithmetic shift right (the ALU's SHR); numpy: ``x >> n``. The same as ``x >> n`` on expressions."""
    return shift("shift_right", x, n)


def shift_left(x: Any, n: Any) -> Expr:
    """Shift left (the ALU's SHR by a negative amount); numpy: ``x << n``."""
    return shift("shift_left", x, n)


def is_addr(e: Any) -> bool:
    return isinstance(e, AddressOf)


def const_value(e: Any) -> int | None:
    return e.value if isinstance(e, IntImm) else None

