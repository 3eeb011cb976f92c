"""VTA's Python API over vdla, so that VTA programs run with ``import vdla.vta as vta``::

    env = vta.get_env()                      # BATCH, BLOCK_IN, inp_dtype, gemm, dma_copy, acc_scope ...
    with vta.build_config():
        f = vta.build(s, [A, B, C], tvm.target.Target("ext_dev", host=env.target_host), name="gemm")
    f(a_nd, b_nd, c_nd)                      # NDArrays on vdla.ext_dev(0): runs on fsim
    from vdla.vta.testing import simulator; simulator.stats()

The environment is :mod:`vdla.compiler.targets.vdla.env` (one per Config); ``build`` and
``lower`` are vdla's with target ``vdla``. ``program_fpga`` and ``reconfig_runtime`` have
nothing to do on the simulators. This package sits above the compiler: nothing in vdla
imports it.
"""

from __future__ import annotations

from typing import Any

from ...compiler import driver
from ...compiler.targets.target import Target
from ...compiler.targets.vdla.env import Env, get_env
from ...compiler.transform import PassContext
from ...runtime.ndarray import ext_dev_backend
from . import testing

Environment = Env

__all__ = ["get_env", "Environment", "build_config", "build", "lower", "program_fpga", "reconfig_runtime", "testing"]


def build_config(debug_flag: int = 0, **kwargs: Any) -> PassContext:
    """``with vta.build_config(...):`` -- a PassContext (VDLA's passes are always in the pipeline of a
    ``vdla`` build; ``debug_flag`` is kept in its config)."""
    ctx = PassContext(**{"opt_level": 3, **kwargs})
    ctx.config["vta.debug_flag"] = debug_flag
    return ctx


def _is_accel(target: Any) -> bool:
    if target is None:
        return True
    t = target if isinstance(target, Target) else Target(str(target))
    return t.backend == "vdla"


def build(sch: Any, args: Any = None, target: Any = None, target_host: Any = None, name: str = "default_function",
          binds: Any = None, env: Env | None = None, **_: Any) -> Any:
    """Compile for the accelerator of ``env`` (default ``get_env()``); a CPU target builds for the CPU."""
    if binds:
        raise ValueError("vta.build: binds= is not supported; pass the tensors in args")
    if not _is_accel(target):
        return driver.build(sch, args, target=target, name=name, target_host=target_host)
    return driver.build(sch, args, target="vdla", name=name, config=(env or get_env()).config)


def lower(sch: Any, args: Any, name: str = "main", simple_mode: bool = False, env: Env | None = None,
          **_: Any) -> Any:
    """The function lowered for the accelerator (its DMA, GEMM and ALU intrinsics in the IR)."""
    return driver.lower(sch, args, name=name, target="vdla", config=(env or get_env()).config)


def program_fpga(remote: Any = None, bitstream: Any = None) -> None:
    """Nothing to program on a simulator; a board is programmed with ``vdla synth`` / its flasher."""
    if ext_dev_backend().split(":")[0] not in ("fsim", "pysim", "verilator"):
        raise RuntimeError(
            f"vta.program_fpga: ext_dev runs on {ext_dev_backend()!r}; program the board with the bitstream from "
            "`vdla synth BOARD` (bitstreams/) before running"
        )


def reconfig_runtime(remote: Any = None) -> None:
    """Nothing to rebuild: vdla's runtime reads the Config of each built function."""
