"""Device DRAM: a byte array with an allocator handing out aligned `Buffer`s.

Instructions address DRAM in elements of their memory type, so every buffer starts on
an alignment that is a multiple of every element size (at least a 4 KiB page, as
VTA's runtime allocates). Address 0 is never handed out, so a zero address in a
program is always a bug.
"""

from __future__ import annotations

import bisect

import numpy as np

__all__ = ["Allocator", "Buffer", "OutOfMemoryError", "BufferError_", "PAGE", "MAX_DRAM", "check_dram_size"]

PAGE = 4096
#: The largest DRAM a device may have: the core's AXI master carries 32-bit byte addresses
#: (`vdla.hardware.interfaces.ADDR_WIDTH`), so it reaches no byte past 4 GiB.
MAX_DRAM = 1 << 32


def check_dram_size(size: object) -> int:
    """``size`` as a DRAM size in bytes, or a ValueError naming dram_size, the value and the range."""
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or not PAGE < size <= MAX_DRAM:
        raise ValueError(f"dram_size must be an integer number of bytes in ({PAGE}, {MAX_DRAM}] (more than the "
                         f"reserved first 4 KiB page, at most the core's 32-bit address space), got {size!r}")
    return int(size)


class OutOfMemoryError(MemoryError):
    """DRAM cannot hold the requested buffer; the message says how much is free."""


class BufferError_(ValueError):
    """Misuse of a buffer: freed twice, used after free, or an access past its end."""


class Allocator:
    """First-fit allocation over [PAGE, size) with coalescing of freed blocks."""

    def __init__(self, size: int, align: int = PAGE) -> None:
        if size <= PAGE:
            raise ValueError(f"DRAM of {size} bytes is too small (need more than {PAGE})")
        self.size, self.align = size, align
        self._free: list[tuple[int, int]] = [(PAGE, size - PAGE)]  # sorted (addr, nbytes)
        self._used: dict[int, int] = {}

    @property
    def free_bytes(self) -> int:
        return sum(n for _, n in self._free)

    @property
    def largest_free(self) -> int:
        return max((n for _, n in self._free), default=0)

    def alloc(self, nbytes: int, align: int | None = None) -> int:
        if nbytes <= 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        align = max(align or self.align, 1)
        for i, (addr, n) in enumerate(self._free):
            start = -(-addr // align) * align
            if start + nbytes <= addr + n:
                self._free.pop(i)
                if start > addr:
                    self._free.insert(i, (addr, start - addr))
                    i += 1
                tail = addr + n - (start + nbytes)
                if tail:
                    self._free.insert(i, (start + nbytes, tail))
                self._used[start] = nbytes
                return start
        raise OutOfMemoryError(
            f"out of DRAM: cannot allocate {nbytes} bytes (aligned to {align}); {self.free_bytes} bytes free, "
            f"largest free block {self.largest_free} bytes, DRAM size {self.size} bytes"
        )

    def free(self, addr: int) -> None:
        if addr not in self._used:
            raise BufferError_(f"free of address {addr:#x}, which is not an allocated buffer (double free?)")
        n = self._used.pop(addr)
        i = bisect.bisect(self._free, (addr, n))
        self._free.insert(i, (addr, n))
        # Coalesce with neighbours.
        if i + 1 < len(self._free) and addr + n == self._free[i + 1][0]:
            self._free[i] = (addr, n + self._free.pop(i + 1)[1])
        if i > 0 and self._free[i - 1][0] + self._free[i - 1][1] == addr:
            prev = self._free.pop(i - 1)
            self._free[i - 1] = (prev[0], prev[1] + self._free[i - 1][1])

    def reserve(self, addr: int, nbytes: int) -> None:
        """Take a fixed range (a program's data segment); it must be free."""
        for i, (a, n) in enumerate(self._free):
            if a <= addr and addr + nbytes <= a + n:
                self._free.pop(i)
                if addr + nbytes < a + n:
                    self._free.insert(i, (addr + nbytes, a + n - addr - nbytes))
                if addr > a:
                    self._free.insert(i, (a, addr - a))
                self._used[addr] = nbytes
                return
        end = addr + nbytes
        if addr < PAGE or end > self.size:
            why = (" (the first 4 KiB page is never handed out: address 0 is never a buffer's)" if addr < PAGE
                   else f" (dram_size {self.size} bytes)")
            raise OutOfMemoryError(f"DRAM range [{addr:#x}, {end:#x}) lies outside the allocatable DRAM "
                                   f"[{PAGE:#x}, {self.size:#x}){why}")
        clash = [(u, u + n) for u, n in sorted(self._used.items()) if u < end and addr < u + n]
        held = f": it overlaps the allocated block [{clash[0][0]:#x}, {clash[0][1]:#x})" if clash else ""
        raise OutOfMemoryError(f"DRAM range [{addr:#x}, {end:#x}) is not free{held}")


class Buffer:
    """A block of device DRAM. `addr` is its byte address, as instructions see it."""

    def __init__(self, dram: np.ndarray, allocator: Allocator, addr: int, nbytes: int, name: str = "") -> None:
        self._dram, self._allocator = dram, allocator
        self.addr, self.nbytes, self.name = addr, nbytes, name or f"buffer@{addr:#x}"
        self.freed = False

    def __repr__(self) -> str:
        return f"Buffer({self.name}, addr={self.addr:#x}, nbytes={self.nbytes})"

    def _span(self, offset: int, nbytes: int) -> slice:
        if self.freed:
            raise BufferError_(f"{self.name} was freed")
        if offset < 0 or offset + nbytes > self.nbytes:
            raise BufferError_(
                f"{self.name}: access [{offset}, {offset + nbytes}) is outside the buffer ({self.nbytes} bytes)"
            )
        return slice(self.addr + offset, self.addr + offset + nbytes)

    def write(self, data: np.ndarray | bytes, offset: int = 0) -> None:
        """Copy host data (any numpy array, its raw little-endian bytes) into the buffer."""
        raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else (
            np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        )
        self._dram[self._span(offset, raw.size)] = raw

    def read(self, dtype: np.dtype | type = np.uint8, shape: tuple[int, ...] | int | None = None, offset: int = 0) -> np.ndarray:
        """Copy device data back to a new host array of `dtype` and `shape`."""
        dt = np.dtype(dtype)
        count = (self.nbytes - offset) // dt.itemsize if shape is None else int(np.prod(shape))
        raw = self._dram[self._span(offset, count * dt.itemsize)].copy()
        arr = raw.view(dt)
        return arr if shape is None else arr.reshape(shape)

    def free(self) -> None:
        if self.freed:
            raise BufferError_(f"{self.name} was already freed")
        self._allocator.free(self.addr)
        self.freed = True
