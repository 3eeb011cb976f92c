"""Running a compiled model: :class:`CompiledModel` runs its plan step by step, whatever
the targets, with per-node records.

::

    m = compile_model(g, config)                        # .compile: VDLA kernels + the CPU side
    res = m.run({"data": x}, Device("fsim", config=config))
    res.outputs, res.layers                             # outputs and per-node records
    m.save("resnet18.vdla"); m2 = CompiledModel.load("resnet18.vdla")
    g = compile_model(float_graph, target="cuda")       # every node on the GPU where it maps
    g.run({"data": x}).outputs

Steps (:mod:`.plan`): ``vdla`` kernels run on the model's Device, ``llvm`` and ``host``
steps on the host, ``cuda`` steps on GPU 0, ``view`` steps reshape their input where it
is (a contiguous slice: from an offset into it). A value stays on the device that made it: the runner copies a value only where a step
on one device reads it from another (counted in :attr:`RunResult.copies`), and outputs come
back to the host at the end. On a GPU the constants are uploaded once and each step's output
buffer is allocated on the first run and reused by the next ones (``cuMemFree`` would wait
for the GPU).

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

from ....config import Config
from ....runtime.cuda_driver import DeviceArray
from ..ir import Graph, GraphError, Node
from ..ops.packed import concat_input
from ..ops.registry import get_op
from ..reference import check_inputs
from . import model_file, native
from .memory import StoragePlan, plan_storage, value_nbytes
from .native import NativePlan, view_of
from .plan import Step, host_warning, placements

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
    #: of ``bytes_moved``, the bytes a VDLA kernel wrote to DRAM (its stores; the rest it read): AXI
    #: reads and writes run on separate channels, so each bounds the layer on its own
    bytes_written: int = 0
    #: cycles the VDLA compute module spent executing (GEMMs, accumulator resets, ALU ops, its uop and
    #: accumulator loads): one instruction at a time, so with ``cycles`` it says whether the layer is
    #: bound by that module's instruction stream rather than by DRAM or by waiting on tokens
    compute_busy: int = 0
    #: ALU uop-iterations the kernel executed (VTA's ``alu_counter``; ``gemm_util`` counts GEMM ones)
    alu_iters: int = 0
    #: of the bytes read, those the compute module's own loads read (micro-ops, accumulators such as
    #: a bias): the golden cycle model gives each module its own DRAM port, the hardware one AXI master
    compute_read: int = 0

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
    #: values copied between the host and a GPU during the run (inputs, host steps' operands, outputs)
    copies: int = 0


class CompiledModel:
    """A graph with a step per node; run it, save it to one file (VDLA and host steps)."""

    def __init__(self, graph: Graph, config: Config | None, kernels: dict[str, Step], functions: list[Any],
                 info: dict[str, Any] | None = None, target: str = "vdla") -> None:
        self.graph = graph
        self.config = config
        self.kernels = kernels
        self.functions = functions
        self.info = dict(info or {})
        self.target = target
        # GPU state kept between runs: the constants (uploaded once) and each step's output buffer
        self._gpu: Any = None
        self._gpu_consts: dict[str, DeviceArray] = {}
        self._gpu_outs: dict[str, DeviceArray] = {}
        self._gpu_buffers: dict[int, DeviceArray] = {}
        # a whole-GPU plan: its inputs' own buffers and the CUDA graph captured on its first run
        self._gpu_inputs: dict[str, DeviceArray] = {}
        self._cuda_graph: Any = None
        self._graph_env: dict[str, Any] = {}
        self._order: list[tuple[Node, Step, str, list[str]]] | None = None
        self._placement: dict[str, tuple[str, int, int]] | None = None
        # the kernel outputs' buffers (memory.plan_storage), planned once; the host ones allocated once
        self._storage: StoragePlan | None = None
        self._host_buffers: list[np.ndarray] = []
        # the plan as one native call (llvm and view steps only), or why not: built on the first run
        self._native: NativePlan | str | None = None

    def __repr__(self) -> str:
        counts = {t: sum(1 for k in self.kernels.values() if k.target == t) for t in ("vdla", "llvm", "cuda")}
        if self.target != "vdla":
            return (f"<CompiledModel {self.graph.name!r} for {self.target}: {len(self.kernels)} nodes, "
                    f"{counts['cuda'] + counts['llvm']} built>")
        assert self.config is not None
        return (f"<CompiledModel {self.graph.name!r}: {len(self.kernels)} nodes, {counts['vdla']} on VDLA "
                f"({len(self.functions)} kernels), {counts['llvm']} on llvm, config {self.config.name!r}>")

    def summary(self) -> list[tuple[str, str, str, str]]:
        """(node, op/pattern, target, reason) per node."""
        out = []
        for n in self.graph.topo_order():
            k = self.kernels[n.name]
            out.append((n.name, op_name(n), k.target, k.record_reason))
        return out

    def host_steps(self) -> list[str]:
        """The nodes that run on the host's numpy kernels (between device kernels)."""
        return [n for n, k in self.kernels.items() if k.target == "host"]

    def host_copies(self) -> int:
        """Values a run copies between the GPU and the host because of host steps: each GPU value a
        host step reads (once), and each host step's output a GPU step reads."""
        made = {n: k.target for n, k in self.kernels.items()}
        down = {v for n in self.graph.topo_order() if made[n.name] == "host" for v in n.inputs
                if made.get(v) == "cuda"}
        up = {v for n in self.graph.topo_order() if made[n.name] == "cuda" for v in n.inputs
              if made.get(v) == "host"}
        return len(down) + len(up)

    def host_warning(self) -> str | None:
        """The one warning line of a plan with host steps (see :func:`.plan.host_warning`)."""
        return host_warning(self.summary(), self.host_copies())

    @property
    def distinct_functions(self) -> int:
        """Distinct built functions (VDLA kernels, llvm and cuda functions shared by signature)."""
        return len(self.functions) + len({id(k.kernel.func) for k in self.kernels.values() if k.kernel is not None})

    # -- running ----------------------------------------------------------------------
    def run(self, inputs: Any, device: Any = None, *, reference: bool = False, cpu_timing: bool = False,
            progress: Callable[[str], None] | None = None, time_layers: bool = False,
            sync: bool = True, cuda_graph: bool = True, native: bool = True) -> RunResult:
        """Run the plan. ``device``: the Device of the VDLA steps (with this model's config;
        None: a new fsim); cuda steps run on GPU 0 (NoCudaDevice without one).

        ``inputs`` are numpy arrays, GPU arrays or ``vdla.nd`` arrays (a dict, a list in
        input order, or one array). ``reference``: also evaluate every node with the numpy
        reference and record per node whether the outputs agree (bit-exactly for integer
        nodes, within :data:`FP32_RTOL` for float ones); ``cpu_timing``: time that CPU
        evaluation of the offloaded VDLA nodes (for the speedup); ``time_layers``: time
        each step (cuda ones with CUDA events, inputs already on the GPU); ``sync=False`` does
        not wait after each GPU kernel (faster; a fault is then reported at the next copy,
        without the kernel's name).

        A plan whose steps are all ``cuda`` kernels and views runs as a CUDA graph
        (``cuda_graph=True``, unless ``reference``, ``cpu_timing`` or ``time_layers`` asks for
        per-step work): the inputs are copied into buffers of their own, the first run launches
        kernel by kernel and captures the launches (:class:`~vdla.runtime.cuda_driver.CudaGraph`),
        and every later run is one graph launch; its ``layers`` then hold one record for the graph.
        Likewise a plan of llvm kernels and views runs as one native call (``native=True``, see
        :mod:`.native`), with one record for the whole plan; with ``time_layers`` the call reads
        the clock between the steps and gives a record per step (``native=False``: step by step
        from Python).
        """
        if cuda_graph and not (reference or cpu_timing or time_layers) and self._graphable():
            return self._run_graph(inputs, sync)
        if native and not (reference or cpu_timing) and isinstance(self.native_plan(), NativePlan):
            return self._run_native(inputs, time_layers)
        g = self.graph
        env: dict[str, Any] = dict(g.consts)
        env.update(self._inputs(inputs))
        needs_gpu = any(k.target == "cuda" for k in self.kernels.values())
        if needs_gpu:
            self._gpu_setup()
            env.update(self._gpu_consts)
        dev = device
        if dev is None and any(k.target == "vdla" for k in self.kernels.values()):
            from ....runtime import Device

            dev = Device("fsim", config=self.config)
        ref_env: dict[str, Any] = {k: _host(v) for k, v in env.items()} if reference or cpu_timing else {}
        layers: list[LayerRecord] = []
        traces: dict[str, list[tuple[int, str, int, int]]] = {}
        copies = [0]
        on_host: dict[str, np.ndarray] = {}  # GPU values copied to the host this run
        clock = self.config.clock_mhz * 1e6 if self.config is not None else 1.0
        order = self._steps()
        placed = self._placed()
        buffers: dict[str, np.ndarray] = {}  # a place step's buffer, made by its first producer
        for idx, (n, k, op, outer) in enumerate(order):
            t0 = time.perf_counter()
            if k.target == "vdla":
                if progress:
                    progress(f"[{idx + 1}/{len(order)}] {n.name} on {dev.name}")
                dest = None
                if n.name in placed:  # the kernel stores into its block range of the concat's buffer
                    cat, b0, nb = placed[n.name]
                    buf = buffers.get(cat)
                    if buf is None:
                        t = self.graph.type_of(cat)
                        buf = buffers[cat] = np.zeros(t.shape, t.dtype)
                    dest = buf[:, b0:b0 + nb]
                val, rep = self._run_vdla(n, k, self._host_values(env, copies, n.inputs, on_host), dev, dest)
                wall = time.perf_counter() - t0
                moved = int(sum(v for c, v in rep.counters.items() if c.endswith("nbytes")))
                rec = LayerRecord(n.name, op, "vdla", rep.cycles / clock, rep.cycles,
                                  rep.gemm_utilisation, moved, k.macs, wall_s=wall,
                                  bytes_written=int(rep.counters.get("out_store_nbytes", 0)),
                                  compute_busy=int(rep.modules["compute"].busy) if "compute" in rep.modules else 0,
                                  alu_iters=int(rep.counters.get("alu_counter", 0)),
                                  compute_read=int(rep.counters.get("acc_load_nbytes", 0)
                                                   + rep.counters.get("uop_load_nbytes", 0)))
                if getattr(rep, "trace", None):
                    traces[n.name] = rep.trace
            else:
                if k.target == "cuda":
                    val, seconds = self._run_cuda(n, k, env, copies, time_layers, sync)
                elif k.target == "view":
                    val, seconds = _view(env[n.inputs[0]], n, k), 0.0  # no kernel, no copy
                elif k.target == "place":
                    val, seconds = self._run_place(n, env, buffers, copies, on_host)
                else:
                    host = self._host_values(env, copies, n.inputs, on_host)
                    val = (self._run_llvm(n, k, host, self._host_buffer(n.name)) if k.target == "llvm"
                           else self._run_host(n, [host[i] for i in n.inputs]))
                    seconds = None
                wall = time.perf_counter() - t0
                moved = sum(env[i].nbytes for i in outer) + val.nbytes
                rec = LayerRecord(n.name, op, k.target, wall if seconds is None else seconds,
                                  bytes_moved=int(moved), macs=k.macs, reason=k.record_reason, wall_s=wall)
            env[n.name] = val
            if reference or (cpu_timing and k.target == "vdla"):
                self._check(n, k, val, ref_env, rec, env)
            layers.append(rec)
        outs = [self._to_host(env[o], copies) for o in g.outputs]
        ref_out = [ref_env[o] for o in g.outputs] if reference else None
        gone = self.storage().overwritten  # values whose buffer a later step reused
        return RunResult(outs, layers, {k: v for k, v in env.items() if k not in gone}, ref_out, traces, copies[0])

    def native_plan(self) -> NativePlan | str:
        """This plan as one native call (:mod:`.native`), built on first use; or why it cannot be
        (a step on another target, a kernel with scalar arguments ...)."""
        if self._native is None:
            targets = {k.target for k in self.kernels.values()}
            if "llvm" not in targets or not targets <= {"llvm", "view"}:
                self._native = f"steps on {', '.join(sorted(targets - {'view'}))}, not only llvm"
            else:
                self._native = native.build(self.graph, [(n, k) for n, k, _, _ in self._steps()], self._host_buffer,
                                            self.storage().overwritten)
        return self._native

    def _run_native(self, inputs: Any, timed: bool = False) -> RunResult:
        """A host plan as one native call (:meth:`native_plan`): one record for the whole plan, or
        with ``timed`` one per step (the clock read between the steps)."""
        plan = self.native_plan()
        assert isinstance(plan, NativePlan)
        t0 = time.perf_counter()
        given = self._inputs(inputs)
        if not all(isinstance(v, np.ndarray) for v in given.values()):  # GPU arrays: the step runner copies
            return self.run(inputs, native=False, time_layers=timed)
        try:
            outs, env, times = plan.run(given, timed)
        except Exception as e:
            # which kernel failed: the same run step by step, whose error names the node
            self.run(inputs, native=False)
            raise ExecutorError(f"{self.graph.name!r} failed in its native plan: {type(e).__name__}: {e}") from e
        wall = time.perf_counter() - t0
        if times is None:
            calls = sum(k.target == "llvm" for k in self.kernels.values())
            rec = LayerRecord("(llvm plan)", f"{calls} kernels", "llvm", wall,
                              macs=sum(k.macs for k in self.kernels.values()), wall_s=wall)
            return RunResult(outs, [rec], env)
        g = self.graph
        layers = []
        for (n, k, op, outer), secs in zip(self._steps(), times, strict=True):
            moved = 0 if k.target == "view" else sum(value_nbytes(g, i) for i in outer) + value_nbytes(g, n.name)
            layers.append(LayerRecord(n.name, op, k.target, secs, bytes_moved=int(moved), macs=k.macs,
                                      reason=k.record_reason, wall_s=secs))
        return RunResult(outs, layers, env)

    def _graphable(self) -> bool:
        return bool(self.kernels) and all(k.target in ("cuda", "view") for k in self.kernels.values()) and any(
            k.target == "cuda" for k in self.kernels.values())

    def _run_graph(self, inputs: Any, sync: bool) -> RunResult:
        """A whole-GPU plan: the inputs into their own buffers, then one CUDA graph launch (captured
        on the first run, which launches kernel by kernel)."""
        from ....runtime.cuda_driver import CudaGraph

        t0 = time.perf_counter()
        given = self._inputs(inputs)
        self._gpu_setup()
        copies = [0]
        for k, t in self.graph.inputs.items():
            buf = self._gpu_inputs.get(k)
            if buf is None:
                buf = self._gpu_inputs[k] = DeviceArray(self._gpu, tuple(t.shape), t.dtype)
            v = given[k]
            copies[0] += not isinstance(v, DeviceArray)
            buf.copyfrom(v if isinstance(v, DeviceArray) else np.ascontiguousarray(v))
        if self._cuda_graph is None:  # the capture run: kernel by kernel, from the input buffers
            res = self.run(dict(self._gpu_inputs), sync=sync, cuda_graph=False)
            # every value at its fixed address: constants, input buffers, each step's output buffer
            env: dict[str, Any] = {**self._gpu_consts, **self._gpu_inputs}
            launches, temps = [], []
            for n, k, _, _ in self._steps():
                if k.target == "cuda":
                    env[n.name] = self._gpu_outs[n.name]
                    ls, ts = k.kernel.func.launches((*[env[a] for a in k.kernel.args], env[n.name]))
                    launches += ls
                    temps += ts
                else:
                    env[n.name] = _view(env[n.inputs[0]], n, k)
            self._cuda_graph = CudaGraph(self._gpu, launches, keep=temps)
            self._graph_env = env
            res.copies += copies[0]
            return res
        self._cuda_graph.launch(sync)
        env = self._graph_env
        outs = [self._to_host(env[o], copies) for o in self.graph.outputs]
        wall = time.perf_counter() - t0
        rec = LayerRecord("(cuda graph)", f"{len(self._cuda_graph)} kernels", "cuda", wall, wall_s=wall)
        gone = self.storage().overwritten
        return RunResult(outs, [rec], {k: v for k, v in env.items() if k not in gone}, None, {}, copies[0])

    def storage(self) -> StoragePlan:
        """The buffers of the llvm and cuda steps' outputs (:func:`.memory.plan_storage`), planned once.
        On the host the graph's outputs are new arrays each run (they are returned), so they are
        kept out of the plan's reuse like every value the caller gets back."""
        if self._storage is None:
            self._storage = plan_storage(self.graph, self.kernels, ("llvm", "cuda"))
        return self._storage

    def _host_buffer(self, name: str) -> np.ndarray | None:
        """The planned host memory of llvm step ``name``'s output (None: a new array; the outputs)."""
        plan = self.storage()
        s = plan.of.get(name)
        if s is None or name in self.graph.outputs:
            return None
        if not self._host_buffers:
            self._host_buffers = [np.empty(size, np.uint8) for size in plan.sizes]
        t = self.graph.type_of(name)
        return self._host_buffers[s][:value_nbytes(self.graph, name)].view(t.dtype).reshape(t.shape)

    def _placed(self) -> dict[str, tuple[str, int, int]]:
        """VDLA step -> (its place step, first block, blocks): where its kernel stores (worked out once)."""
        if self._placement is None:
            self._placement = {p: (cat, b0, nb) for cat, ins in placements(self.graph, self.kernels).items()
                               for p, (b0, nb) in ins.items()}
        return self._placement

    def _run_place(self, n: Node, env: dict[str, Any], buffers: dict[str, np.ndarray], copies: list[int],
                   on_host: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """A place step: the buffer its VDLA producers stored into, the other inputs copied into
        their block ranges (host seconds: 0 when there was nothing to copy)."""
        t0 = time.perf_counter()
        t = n.type
        assert t is not None
        buf = buffers.pop(n.name, None)
        if buf is None:
            buf = np.zeros(t.shape, t.dtype)
        placed = self._placed()
        off, copied, blk = 0, False, t.shape[-1]
        for j, (i, c) in enumerate(zip(n.inputs, n.attrs["channels"])):
            nb = -(-c // blk)
            if placed.get(i, ("",))[0] != n.name:  # a gathered split / shuffle, a host step's result: copied
                buf[:, off:off + nb] = concat_input(n.attrs, j, self._host_values(env, copies, [i], on_host)[i])
                copied = True
            off += nb
        return buf, (time.perf_counter() - t0 if copied else 0.0)

    def _steps(self) -> list[tuple[Node, Step, str, list[str]]]:
        """(node, step, op name, inputs that are not constants) in run order, worked out once."""
        if self._order is None:
            g = self.graph
            self._order = [(n, self.kernels[n.name], op_name(n), [i for i in n.inputs if i not in g.consts])
                           for n in g.topo_order()]
        return self._order

    def _check(self, n: Node, k: Step, val: Any, ref_env: dict[str, Any], rec: LayerRecord, env: dict[str, Any]) -> None:
        """The node on the numpy reference (from the reference's own inputs), compared with ``val``."""
        val = _host(val)
        if k.target == "vdla":
            t1 = time.perf_counter()
            rv = self._run_host(n, [ref_env[i] for i in n.inputs])
            rec.cpu_seconds = time.perf_counter() - t1
        elif k.target in ("llvm", "cuda"):
            rv = self._run_host(n, [ref_env[i] for i in n.inputs])
        else:  # a host step or view fed the reference's own values is the reference
            same = all(np.array_equal(_host(env[i]), ref_env[i]) for i in n.inputs if i not in self.graph.consts)
            rv = val if same else self._run_host(n, [ref_env[i] for i in n.inputs])
        built = k.target in ("llvm", "cuda")
        rec.exact, rec.max_err = _agree(val, rv, float_tol=built)
        # a built float result within tolerance: the reference continues from it, so that
        # the integer nodes downstream (quantise, VDLA) are still compared bit-exactly
        # (a copy: the value's planned buffer is reused by later steps)
        ref_env[n.name] = np.array(val) if rec.exact and built else rv

    def _inputs(self, inputs: Any) -> dict[str, Any]:
        """The inputs by name: numpy ones checked against the graph; GPU ones taken as they are."""
        from ....runtime.ndarray import CudaNDArray, host_view

        if not isinstance(inputs, dict):
            return check_inputs(self.graph, inputs)
        dev = {k: v.device_array if isinstance(v, CudaNDArray) else v for k, v in inputs.items()
               if isinstance(v, DeviceArray | CudaNDArray)}
        for k, v in dev.items():
            t = self.graph.inputs.get(k)
            if t is not None and t.boundary is not None and str(v.dtype) == t.boundary:
                # the boundary cast and its range check are host code: no GPU array is copied back for them
                raise GraphError(f"input {k!r} of graph {self.graph.name!r} is a GPU array of {v.dtype}: the model "
                                 f"declares {t.boundary} and computes in {t.dtype}; pass a numpy array (cast at the "
                                 f"boundary) or a {t.dtype} GPU array")
        host = {k: host_view(v)[0] for k, v in inputs.items() if k not in dev}
        # GPU inputs are checked (name, shape, dtype) through zero-strided stand-ins of their shape and dtype
        stand_in = {k: np.lib.stride_tricks.as_strided(np.zeros(1, v.dtype), v.shape, [0] * len(v.shape))
                    for k, v in dev.items()}
        checked = check_inputs(self.graph, {**host, **stand_in})
        checked.update(dev)
        return checked

    def _gpu_setup(self) -> None:
        from ....runtime.cuda_driver import get_device, to_device

        dev = get_device(0)
        if self._gpu is not dev:
            # weights go to the GPU once, not per run
            self._gpu_consts = {k: to_device(np.ascontiguousarray(v)) for k, v in self.graph.consts.items()}
            self._gpu_outs = {}
            self._gpu_buffers = {}
            self._gpu_inputs, self._cuda_graph, self._graph_env = {}, None, {}
            self._gpu = dev

    def _host_values(self, env: dict[str, Any], copies: list[int], names: list[str],
                     cache: dict[str, np.ndarray]) -> dict[str, Any]:
        """The values ``names`` (a host or VDLA step's inputs) on the host: one made on the GPU
        is copied once per run (``cache``) and stays on the GPU for the GPU steps after."""
        out: dict[str, Any] = {}
        for k in names:
            v = env[k]
            if isinstance(v, DeviceArray):
                if k in self.graph.consts:
                    v = self.graph.consts[k]
                elif k in cache:
                    v = cache[k]
                else:
                    v = cache[k] = self._to_host(v, copies)
            out[k] = v
        return out

    @staticmethod
    def _to_host(v: Any, copies: list[int]) -> np.ndarray:
        if isinstance(v, DeviceArray):
            copies[0] += 1
            return v.numpy()
        return np.asarray(v)

    def _run_cuda(self, n: Node, k: Step, env: dict[str, Any], copies: list[int], time_layers: bool,
                  sync: bool) -> tuple[Any, float | None]:
        from ....runtime.cuda_driver import to_device

        kern = k.kernel
        xs = []
        for a in kern.args:
            v = env[a]
            if not isinstance(v, DeviceArray):  # a host value read by a GPU step: one copy
                copies[0] += 1
                v = to_device(np.ascontiguousarray(v))
            xs.append(v)
        y = self._gpu_outs.get(n.name)
        if y is None:  # the step's view of its planned buffer, made on the first run
            s = self.storage().of.get(n.name)
            if s is not None and s not in self._gpu_buffers:
                self._gpu_buffers[s] = DeviceArray(self._gpu, (self.storage().sizes[s],), np.uint8)
            base = self._gpu_buffers.get(s) if s is not None else None
            y = self._gpu_outs[n.name] = DeviceArray(self._gpu, kern.out_shape, kern.out_dtype, base=base)
        try:
            kern.func._run((*xs, y), sync)
            seconds = kern.func.time_evaluator(number=5)(*xs, y).mean if time_layers else None
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on cuda: {type(e).__name__}: {e}") from e
        return y, seconds

    def _run_llvm(self, n: Node, k: Step, env: Mapping[str, np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        try:
            return k.kernel(env, out)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on llvm: {type(e).__name__}: {e}") from e

    def _run_host(self, n: Node, args: list[np.ndarray]) -> np.ndarray:
        try:
            return get_op(n.op, n.name).compute(n.attrs, args)
        except GraphError:
            raise
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} ({n.op}) failed on the CPU: {type(e).__name__}: {e}") from e

    def _run_vdla(self, n: Node, k: Step, env: Mapping[str, np.ndarray], dev: Any,
                  dest: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Run VDLA step ``k``; ``dest``: the (contiguous) memory its output is stored into, a
        block range of a concat's buffer (a ``place`` step), else a new array."""
        ch = k.chain
        assert ch is not None and k.func is not None
        f = self.functions[k.func]
        weight = env[ch.weight] if k.weight_packed is None else k.weight_packed
        arrays = [np.ascontiguousarray(env[ch.data]), np.ascontiguousarray(weight)]
        if k.bias_packed is not None:
            arrays.append(k.bias_packed)
        if k.shifts_packed is not None:
            arrays.append(k.shifts_packed)
        if ch.residual is not None:
            arrays.append(np.ascontiguousarray(env[ch.residual]))
        out_t = n.type
        assert out_t is not None
        out = dest if dest is not None and dest.flags.c_contiguous and dest.shape == tuple(out_t.shape) \
            else np.zeros(out_t.shape, np.int8)
        arrays.append(out)
        # the grouped / transpose kernels see the packed residual and output in their own
        # (byte-identical) shapes: pass views, so the output lands in ``out``
        arrays = [a if a.shape == spec.shape else a.reshape(spec.shape) for a, spec in zip(arrays, f.args)]
        try:
            rep = f(dev, *arrays)
        except Exception as e:
            raise ExecutorError(f"node {n.name!r} failed on {dev.name}: {type(e).__name__}: {e}") from e
        if dest is not None and out is not dest:  # not stored in place (a strided range): copied there
            dest[...] = out
            out = dest
        return out, rep

    def run_on_cpu(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The cuda steps' loop IR built for the CPU with GPU threads as loops (slow: every
        thread refetches its block's shared tiles), every other step as :meth:`run` does on
        the host: checks the GPU schedules and the node-to-kernel wiring without a GPU."""
        from ....runtime import Device
        from ...driver import build
        from ...targets.cuda.lower import threads_as_loops

        cpu: dict[int, Any] = {}
        env: dict[str, Any] = dict(self.graph.consts)
        env.update(check_inputs(self.graph, inputs))
        dev = Device("fsim", config=self.config) if self.functions else None
        for n in self.graph.topo_order():
            k = self.kernels[n.name]
            if k.target == "cuda":
                f = cpu.get(id(k.kernel.func))
                if f is None:
                    f = cpu[id(k.kernel.func)] = build(threads_as_loops(k.kernel.func.lowered), target="llvm")
                y = np.empty(k.kernel.out_shape, k.kernel.out_dtype)
                f(*[np.ascontiguousarray(env[a]) for a in k.kernel.args], y)
            elif k.target == "vdla":
                y = self._run_vdla(n, k, env, dev)[0]
            elif k.target == "view":
                y = _view(env[n.inputs[0]], n, k)
            elif k.target == "llvm":
                y = self._run_llvm(n, k, env)
            else:
                y = self._run_host(n, [env[a] for a in n.inputs])
            env[n.name] = y
        return [np.asarray(env[o]) for o in self.graph.outputs]

    def table(self, layers: list[LayerRecord] | None = None) -> str:
        """The plan (and, given a run's ``layers``, each step's time) as a table."""
        times = {r.node: r.seconds for r in layers or []}
        lines = [f"{'#':>3}  {'node':<28} {'ops':<30} {'target':<6} {'time':>10}  note"]
        for i, n in enumerate(self.graph.topo_order()):
            k = self.kernels[n.name]
            s = times.get(n.name)
            t = f"{s * 1e3:8.3f} ms" if s else f"{'-':>11}"
            note = k.record_reason or ("the input's memory reshaped (no kernel, no copy)" if k.target == "view" else "")
            lines.append(f"{i:>3}  {n.name[:28]:<28} {op_name(n)[:30]:<30} {k.target:<6} {t}  {note}")
        built = sum(k.target in ("llvm", "cuda", "vdla") for k in self.kernels.values())
        lines.append(f"{built} of {len(self.kernels)} nodes on {self.target} ({self.distinct_functions} distinct "
                     f"functions), compiled in {self.info.get('compile_s', 0.0):.1f} s")
        return "\n".join(lines)

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


def op_name(node: Node) -> str:
    """A node's op, or its fused body's pattern (``conv2d+add+relu``)."""
    if node.attrs.get("pattern"):
        return str(node.attrs["pattern"])
    body = node.attrs.get("body") if node.op == "fused" else None
    return "+".join(b.op for b in body.topo_order()) if isinstance(body, Graph) else node.op


def _view(v: Any, n: Node, k: Step) -> Any:
    """A view step's value: its input's memory from the step's offset on, in the node's shape."""
    assert n.type is not None
    shape, off = tuple(n.type.shape), k.offset
    if isinstance(v, DeviceArray):
        return v.view(off, shape)
    return view_of(np.asarray(v), shape, off)


def _host(v: Any) -> Any:
    return v.numpy() if isinstance(v, DeviceArray) else v


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
