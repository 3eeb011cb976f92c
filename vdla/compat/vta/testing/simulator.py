"""VTA's ``vta.testing.simulator``: counter totals of the runs on ``ext_dev`` and debug flags.

``stats()`` gives VTA's counters (``inp_load_nbytes``, ``wgt_load_nbytes``, ``acc_load_nbytes``,
``uop_load_nbytes``, ``out_store_nbytes``, ``gemm_counter``, ``alu_counter``) plus ``cycles``
of vdla's cycle model, summed since ``clear_stats()``.
"""

from __future__ import annotations

from ....runtime.ndarray import clear_ext_dev_stats, ext_dev_backend, ext_dev_stats

__all__ = ["stats", "clear_stats", "debug_mode", "enabled", "DEBUG_DUMP_INSN", "DEBUG_DUMP_UOP",
           "DEBUG_SKIP_READ_BARRIER", "DEBUG_SKIP_WRITE_BARRIER", "DEBUG_FORCE_SERIAL"]

DEBUG_DUMP_INSN = 1 << 1
DEBUG_DUMP_UOP = 1 << 2
DEBUG_SKIP_READ_BARRIER = 1 << 3
DEBUG_SKIP_WRITE_BARRIER = 1 << 4
DEBUG_FORCE_SERIAL = 1 << 5

_flags = 0


def enabled() -> bool:
    """Whether ext_dev runs on a simulator (fsim, pysim or verilator)."""
    return ext_dev_backend().split(":")[0] in ("fsim", "pysim", "verilator")


def stats() -> dict[str, int]:
    return ext_dev_stats()


def clear_stats() -> None:
    clear_ext_dev_stats()


def debug_mode(flag: int) -> None:
    """Record VTA's debug flags. To see instructions and micro-ops, print ``f.disassemble()`` of the
    built function: vdla shows them from the function, not from the simulator's log."""
    global _flags
    if not isinstance(flag, int) or flag < 0:
        raise ValueError(f"debug_mode: expected a combination of the DEBUG_* flags, got {flag!r}")
    _flags = flag
