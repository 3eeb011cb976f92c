"""Micro-op kernels: the uops a GEMM or ALU instruction runs, and its two hardware loops.

A kernel is what VTA's runtime records between `VTAUopLoopBegin` and `VTAPushGEMMOp`:
at most two affine loops (outermost first) around a list of (dst, src, wgt) uops. The
runtime caches kernels on chip by their uop contents (`stream.CommandStream`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Loop", "UopKernel", "KernelError"]


class KernelError(ValueError):
    """A kernel breaks a rule of the hardware; the message names the kernel."""


@dataclass(frozen=True)
class Loop:
    """A hardware loop: `extent` iterations, adding the factors to the uop indices each time."""

    extent: int
    dst: int = 0
    src: int = 0
    wgt: int = 0


@dataclass(frozen=True)
class UopKernel:
    uops: tuple[tuple[int, int, int], ...]
    loops: tuple[Loop, ...] = ()
    name: str = "kernel"

    def __post_init__(self) -> None:
        object.__setattr__(self, "uops", tuple(tuple(int(v) for v in u) for u in self.uops))
        object.__setattr__(self, "loops", tuple(lp if isinstance(lp, Loop) else Loop(*lp) for lp in self.loops))
        if not self.uops:
            raise KernelError(f"kernel {self.name!r} has no uops")
        for i, u in enumerate(self.uops):
            if len(u) != 3 or min(u) < 0:
                raise KernelError(f"kernel {self.name!r}: uop {i} must be three non-negative indices (dst, src, wgt), got {u}")
        if len(self.loops) > 2:
            raise KernelError(f"kernel {self.name!r} has {len(self.loops)} loops; the hardware runs at most 2")
        for i, loop in enumerate(self.loops):
            if loop.extent < 1 or min(loop.dst, loop.src, loop.wgt) < 0:
                raise KernelError(f"kernel {self.name!r}: loop {i} needs extent >= 1 and non-negative factors, got {loop}")
        # VTA's runtime rule (UopKernel::VerifyDep): the pipelined accumulator update must not
        # see a row written by either of the two uops before.
        for i in range(1, len(self.uops)):
            for back in (1, 2):
                if i >= back and self.uops[i][0] == self.uops[i - back][0]:
                    raise KernelError(
                        f"kernel {self.name!r}: uops {i - back} and {i} both write ACC row {self.uops[i][0]} "
                        f"within two uops; put at least two other uops between them"
                    )

    @classmethod
    def single(cls, dst: int = 0, src: int = 0, wgt: int = 0, loops: tuple = (), name: str = "kernel") -> UopKernel:
        return cls(((dst, src, wgt),), tuple(loops), name)

    @property
    def iterations(self) -> int:
        n = len(self.uops)
        for loop in self.loops:
            n *= loop.extent
        return n
