"""The control registers of the VDLA core: one table for every interface that exposes them.

Two interfaces expose the core's control registers, each to its own runtime backend: the
AXI4-Lite slave of the AXI top (`vdla.hardware.axi.AxiLiteControl`, driven by
``Device("verilator")`` and by a Zynq/LiteX host) and the register port of the board SoC
behind the serial bridge (`vdla.hardware.boards.soc.BoardTop`, driven by
``Device("serial:PORT")``). Both derive their addresses from :data:`TABLE`, and so do the
two backends. The registers 0x00-0x18 and the counters from :data:`COUNTER_BASE` are the
same on both; at 0x1C/0x20 the AXI top identifies itself (MAGIC, VERSION) while a board
reports what the runtime checks before running on it (CONFIG_ID, MEM_SIZE); the debug
registers exist on the AXI top only. All registers are 32 bits at byte offsets;
reads have no side effects; unknown offsets read 0 and ignore writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .core import COUNTER_NAMES
from .errors import ErrorCode

__all__ = [
    "AXI", "BOARD", "Register", "TABLE", "COUNTER_BASE", "STATUS_BITS", "MAGIC", "VERSION", "registers",
    "counter_offset", "describe",
]

AXI, BOARD = "axi", "board"
#: First counter register: counter ``k`` of `vdla.hardware.core.COUNTER_NAMES` is at ``COUNTER_BASE + 4k``.
COUNTER_BASE = 0x40
#: STATUS bits (``bus_error``: the AXI master saw a response other than OKAY; the AXI top only).
STATUS_BITS = {"done": 0, "running": 1, "error": 2, "bus_error": 3}
MAGIC = 0x56444C41  # "VDLA"
VERSION = 1


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str  # "R", "W" or "RW"
    description: str
    interfaces: tuple[str, ...] = (AXI, BOARD)


TABLE: tuple[Register, ...] = (
    Register("control", 0x00, "W", "bit 0: write 1 to start at INSN_ADDR on INSN_COUNT instructions "
             "(ignored while running); reads 0"),
    Register("status", 0x04, "R", "bit 0 done, bit 1 running, bit 2 error, bit 3 bus_error (AXI); "
             "done and error stay set until the next start"),
    Register("insn_addr", 0x08, "RW", "byte address of the instruction stream (16-byte aligned)"),
    Register("insn_count", 0x0C, "RW", "number of instructions"),
    Register("cycles", 0x10, "R", "cycles since the last start (stops when done)"),
    Register("error_code", 0x14, "R", "what stopped the core (`vdla.hardware.errors.ErrorCode`): "
             + ", ".join(f"{int(e)} {e.name}" for e in ErrorCode)),
    Register("error_index", 0x18, "R", "index in the stream of the instruction that raised it (fetch rejects "
             "an encoding before dispatch; load, compute and store find indices past a buffer as they execute)"),
    Register("magic", 0x1C, "R", '0x56444C41 ("VDLA")', (AXI,)),
    Register("version", 0x20, "R", "register map version (1)", (AXI,)),
    Register("config_id", 0x1C, "R", "`config_id` of the Config the core was built for", (BOARD,)),
    Register("mem_size", 0x20, "R", "bytes of memory behind the bridge and the core", (BOARD,)),
    Register("debug_state", 0x24, "R", "[1:0] load, [3:2] compute, [5:4] store `State`; bit 8 fetch busy", (AXI,)),
    Register("debug_lq", 0x28, "R", "[15:0] l2g, [31:16] g2l token queue levels", (AXI,)),
    Register("debug_sq", 0x2C, "R", "[15:0] g2s, [31:16] s2g token queue levels", (AXI,)),
    Register("debug_cmdq", 0x30, "R", "[15:0] load, [31:16] compute command queue levels", (AXI,)),
    Register("debug_cmdq_s", 0x34, "R", "[15:0] store command queue level", (AXI,)),
)


def counter_offset(name: str) -> int:
    """Byte offset of the counter ``name`` (one of `COUNTER_NAMES`)."""
    return COUNTER_BASE + 4 * COUNTER_NAMES.index(name)


def registers(interface: str) -> dict[str, int]:
    """Name -> byte offset of every register ``interface`` (AXI or BOARD) has, the counters
    included as ``counter_<name>``."""
    if interface not in (AXI, BOARD):
        raise ValueError(f"unknown register interface {interface!r}; use {AXI!r} or {BOARD!r}")
    regs = {r.name: r.offset for r in TABLE if interface in r.interfaces}
    regs.update({f"counter_{n}": counter_offset(n) for n in COUNTER_NAMES})
    return regs


def describe(interface: str) -> str:
    """The register map of ``interface`` as a text table (for docs and ``vdla info``)."""
    rows = [f"{r.offset:#06x}  {r.name.upper():<13} {r.access:<3} {r.description}"
            for r in TABLE if interface in r.interfaces]
    last = COUNTER_BASE + 4 * (len(COUNTER_NAMES) - 1)
    rows.append(f"{COUNTER_BASE:#06x}+ counters      R   `COUNTER_NAMES`, 4 bytes apart "
                f"({COUNTER_NAMES[0]} ... {COUNTER_NAMES[-1]} at {last:#x})")
    return "\n".join(rows)
