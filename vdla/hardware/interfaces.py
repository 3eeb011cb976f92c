"""Interfaces shared by the VDLA modules: the internal memory-request ports and SRAM ports.

Memory-request interface (one port per module; an AXI wrapper arbitrates or maps them):

- Read master (fetch, load, compute): the module sends ``cmd`` = {addr, beats}: read
  ``beats`` consecutive bus words starting at byte address ``addr`` (aligned to the bus
  width; ``beats`` >= 1, any length: a bus adapter splits it into AXI bursts). The memory
  answers on ``data`` with the words in order, one per transfer; the module may hold
  ``data.ready`` low to stall. Commands may be issued before earlier data has arrived.
- Write master (store): ``cmd`` = {addr, beats} as above; ``data`` carries the ``beats``
  words of each command in order, with byte strobes; the memory sends one ``resp`` per
  command once all its words are written. Data may precede its command.

Bus words are little-endian: bits [8k+7:8k] hold the byte at address addr + k. SRAM
rows use the same byte order as DRAM elements, so an element is moved bit-for-bit.

All streams follow `amaranth.lib.stream` rules (transfer on valid & ready; valid never
waits for ready).
"""

from __future__ import annotations

from amaranth import Module, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "ADDR_WIDTH", "MemCmd", "read_master", "write_master", "sram_read", "sram_write", "token",
    "connect_read_port", "connect_write_port",
]

#: Width of byte addresses on the memory-request interface.
ADDR_WIDTH = 32


#: One memory command: ``beats`` bus words from byte address ``addr``.
MemCmd = data.StructLayout({"addr": unsigned(ADDR_WIDTH), "beats": unsigned(32)})


def write_beat(bus_width: int) -> data.StructLayout:
    return data.StructLayout({"data": unsigned(bus_width), "strb": unsigned(bus_width // 8)})


def read_master(bus_width: int) -> wiring.Signature:
    """A read port, from the requesting module's side."""
    return wiring.Signature({
        "cmd": Out(stream.Signature(MemCmd)),
        "data": In(stream.Signature(unsigned(bus_width))),
    })


def write_master(bus_width: int) -> wiring.Signature:
    """A write port, from the requesting module's side."""
    return wiring.Signature({
        "cmd": Out(stream.Signature(MemCmd)),
        "data": Out(stream.Signature(write_beat(bus_width))),
        "resp": In(stream.Signature(unsigned(1))),
    })


def sram_read(addr_width: int, data_width: int, copies: int = 1) -> wiring.Signature:
    """A synchronous SRAM read port, from the reading module's side (data one cycle after addr).
    With ``copies`` > 1 the address comes as that many equal copies (an array), one for each
    column slice of a wide memory, so that no one register drives every block RAM."""
    addr = unsigned(addr_width) if copies == 1 else data.ArrayLayout(unsigned(addr_width), copies)
    return wiring.Signature({"en": Out(1, init=1), "addr": Out(addr), "data": In(data_width)})


def sram_write(addr_width: int, data_width: int, lanes: int = 1, copies: int = 1) -> wiring.Signature:
    """A SRAM write port with ``lanes`` write enables (data_width / lanes bits each). With
    ``copies`` > 1 the address comes as that many equal copies, as for `sram_read`."""
    addr = unsigned(addr_width) if copies == 1 else data.ArrayLayout(unsigned(addr_width), copies)
    return wiring.Signature({"en": Out(lanes), "addr": Out(addr), "data": Out(data_width)})


def token() -> stream.Signature:
    """A dependency token: a stream without payload (valid = a token is offered)."""
    return stream.Signature(unsigned(0))


def connect_read_port(m: Module, iface, port) -> None:
    """Drive a `lib.memory` read port from a module's `sram_read` interface."""
    m.d.comb += [port.en.eq(iface.en), port.addr.eq(iface.addr), iface.data.eq(port.data)]


def connect_write_port(m: Module, iface, port) -> None:
    """Drive a `lib.memory` write port from a module's `sram_write` interface."""
    m.d.comb += [port.en.eq(iface.en), port.addr.eq(iface.addr), port.data.eq(iface.data)]
