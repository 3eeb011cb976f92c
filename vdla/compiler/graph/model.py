"""Running a compiled model: :class:`CompiledModel` runs a prepared graph node by node on a
Device (VDLA kernels) and the host (llvm and numpy kernels), with per-node records.

::

    m = compile_model(g, config)                        # vdla.compiler.graph.compile
    res = m.run({"data": x}, Device("fsim", config=config))
    res.outputs, res.layers                             # outputs and per-node records
    m.save("resnet18.vdla"); m2 = CompiledModel.load("resnet18.vdla")

With ``reference=True`` every node is also evaluated with the int8 numpy reference and
compared: bit-exactly for integer nodes, within :data:`FP32_RTOL` for ``llvm`` float32
nodes (the reference then continues from the llvm value, so integer nodes downstream are
still compared bit-exactly).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Config
from . import model_file
from .ir import Graph, GraphError, Node
from .kernels import Kernel
from .ops.registry import get_op
from .reference import check_inputs

__all__ = ["CompiledModel", "LayerRecord", "RunResult", "ExecutorError", "FP32_RTOL"]

#: An llvm node's float32 output agrees with the numpy reference when max |err| <= FP32_RTOL * max(1, max |ref|)
#: (the tolerance the job's fp32 check against onnxruntime uses).
FP32_RTOL = 1e-4


class ExecutorError(RuntimeError):
    """A node could not be compiled or run; the message names the node."""


@dataclass
class LayerRecord:
    """One node's execution: target, device cycles or host time, utilisation, bytes."""

    node: str
    op: str
    target: str
    seconds: float  # host wall time (cpu), or cycles at the board clock (vdla)
    cycles: int | None = None
    gemm_util: float | None = None
    bytes_moved: int = 0
    macs: int = 0
    cpu_seconds: float | None = None  # the same node on the CPU path (for the speedup)
    exact: bool | None = None  # against the int8 reference (llvm float32 nodes: within FP32_RTOL)
    max_err: float | None = None  # max |output - reference| (0 when bit-exact)
    reason: str = ""
    wall_s: float = 0.0  # host time spent running (simulation or numpy)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    layers: list[LayerRecord]
    values: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    reference: list[np.ndarray] | None = None  # the reference outputs (run(reference=True))
    #: node -> the device's (instruction, module, start, end) timeline of its VDLA kernel (fsim, traced pysim)
    traces: dict[str, list[tuple[int, str, int, int]]] = field(default_factory=dict, repr=False)


class CompiledModel:
    """A prepared graph with a kernel per node; run it on any Device, save it to one file."""

    def __init__(self, graph: Graph, config: Config, kernels: dict[str, Kernel], functions: list[Any],
                 info: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self.config = config
        self.kernels = kernels
        self.functions = functions
        self.info = dict(info or {})

    def __repr__(self) -> str:
        nv = sum(1 for k in self.kernels.values() if k.target == "vdla")
        nl = sum(1 for k in self.kernels.values() if k.target == "llvm")
        return (f"<CompiledModel {self.graph.name!r}: {len(self.kernels)} nodes, {nv} on VDLA "
                f"({len(self.functions)} kernels), {nl} on llvm, config {self.config.name!r}>")

    def summary(self) -> list[tuple[str, str, str, str]]:
        """(node, op/pattern, target, reason) per node."""
        out = []
        for n in self.graph.topo_order():
            k = self.kernels[n.name]
            out.append((n.name, n.attrs.get("pattern") or n.op, k.target, k.record_reason))
        return out

    # -- running ----------------------------------------------------------------------
    def run(self, inputs: Any, device: Any = None, *, reference: bool = False, cpu_timing: bool = False,
            progress: Callable[[str], None] | None = None) -> RunResult:
        """Run on ``device`` (a Device with this model's config; None: a new fsim).

        ``reference``: also evaluate every node with the int8 reference (the CPU path) and
        record per node whether the outputs agree bit-exactly; ``cpu_timing``: time that
        CPU evaluation of the offloaded nodes (for the speedup).
        """
        from ...runtime import Device

        dev = device if device is not None else Device("fsim", config=self.config)
        g = self.graph
        env: dict[str, np.ndarray] = dict(g.consts)
        env.update(check_inputs(g, inputs))
        ref_env: dict[str, np.ndarray] = dict(env)
        layers: list[LayerRecord] = []
        traces: dict[str, list[tuple[int, str, int, int]]] = {}
        clock = self.config.clock_mhz * 1e6
        order = g.topo_order()
        for idx, n in enumerate(order):
            k = self.kernels[n.name]
            t0 = time.perf_counter()
            if k.target == "vdla":
                if progress:
                    progress(f"[{idx + 1}/{len(order)}] {n.name} on {dev.name}")
                val, rep = self._run_vdla(n, k, env, dev)
                wall = time.perf_counter() - t0
                moved = int(sum(v for c, v in rep.counters.items() if c.endswith("nbytes")))
                rec = LayerRecord(n.name, n.attrs.get("pattern") or n.op, "vdla", rep.cycles / clock, rep.cycles,
                                  rep.gemm_utilisation, moved, k.macs, wall_s=wall)
                if getattr(rep, "trace", None):
                    traces[n.name] = rep.trace
            else:
                val = self._run_llvm(n, k, env) if k.target == "llvm" else self._run_cpu(n, [env[i] for i in n.inputs])
                wall = time.perf_counter() - t0
                moved = sum(env[i].nbytes for i in n.inputs if i not in g.consts) + val.nbytes
                rec = LayerRecord(n.name, n.attrs.get("pattern") or n.op, k.target, wall, bytes_moved=int(moved),
                                  macs=k.macs, reason=k.record_reason, wall_s=wall)
            env[n.name] = val
            if reference or (cpu_timing and k.target == "vdla"):
                if k.target == "vdla":
                    t1 = time.perf_counter()
                    rv = self._run_cpu(n, [ref_env[i] for i in n.inputs])
                    rec.cpu_seconds = time.perf_counter() - t1
                elif k.target == "llvm":
                    rv = self._run_cpu(n, [ref_env[i] for i in n.inputs])
                else:
                    rv = val if all(np.array_equal(env[i], ref_env[i]) for i in n.inputs if i not in g.consts) \
                        else self._run_cpu(n, [ref_env[i] for i in n.inputs])
                rec.exact, rec.max_err = _agree(val, rv, float_tol=k.target == "llvm")
                # an llvm float result within tolerance: the reference continues from it, so that
                # the integer nodes downstream (quantise, VDLA) are still compared bit-exactly
                ref_env[n.name] = val if rec.exact and k.target == "llvm" else rv
            layers.append(rec)
        ref_out = [ref_env[o] for o in g.outputs] if reference else None
        return RunResult([env[o] for o in g.outputs], layers, env, ref_out, traces)

    def _run_llvm(self, n: Node, k: Kernel, env: Mapping[str, np.ndarray]) -> np.ndarray:
        try:
            return k.llvm(env)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on llvm: {type(e).__name__}: {e}") from e

    def _run_cpu(self, n: Node, args: list[np.ndarray]) -> np.ndarray:
        try:
            return get_op(n.op, n.name).compute(n.attrs, args)
        except GraphError:
            raise
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on the CPU: {type(e).__name__}: {e}") from e

    def _run_vdla(self, n: Node, k: Kernel, env: Mapping[str, np.ndarray], dev: Any) -> tuple[np.ndarray, Any]:
        ch = k.chain
        assert ch is not None and k.func is not None
        f = self.functions[k.func]
        arrays = [np.ascontiguousarray(env[ch.data]), np.ascontiguousarray(env[ch.weight])]
        if k.bias_packed is not None:
            arrays.append(k.bias_packed)
        if k.shifts_packed is not None:
            arrays.append(k.shifts_packed)
        if ch.residual is not None:
            arrays.append(np.ascontiguousarray(env[ch.residual]))
        out_t = n.type
        assert out_t is not None
        out = np.zeros(out_t.shape, np.int8)
        arrays.append(out)
        # the grouped / transpose kernels see the packed residual and output in their own
        # (byte-identical) shapes: pass views, so the output lands in ``out``
        arrays = [a if a.shape == spec.shape else a.reshape(spec.shape) for a, spec in zip(arrays, f.args)]
        try:
            rep = f(dev, *arrays)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} failed on {dev.name}: {type(e).__name__}: {e}") from e
        return out, rep

    # -- files ------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        return model_file.encode(self)

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_bytes(self.to_bytes())
        return p

    @classmethod
    def from_bytes(cls, blob: bytes, source: str = "model") -> CompiledModel:
        return cls(*model_file.decode(blob, source))

    @classmethod
    def load(cls, path: str | Path) -> CompiledModel:
        p = Path(path)
        return cls.from_bytes(p.read_bytes(), str(p))


def _agree(val: np.ndarray, ref: np.ndarray, float_tol: bool) -> tuple[bool, float]:
    """(agrees, max |err|): bit-exact, or for float32 with ``float_tol`` within FP32_RTOL."""
    if np.array_equal(val, ref):
        return True, 0.0
    if val.shape != ref.shape:
        return False, float("inf")
    if not (float_tol and val.dtype.kind == "f"):
        return False, float(np.abs(val.astype(np.float64) - ref.astype(np.float64)).max())
    err = float(np.abs(val.astype(np.float64) - ref).max()) if val.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return bool(err <= FP32_RTOL * max(1.0, scale)), err
