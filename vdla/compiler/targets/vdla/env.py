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
from ...tir.nodes import AddressOf, CallExtern, Evaluate, IntImm, seq
from ...tir.op import shift_left, shift_right  # re-exported: VTA programs take them from the env module

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

    # -- VTA's spellings (vta.get_env().INP_WIDTH, LOG_BLOCK_IN, ACC_BUFF_SIZE, INP_ELEM_BYTES, TARGET ...)
    def __getattr__(self, name: str) -> Any:
        if name.startswith("LOG_"):
            v = getattr(self, name[4:])
            if not isinstance(v, int) or v <= 0 or v & (v - 1):
                raise AttributeError(f"{name}: {name[4:]} = {v} is not a power of two")
            return v.bit_length() - 1
        if name in _VTA_CONFIG_NAMES:
            return getattr(self.config, _VTA_CONFIG_NAMES[name])
        if name.endswith("_ELEM_BITS") and name[:-5] + "_BYTES" in _VTA_CONFIG_NAMES:
            return 8 * getattr(self.config, _VTA_CONFIG_NAMES[name[:-5] + "_BYTES"])
        raise AttributeError(f"the VDLA environment has no attribute {name!r}")

    @property
    def TARGET(self) -> str:  # noqa: N802
        """VTA's name of where ``ext_dev`` runs: ``sim`` (fsim), ``tsim`` (RTL simulation) or the backend name."""
        from ....runtime.ndarray import ext_dev_backend

        kind = ext_dev_backend().split(":")[0]
        return {"fsim": "sim", "pysim": "tsim", "verilator": "tsim"}.get(kind, kind)

    HW_VER = "0.0.2"
    target_host = "llvm"
    target_vta_cpu = "llvm"

    @property
    def MODEL(self) -> str:  # noqa: N802
        return f"{self.TARGET}_{self.config.name}"

    @property
    def target(self) -> Any:
        """``Target("ext_dev", host="llvm")``: what ``vta.build`` and ``vdla.build`` compile for."""
        from ..target import Target

        return Target("ext_dev", host=self.target_host)

    def __enter__(self) -> Env:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.pop()

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


#: VTA's environment names that are Config fields
_VTA_CONFIG_NAMES = {
    "INP_WIDTH": "inp_width", "WGT_WIDTH": "wgt_width", "ACC_WIDTH": "acc_width", "OUT_WIDTH": "out_width",
    "UOP_BUFF_SIZE": "uop_buff_size", "INP_BUFF_SIZE": "inp_buff_size", "WGT_BUFF_SIZE": "wgt_buff_size",
    "ACC_BUFF_SIZE": "acc_buff_size", "INP_ELEM_BYTES": "inp_elem_bytes", "WGT_ELEM_BYTES": "wgt_elem_bytes",
    "ACC_ELEM_BYTES": "acc_elem_bytes", "OUT_ELEM_BYTES": "out_elem_bytes", "UOP_ELEM_BYTES": "uop_elem_bytes",
}

_ENVS: dict[Config, Env] = {}
_CURRENT: list[Env] = []  # `with env:` blocks (VTA's Environment.current)


def get_env(config: Config | None = None) -> Env:
    """The environment of ``config``: the one of the innermost ``with env:`` block, else the
    default Config's; one object per Config."""
    if config is None and _CURRENT:
        return _CURRENT[-1]
    config = config or Config()
    env = _ENVS.get(config)
    if env is None:
        env = Env(config)
        env.gemm = _gemm_intrin(env)
        _ENVS[config] = env
    return env


def is_addr(e: Any) -> bool:
    return isinstance(e, AddressOf)


def const_value(e: Any) -> int | None:
    return e.value if isinstance(e, IntImm) else None

