"""The main job's report: per-layer records, checks and totals as a table or JSON.

:class:`JobResult` is what :func:`.job.run_job` returns: the model, the device and config,
one :class:`~.executor.LayerRecord` per node, the :class:`Check` s (bit-exact int8, fp32
against onnxruntime, accuracy), SNR per int8 tensor and the VDLA kernels' timelines;
:meth:`JobResult.table` is what ``vdla run MODEL`` prints, :meth:`JobResult.to_dict` its
``--json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...config import Config
from .executor import LayerRecord
from .partition import UNSUPPORTED

__all__ = ["Check", "JobResult", "SNR_LINES"]


@dataclass
class Check:
    name: str
    ok: bool | None  # None: skipped
    detail: str

    def line(self) -> str:
        word = "PASS" if self.ok else ("skipped" if self.ok is None else "FAIL")
        return f"{self.name}: {word} ({self.detail})"


#: How many per-layer SNR lines the report shows at most (the lowest).
SNR_LINES = 8


@dataclass
class JobResult:
    model: str
    description: str
    device: str
    config: Config
    layers: list[LayerRecord]
    checks: list[Check]
    compile_s: float
    run_s: float
    compiled_from_file: bool = False
    kernels: int = 0
    #: (float value, int8 scale, SNR dB) of every int8 tensor against fp32 (see quantize.layer_snr)
    snr: list[tuple[str, float, float]] = field(default_factory=list)
    #: node -> its kernel's module timeline on the device (`RunResult.traces`), for `vdla.plot`
    traces: dict[str, list[tuple[int, str, int, int]]] = field(default_factory=dict, repr=False)

    # -- totals -------------------------------------------------------------------------
    @property
    def vdla_layers(self) -> list[LayerRecord]:
        return [r for r in self.layers if r.target == "vdla"]

    @property
    def total_cycles(self) -> int:
        return sum(r.cycles or 0 for r in self.vdla_layers)

    @property
    def vdla_seconds(self) -> float:
        return self.total_cycles / (self.config.clock_mhz * 1e6)

    @property
    def cpu_seconds(self) -> float:
        """Host time of the nodes on the host (``llvm``, views and numpy ``host`` steps)."""
        return sum(r.seconds for r in self.layers if r.target in ("host", "llvm", "view"))

    @property
    def mac_share(self) -> float:
        """The share of the model's multiply-accumulates that ran on VDLA (the real ones: no padding)."""
        total = sum(r.macs for r in self.layers)
        return sum(r.macs for r in self.vdla_layers) / total if total else 1.0

    @property
    def cpu_share(self) -> float:
        """The CPU nodes' share of the end-to-end latency: VDLA at the Config's clock plus the CPU nodes."""
        t = self.vdla_seconds + self.cpu_seconds
        return self.cpu_seconds / t if t else 0.0

    @property
    def offload_cpu_seconds(self) -> float | None:
        t = [r.cpu_seconds for r in self.vdla_layers]
        return None if not t or any(v is None for v in t) else float(sum(t))  # type: ignore[arg-type]

    @property
    def speedup(self) -> float | None:
        c = self.offload_cpu_seconds
        return c / self.vdla_seconds if c and self.vdla_seconds else None

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "description": self.description, "device": self.device,
            "config": self.config.name, "clock_mhz": self.config.clock_mhz,
            "layers": [r.to_dict() for r in self.layers],
            "total_cycles": self.total_cycles, "vdla_latency_s": self.vdla_seconds,
            "cpu_nodes_s": self.cpu_seconds, "offloaded_cpu_path_s": self.offload_cpu_seconds,
            "vdla_mac_share": self.mac_share, "cpu_share": self.cpu_share,
            "speedup": self.speedup, "compile_s": self.compile_s, "run_s": self.run_s, "kernels": self.kernels,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "snr_db": [{"value": v, "scale": sc, "snr_db": db} for v, sc, db in self.snr],
            "ok": self.ok,
        }

    def table(self) -> str:
        c = self.config
        lines = [
            f"vdla run {self.model}: {self.description}",
            f"config {c.name}: {c.batch}x{c.block_in}x{c.block_out} GEMM at {c.clock_mhz:g} MHz "
            f"(peak {c.peak_gops:.1f} GOPS), device {self.device}",
            (f"loaded a compiled model ({self.kernels} VDLA kernels)" if self.compiled_from_file else
             f"compiled {len(self.vdla_layers)}/{len(self.layers)} nodes onto VDLA ({self.kernels} kernels) "
             f"in {self.compile_s:.1f} s") + f"; ran in {self.run_s:.1f} s",
            "",
            f"{'#':>3}  {'node':<28} {'kernel':<38} {'target':<6} {'cycles':>9} {'time':>10} "
            f"{'GEMM%':>6} {'bytes':>9} {'exact':>5}",
        ]
        for i, r in enumerate(self.layers, 1):
            cyc = f"{r.cycles:>9}" if r.cycles is not None else f"{'-':>9}"
            util = f"{100 * r.gemm_util:>5.1f}%" if r.gemm_util is not None else f"{'-':>6}"
            ex = "-" if r.exact is None else ("NO" if not r.exact else "tol" if r.max_err else "yes")
            kern = r.op.replace("_packed", "").replace("requantize", "requant")
            kern = kern if len(kern) <= 38 else kern[:35] + "..."
            lines.append(f"{i:>3}  {r.node[:28]:<28} {kern:<38} {r.target:<6} {cyc} {_fmt_s(r.seconds):>10} "
                         f"{util} {_fmt_b(r.bytes_moved):>9} {ex:>5}")
        fb = [r for r in self.layers if r.reason.startswith(("fallback", UNSUPPORTED))]
        for r in fb:
            lines.append(f"     {r.node}: CPU {r.reason}")
        for r in self.layers:
            if r.target == "host" and "numpy: " in r.reason:
                lines.append(f"     {r.node}: not on llvm ({r.reason[r.reason.index('numpy: ') + 7:]})")
        lines.append("")
        macs = sum(r.macs for r in self.vdla_layers)
        util = sum((r.gemm_util or 0) * (r.cycles or 0) for r in self.vdla_layers) / max(1, self.total_cycles)
        lines.append(f"total VDLA cycles {self.total_cycles} = {self.vdla_seconds * 1e3:.2f} ms at {c.clock_mhz:g} MHz "
                     f"({len(self.vdla_layers)} layers, GEMM utilisation {100 * util:.1f}%, "
                     f"{2 * macs / max(self.vdla_seconds, 1e-12) / 1e9:.1f} GOPS)")
        nl = sum(r.target == "llvm" for r in self.layers)
        lines.append(f"CPU nodes on this host: {self.cpu_seconds * 1e3:.1f} ms "
                     f"({len(self.layers) - len(self.vdla_layers)} nodes, {nl} built for llvm)")
        lines.append(f"MACs on VDLA: {100 * self.mac_share:.1f}% of the model's; the CPU nodes are "
                     f"{100 * self.cpu_share:.1f}% of the end-to-end latency (VDLA at {c.clock_mhz:g} MHz + CPU nodes)")
        oc = self.offload_cpu_seconds
        if oc is not None and self.vdla_layers:
            lines.append(f"offloaded layers: VDLA {self.vdla_seconds * 1e3:.2f} ms vs CPU path {oc * 1e3:.1f} ms "
                         f"(numpy int8 on this host) -> speedup {self.speedup:.1f}x")
        lines.append(f"end-to-end latency (VDLA at {c.clock_mhz:g} MHz + CPU nodes): "
                     f"{(self.vdla_seconds + self.cpu_seconds) * 1e3:.2f} ms")
        if self.snr:
            worst = min(self.snr, key=lambda t: t[2])
            shown = self.snr
            if len(shown) > SNR_LINES:  # the lowest ones, in graph order; --json has them all
                cut = sorted(db for _, _, db in shown)[SNR_LINES - 1]
                shown = [t for t in shown if t[2] <= cut][:SNR_LINES]
            lines.append(f"per-layer int8 vs fp32 SNR ({len(self.snr)} int8 tensors; lowest {worst[2]:.1f} dB "
                         f"at {worst[0]}" + (f"; the {len(shown)} lowest shown" if len(shown) < len(self.snr) else "")
                         + "):")
            for v, sc, db in shown:
                lines.append(f"     {v[:40]:<40} scale 2^{int(np.log2(sc)):<4} {db:6.1f} dB")
        lines += [ck.line() for ck in self.checks]
        lines.append(f"result: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _fmt_s(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _fmt_b(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f}M"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f}K"
    return str(n)
