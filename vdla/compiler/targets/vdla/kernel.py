"""Micro-op kernel specifications in the IR: relative uops plus up to two hardware loops.

A lowered GEMM or ALU instruction is ``attr vdla_kernel = KernelSpec`` around
``VDLAGemm(reset, &acc[d], &inp[s], &wgt[w])`` or ``VDLAAlu(op, use_imm, imm, &acc[d], &acc[s])``:
the call's addresses are the kernel's bases (evaluated per instruction), the spec holds
the uops' offsets from them and the loops' factors, in elements.
"""

from __future__ import annotations

from dataclasses import dataclass

GEMM = "VDLAGemm"
ALU = "VDLAAlu"


@dataclass(frozen=True)
class KernelSpec:
    name: str
    uops: tuple[tuple[int, int, int], ...]  # (dst, src, wgt) offsets in elements
    loops: tuple[tuple[int, int, int, int], ...]  # (extent, dst, src, wgt) factors, outermost first

    def __str__(self) -> str:
        lp = ", ".join(f"{e}x(d{d},s{s},w{w})" for e, d, s, w in self.loops)
        u = " ".join(f"({d},{s},{w})" for d, s, w in self.uops[:4])
        more = f" ... {len(self.uops)} uops" if len(self.uops) > 4 else ""
        return f"kernel {self.name}: loops [{lp}] uops {u}{more}"

    @property
    def iterations(self) -> int:
        n = len(self.uops)
        for e, *_ in self.loops:
            n *= e
        return n

    def span(self, which: int) -> tuple[int, int]:
        """(min, max) offset field ``which`` (0 dst, 1 src, 2 wgt) reaches over the loops."""
        lo = min(u[which] for u in self.uops)
        hi = max(u[which] for u in self.uops)
        for e, *f in self.loops:
            step = f[which] * (e - 1)
            if step >= 0:
                hi += step
            else:
                lo += step
        return lo, hi
