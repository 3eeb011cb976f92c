"""What a run reports: cycles, each module's busy/stall/idle time, VTA's counters.

Printed as a terminal table (`Report.table()`) or a dict (`Report.to_dict()`) for --json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import Config

__all__ = ["Report", "ModuleStats"]


@dataclass
class ModuleStats:
    name: str
    insns: int = 0
    busy: int = 0  # executing an instruction
    stall: int = 0  # holding an instruction but waiting for a token or queue space
    end: int = 0  # when its last instruction completed

    def idle(self, cycles: int) -> int:
        """Cycles with nothing to do (empty command queue, or done)."""
        return max(0, cycles - self.busy - self.stall)


@dataclass
class Report:
    config: Config
    cycles: int
    modules: dict[str, ModuleStats]
    counters: dict[str, int]
    instructions: int
    #: (instruction index, module, start cycle, end cycle), in execution order.
    trace: list[tuple[int, str, int, int]] = field(default_factory=list)
    #: Problems found in non-strict mode (leftover tokens, races).
    warnings: list[str] = field(default_factory=list)

    @property
    def gemm_utilisation(self) -> float:
        """GEMM-core busy fraction: non-reset uop-iterations / total cycles."""
        return self.counters.get("gemm_counter", 0) / self.cycles if self.cycles else 0.0

    @property
    def seconds(self) -> float:
        return self.cycles / (self.config.clock_mhz * 1e6)

    @property
    def gops(self) -> float:
        """Achieved GEMM throughput at the config's clock (a MAC counts as two ops)."""
        ops = 2 * self.counters.get("gemm_counter", 0) * self.config.macs_per_cycle
        return ops / self.seconds / 1e9 if self.cycles else 0.0

    @property
    def bytes_moved(self) -> int:
        return sum(v for k, v in self.counters.items() if k.endswith("nbytes"))

    def to_dict(self) -> dict:
        return {
            "config": self.config.name,
            "cycles": self.cycles,
            "instructions": self.instructions,
            "gemm_utilisation": self.gemm_utilisation,
            "gops": self.gops,
            "modules": {
                m.name: {"insns": m.insns, "busy": m.busy, "stall": m.stall, "idle": m.idle(self.cycles)}
                for m in self.modules.values()
            },
            "counters": dict(self.counters),
            "warnings": list(self.warnings),
        }

    def timeline(self, width: int = 72) -> str:
        """A text Gantt chart: one row per module, each column a slice of the run shaded by
        how busy the module was in it (' ' idle, '.' <1/3, ':' <2/3, '#' more)."""
        if not self.cycles or not self.trace:
            return ""
        width = max(8, width)
        edges = np.linspace(0, self.cycles, width + 1)
        rows = []
        for name in self.modules:
            busy = np.zeros(width)
            for _, mod, start, end in self.trace:
                if mod != name or end <= start:
                    continue
                # Overlap of [start, end) with every column.
                lo, hi = np.maximum(edges[:-1], start), np.minimum(edges[1:], end)
                busy += np.clip(hi - lo, 0, None)
            frac = busy / np.diff(edges)
            chars = np.select([frac <= 0, frac < 1 / 3, frac < 2 / 3], [" ", ".", ":"], "#")
            rows.append(f"{name:<8}|{''.join(chars)}|")
        rows.append(f"{'':<8} 0{'cycles':^{width - 1 - len(str(self.cycles))}}{self.cycles}")
        return "\n".join(rows)

    def table(self) -> str:
        c = self.cycles or 1
        lines = [
            f"cycles {self.cycles}  ({self.seconds * 1e6:.1f} us at {self.config.clock_mhz:g} MHz)  "
            f"instructions {self.instructions}",
            f"GEMM utilisation {100 * self.gemm_utilisation:.1f}%  "
            f"({self.gops:.2f} of {self.config.peak_gops:.1f} peak GOPS)",
            "",
            f"{'module':<8} {'insns':>7} {'busy':>10} {'stall':>10} {'idle':>10} {'busy%':>6}",
        ]
        for m in self.modules.values():
            lines.append(
                f"{m.name:<8} {m.insns:>7} {m.busy:>10} {m.stall:>10} {m.idle(self.cycles):>10} {100 * m.busy / c:>5.1f}%"
            )
        lines.append("")
        lines += [f"{k:<18} {v:>12}" for k, v in self.counters.items()]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)
