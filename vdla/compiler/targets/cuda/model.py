"""Whole float32 models on the GPU: the graph executor for target ``cuda`` and ``vdla run MODEL --target cuda``.

:func:`compile_model` simplifies and fuses a float graph (the passes every target shares),
declares each node with topi (:func:`..llvm.strategy.declare`, the one mapping of nodes onto
operators), schedules it with this target's schedules (a depthwise conv2d -- groups equal to
channels -- with the depthwise schedule) and builds PTX; flatten and reshape are
views of the GPU memory; a node with no topi operator (integer ops, concat, a grouped conv
with fewer groups than channels) or whose build
fails runs on the graph's numpy kernels, with the reason recorded. Functions are shared between nodes of equal signature.
:meth:`GpuModel.run` keeps values on the GPU between kernels (a numpy node copies to the
host and back) and times each layer with CUDA events. :func:`run_cuda_job` builds a
built-in model or an ONNX file, runs it on a synthetic input and checks the outputs against
the numpy fp32 reference; without a GPU it compiles everything, then raises
:class:`~vdla.runtime.cuda_driver.NoCudaDevice`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...graph.fuse import fuse
from ...graph.ir import Graph
from ...graph.ops.registry import get_op
from ...graph.passes import simplify
from ..llvm.strategy import _arg_order, declare, schedule_key, signature
from .target import CudaTarget

#: the anchor op of a node -> its GPU schedule (element-wise chains: schedule_injective)
SCHEDULES = {
    "conv2d": "schedule_conv2d_nchw",
    "depthwise_conv2d": "schedule_depthwise_conv2d_nchw",
    "dense": "schedule_dense",
    "max_pool2d": "schedule_pool",
    "avg_pool2d": "schedule_pool",
    "global_avg_pool2d": "schedule_pool",
    "softmax": "schedule_softmax",
}


@dataclass
class GpuLayer:
    """How one node runs: ``target`` "cuda" (``func``, called with ``args`` then the output), "view"
    (flatten/reshape: the input's GPU memory with the new shape) or "numpy"."""

    node: str
    op: str
    target: str
    reason: str = ""
    func: Any = field(default=None, repr=False)
    args: list[str] = field(default_factory=list)
    out_shape: tuple[int, ...] = ()
    out_dtype: str = "float32"
    seconds: float = 0.0


def _op_name(node: Any) -> str:
    body = node.attrs.get("body") if node.op == "fused" else None
    return "+".join(n.op for n in body.topo_order()) if isinstance(body, Graph) else node.op


def lower_node(node: Any, graph: Graph, target: CudaTarget, name: str) -> Any:
    """Build ``node`` for the GPU: (CUDAModule, argument names) or why it cannot be."""
    from ...driver import build
    from . import schedules

    decl = declare(node, graph)
    if isinstance(decl, str):
        return decl
    placeholders, args, out = decl
    try:
        sched = getattr(schedules, SCHEDULES.get(schedule_key(node, graph), "schedule_injective"))(out)
        return build(sched, placeholders + [out], target=target, name=name), args
    except Exception as e:  # a schedule or codegen limit: numpy it is, with the reason shown
        return f"cuda build failed: {type(e).__name__}: {e}"


class GpuModel:
    """A float graph compiled for the GPU: ``run(inputs)`` returns the outputs (numpy)."""

    def __init__(self, graph: Graph, layers: list[GpuLayer], target: CudaTarget, compile_s: float) -> None:
        self.graph = graph
        self.layers = layers
        self.target = target
        self.compile_s = compile_s
        self._consts: dict[str, Any] | None = None
        self._consts_dev: Any = None
        # each kernel's output, allocated on the first run and reused by the next ones: a
        # cuMemAlloc/cuMemFree per layer and run would wait for the GPU (cuMemFree synchronises)
        self._outs: dict[str, Any] = {}

    @property
    def kernels(self) -> int:
        return len({id(ly.func) for ly in self.layers if ly.func is not None})

    def run(self, inputs: dict[str, Any], time_layers: bool = False, sync: bool = True) -> list[np.ndarray]:
        """Run on GPU 0 (NoCudaDevice without one); inputs are numpy arrays, device arrays or vdla.nd arrays. With
        ``time_layers`` each layer's seconds (CUDA events, inputs already on the GPU) are
        stored in ``layer.seconds``; ``sync=False`` does not wait after each kernel (faster;
        a fault is then reported at the next copy, without the kernel's name)."""
        from ....runtime.cuda_driver import DeviceArray, get_device, to_device
        from ....runtime.ndarray import CudaNDArray, host_view

        dev = get_device(0)
        if self._consts is None or self._consts_dev is not dev:
            # weights go to the GPU once, not per run
            self._consts = {k: to_device(np.ascontiguousarray(v)) for k, v in self.graph.consts.items()}
            self._consts_dev = dev
            self._outs = {}
        env: dict[str, Any] = dict(self._consts)
        # vdla.nd arrays: a GPU one's memory as it is, any other as its host values
        for k, v in inputs.items():
            env[k] = v.device_array if isinstance(v, CudaNDArray) else v if isinstance(v, DeviceArray) else host_view(v)[0]
        for ly in self.layers:
            node = self.graph.node(ly.node)
            if ly.target == "cuda":
                xs = [env[a] if isinstance(env[a], DeviceArray) else to_device(np.ascontiguousarray(env[a]))
                      for a in ly.args]  # fmt: skip
                y = self._outs.get(ly.node)
                if y is None:
                    y = self._outs[ly.node] = DeviceArray(dev, ly.out_shape, ly.out_dtype)
                ly.func._run((*xs, y), sync)
                if time_layers:
                    ly.seconds = ly.func.time_evaluator(number=5)(*xs, y).mean
            elif ly.target == "view" and isinstance(env[node.inputs[0]], DeviceArray):
                assert node.type is not None
                y = env[node.inputs[0]].reshape(tuple(node.type.shape))  # a view: no copy, no launch
            else:
                xs = [env[a].numpy() if isinstance(env[a], DeviceArray) else env[a] for a in node.inputs]
                t0 = time.perf_counter()
                y = get_op(node.op, node.name).compute(node.attrs, xs)
                ly.seconds = time.perf_counter() - t0
            env[ly.node] = y
        return [env[o].numpy() if isinstance(env[o], DeviceArray) else np.asarray(env[o]) for o in self.graph.outputs]

    def run_on_cpu(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The same kernels' loop IR built for the CPU with GPU threads as loops (slow: every
        thread refetches its block's shared tiles): checks the schedules and the node-to-kernel
        wiring without a GPU."""
        from ...driver import build
        from .lower import threads_as_loops

        cpu: dict[int, Any] = {}
        env: dict[str, Any] = dict(self.graph.consts)
        env.update(inputs)
        for ly in self.layers:
            node = self.graph.node(ly.node)
            if ly.target == "cuda":
                f = cpu.get(id(ly.func))
                if f is None:
                    f = cpu[id(ly.func)] = build(threads_as_loops(ly.func.lowered), target="llvm")
                y = np.empty(ly.out_shape, ly.out_dtype)
                f(*[np.ascontiguousarray(env[a]) for a in ly.args], y)
            else:
                y = get_op(node.op, node.name).compute(node.attrs, [env[a] for a in node.inputs])
            env[ly.node] = y
        return [np.asarray(env[o]) for o in self.graph.outputs]

    def table(self) -> str:
        lines = [f"{'#':>3}  {'node':<28} {'ops':<30} {'target':<6} {'time':>10}  note"]
        for k, ly in enumerate(self.layers):
            t = f"{ly.seconds * 1e3:8.3f} ms" if ly.seconds else f"{'-':>11}"
            lines.append(f"{k:>3}  {ly.node[:28]:<28} {ly.op[:30]:<30} {ly.target:<6} {t}  {ly.reason}")
        nc = sum(ly.target == "cuda" for ly in self.layers)
        lines.append(f"{nc} of {len(self.layers)} nodes on {self.target} ({self.kernels} distinct functions), "
                     f"compiled in {self.compile_s:.1f} s")  # fmt: skip
        return "\n".join(lines)


def compile_model(graph: Graph, target: str | CudaTarget = "cuda") -> GpuModel:
    """Simplify, fuse and build every node of a float32 ``graph`` for the GPU (see the module doc)."""
    tgt = CudaTarget.parse(target)
    t0 = time.perf_counter()
    g = fuse(simplify(graph))
    built: dict[str, Any] = {}
    layers = []
    for n in g.topo_order():
        key = signature(n, g)
        res = built.get(key)
        if res is None:
            res = built[key] = lower_node(n, g, tgt, n.name.replace(".", "_"))
        op = _op_name(n)
        t = n.type
        assert t is not None
        if isinstance(res, str) and n.op in ("flatten", "reshape"):
            layers.append(GpuLayer(n.name, op, "view", "the same GPU memory reshaped (no kernel, no copy)"))
        elif isinstance(res, str):
            layers.append(GpuLayer(n.name, op, "numpy", res))
        else:
            # a function shared by nodes of equal signature takes each node's own values
            layers.append(GpuLayer(n.name, op, "cuda", "", res[0], _arg_order(n, g), tuple(t.shape), t.dtype))
    return GpuModel(g, layers, tgt, time.perf_counter() - t0)


@dataclass
class GpuJobResult:
    name: str
    model: GpuModel
    max_err: float
    run_s: float

    @property
    def ok(self) -> bool:
        return self.max_err <= 1e-3

    def table(self) -> str:
        verdict = "ok" if self.ok else "MISMATCH"
        return (f"{self.name} on {self.model.target}\n{self.model.table()}\n"
                f"outputs vs numpy fp32 reference: max |err| {self.max_err:.1e} ({verdict}); run {self.run_s:.3f} s")


def run_cuda_job(model: str, target: str = "cuda", *, reduced: bool = False, size: int | None = None,
                 seed: int = 0, progress: Any = None) -> GpuJobResult:  # fmt: skip
    """Build ``model`` (built-in name or .onnx) for the GPU, run it on a synthetic input and check it."""
    from ...graph import models
    from ...graph.job import load_model
    from ...graph.reference import run as reference_run

    spec = load_model(model, reduced=reduced, size=size)
    if spec.qdq:
        raise ValueError(f"{model}: a quantised (QDQ) model; the cuda target runs float32 models")
    m = compile_model(spec.graph, target)
    if progress:
        progress(f"compiled {spec.name} for {m.target}: {sum(ly.target == 'cuda' for ly in m.layers)} of "
                 f"{len(m.layers)} nodes on the GPU, {m.kernels} functions, {m.compile_s:.1f} s")  # fmt: skip
    x = models.sample_input(spec.graph, seed)
    t0 = time.perf_counter()
    outs = m.run(x, time_layers=True)
    run_s = time.perf_counter() - t0
    ref = reference_run(spec.graph, x, check=False)
    err = max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-6)) for a, b in zip(outs, ref, strict=True))
    return GpuJobResult(spec.name, m, err, run_s)


def run_cli(args: Any) -> int:
    """``vdla run MODEL --target cuda``: the table, or a one-line error (exit 2)."""
    import sys

    from ....runtime.cuda_driver import CudaError
    from ...graph.ir import GraphError
    from ..llvm.target import TargetError
    from .target import is_cuda

    if not is_cuda(args.target):
        print(f"vdla run: error: --target {args.target!r}: models run on 'cuda' (-arch=sm_80|sm_90) here; "
              "without --target they run on the VDLA --device", file=sys.stderr)  # fmt: skip
        return 2

    def progress(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr)

    try:
        res = run_cuda_job(args.file, args.target, reduced=args.reduced, size=args.size, seed=args.seed,
                           progress=progress)  # fmt: skip
    except (CudaError, GraphError, TargetError, ValueError, FileNotFoundError) as e:
        print(f"vdla run: error: {e}", file=sys.stderr)
        return 2
    print(res.table())
    return 0 if res.ok else 1
