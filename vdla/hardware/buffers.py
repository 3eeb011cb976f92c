"""The on-chip buffers: one `lib.memory.Memory` per buffer, shaped for block-RAM inference.

Each buffer is ``depth`` rows of one element (plain unsigned bits, bytes in DRAM order):

========  =======================  =========================================  ===========
buffer    depth                    row                                        write lanes
========  =======================  =========================================  ===========
UOP       uop_depth                32-bit micro-op                            1
INP       inp_depth                batch x block_in x inp_width               see below
WGT       wgt_depth                block_out x block_in x wgt_width           see below
ACC       acc_depth                batch x block_out x acc_width              see below
OUT       acc_depth (mirrors ACC)  batch x block_out x out_width              1
========  =======================  =========================================  ===========

INP, WGT and ACC are filled by DMA one bus word per cycle, so a row wider than the bus
gets one write enable per bus word (``granularity = bus_width``). Read ports are
synchronous and not transparent (data one cycle after the address, old contents on a
same-cycle write): the compute pipeline forwards results itself. Each memory has one
write port; ACC has two read ports (destination and source of the tensor ALU), which a
block-RAM mapper implements as two copies.

A wide buffer may be cut into column slices (`Core`'s ``wgt_slices``): ``n`` memories of
``row / n`` bits, each with its own read address register, so that no one register drives
all of a 2048-bit WGT buffer's block RAMs, spread over a large part. A slice must hold
whole output lanes and whole bus words (`check_slices`).
"""

from __future__ import annotations

from amaranth import unsigned
from amaranth.lib.memory import Memory

from ..config import Config

__all__ = ["row_bits", "write_lanes", "make_buffer", "check_slices", "KINDS"]

KINDS = ("uop", "inp", "wgt", "acc", "out")


def row_bits(config: Config, kind: str) -> int:
    return 8 * getattr(config, f"{kind}_elem_bytes")


def depth(config: Config, kind: str) -> int:
    return getattr(config, f"{kind}_depth")


def write_lanes(config: Config, kind: str) -> int:
    """Write enables per row: one per bus word for DMA-filled rows wider than the bus."""
    bits = row_bits(config, kind)
    if kind in ("inp", "wgt", "acc") and bits > config.bus_width:
        return bits // config.bus_width
    return 1


def check_slices(config: Config, kind: str, slices: int) -> None:
    """Raise ValueError unless `kind`'s rows can be cut into `slices` column slices."""
    if slices == 1:
        return
    bits = row_bits(config, kind)
    if kind != "wgt" or slices < 1 or config.block_out % slices or (bits // slices) % config.bus_width:
        raise ValueError(
            f"{kind}_slices={slices}: only WGT rows are sliced, into a number of slices that divides "
            f"block_out ({config.block_out}) and leaves whole bus words ({config.bus_width} bits) in each "
            f"of its {bits}-bit rows")


def make_buffer(config: Config, kind: str, slices: int = 1) -> Memory:
    """An empty buffer of `kind` (one of KINDS) for `config`, or one of its `slices` column slices."""
    check_slices(config, kind, slices)
    return Memory(shape=unsigned(row_bits(config, kind) // slices), depth=depth(config, kind), init=[])
