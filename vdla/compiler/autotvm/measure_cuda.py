"""Measuring cuda configs: builds proven by ptxas on CPU workers, runs timed by CUDA events on a GPU worker.

A batch of points is measured in two rounds of Dask tasks (:func:`measure_batch_cuda`):

1. **build** (:func:`build_one`, on every worker, in parallel processes): instantiate the point,
   build it for the task's architecture, assemble the PTX with ptxas (``-v``) and check what the
   GPU would refuse at launch. An invalid point is a :class:`MeasureResult` whose message names
   the reason: ``too many threads per block``, ``shared memory over the limit``, ``registers
   over the limit`` (ptxas's count x the block's threads against the 64 Ki registers of an SM;
   255 per thread), or ``ptxas error`` (ptxas's own message). A valid one is a
   :class:`CudaBuild`: the PTX and each kernel's launch (name, grid, block, which arguments),
   with ptxas's registers and spills, small enough to ship to another machine.
2. **run** (:func:`run_one`, on a worker holding a GPU: a Dask worker resource ``GPU=1``, or a
   worker that reports a GPU when none declares one): the worker keeps one measuring process
   (:class:`MeasureProcess`) that owns the CUDA context, loads the PTX, checks the output
   against the template's numpy reference once and times the kernels with CUDA events
   (``repeat`` repeats of ``number`` calls, ``number`` doubled until a repeat lasts
   ``min_repeat_ms``). A point that faults the GPU (an illegal address makes the context
   unusable for the rest of the process) or runs past ``timeout`` is recorded as an error and
   the measuring process is replaced; the tuning run goes on.

Without a GPU anywhere in the cluster :func:`gpu_workers` raises :class:`NoCudaDevice` with one
line: ``no CUDA device: tuning cuda needs a GPU worker; pass --scheduler ADDRESS``.
"""

from __future__ import annotations

import math
import os
import re
import select
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _measure_server
from .measure import (
    BATCH_MEASURERS,
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureOption,
    MeasureResult,
)
from .space import ConfigEntity
from .task import TaskError, Template

__all__ = ["CudaBuild", "KernelLaunch", "NoCudaDevice", "MeasureProcess", "build_one", "build_batch", "run_one",
           "gpu_workers", "measure_batch_cuda", "parse_ptxas", "NO_GPU", "REGISTERS_PER_SM", "REGISTERS_PER_THREAD"]

NO_GPU = "no CUDA device: tuning cuda needs a GPU worker; pass --scheduler ADDRESS"
#: the register file of an SM on sm_80 / sm_90 (32-bit registers) and the most one thread may use
REGISTERS_PER_SM = 65536
REGISTERS_PER_THREAD = 255
#: registers are allocated per warp in units of this many
_REG_UNIT = 256


class NoCudaDevice(RuntimeError):
    """No worker of the cluster (and not this machine) has a CUDA GPU to measure on."""


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel of a built point: its name, launch shape, ptxas's resource report, and its
    parameters as positions in the function's arguments (``("arg", i)``) or temporary
    global buffers (``("temp", shape, dtype)``)."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[tuple[Any, ...], ...]
    registers: int = 0
    shared_bytes: int = 0
    spill_bytes: int = 0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass
class CudaBuild:
    """A point built and proven: what the GPU worker needs to run it (picklable, no compiler objects)."""

    ptx: str
    arch: str
    kernels: list[KernelLaunch]
    args: list[tuple[tuple[int, ...], str, bool]]  # (shape, dtype, is an input) per argument, in order
    report: str = ""  # ptxas -v (empty where ptxas is not installed: then unproven)
    build_s: float = 0.0

    @property
    def registers(self) -> int:
        return max((k.registers for k in self.kernels), default=0)


# ---------------------------------------------------------------------------- ptxas's report


_PTXAS_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(report: str) -> dict[str, dict[str, int]]:
    """Kernel name -> {registers, shared, spill} from ``ptxas -v``'s report."""
    out: dict[str, dict[str, int]] = {}
    cur: str | None = None
    for line in report.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            cur = m.group(1)
            out[cur] = {"registers": 0, "shared": 0, "spill": 0}
            continue
        if cur is None:
            continue
        for key, rx in (("registers", _PTXAS_REGS), ("spill", _PTXAS_SPILL), ("shared", _PTXAS_SMEM)):
            m = rx.search(line)
            if m:
                out[cur][key] = int(m.group(1))
    return out


def registers_per_block(registers: int, threads: int) -> int:
    """The registers a block of ``threads`` occupies (allocated per warp in units of 256)."""
    per_warp = math.ceil(registers * 32 / _REG_UNIT) * _REG_UNIT
    return per_warp * math.ceil(threads / 32)


# ---------------------------------------------------------------------------- building (CPU workers)


def _fail(no: MeasureErrorNo, msg: str, t0: float) -> MeasureResult:
    return MeasureResult([], int(no), time.perf_counter() - t0, time.time(), msg[:2000], "s")


def _launches(f: Any) -> list[KernelLaunch]:
    """The kernels of a built CUDAModule as :class:`KernelLaunch` es (constant shapes only)."""
    from ..tir.nodes import Buffer, IntImm
    from ..tir.passes.simplify import simplify_expr

    params = list(f.lowered.params)
    index = {id(p): i for i, p in enumerate(params)}
    kernels = []
    for k in f.kernels:
        grid = []
        for g in k.grid:
            v = simplify_expr(g)
            if not isinstance(v, IntImm):
                raise TaskError(f"kernel {k.name}: grid extent {g} is not a constant (the cuda runner takes constant shapes)")
            grid.append(int(v.value))
        ps: list[tuple[Any, ...]] = []
        for p in k.params:
            if id(p) in index:
                ps.append(("arg", index[id(p)]))
            elif isinstance(p, Buffer):
                shape = []
                for d in p.shape:
                    v = simplify_expr(d)
                    if not isinstance(v, IntImm):
                        raise TaskError(f"kernel {k.name}: temporary {p.name} has a symbolic shape")
                    shape.append(int(v.value))
                ps.append(("temp", tuple(shape), str(p.dtype)))
            else:
                raise TaskError(f"kernel {k.name}: scalar parameter {getattr(p, 'name', p)} (symbolic shapes are not "
                                "measured)")
        kernels.append(KernelLaunch(k.name, tuple(grid), tuple(k.block), tuple(ps)))  # type: ignore[arg-type]
    return kernels


def build_one(tpl: Template | None, name: str, args: list[Any], target: str, config: dict[str, Any],
              builder: LocalBuilder) -> CudaBuild | MeasureResult:
    """Build one point for ``target`` and prove it with ptxas (runs on a CPU worker; an invalid
    point is a MeasureResult naming why, never an exception)."""
    from ..driver import build
    from ..targets.cuda.lower import CudaLoweringError
    from ..targets.cuda.ptxas import PtxasError, assemble, find_ptxas
    from .measure import _is_input, _task, func_name

    t0 = time.perf_counter()
    try:
        task = _task(tpl, name, args, target)
        cfg = ConfigEntity.from_json_dict(config, task.config_space)
        s, tensors = task.instantiate(cfg)
    except Exception as e:  # noqa: BLE001 - the template rejects the point
        return _fail(MeasureErrorNo.INSTANTIATION_ERROR, f"{type(e).__name__}: {e}", t0)
    try:
        f = build(s, tensors, target=target, name=func_name(name))
    except CudaLoweringError as e:
        msg = str(e)
        why = ("too many threads per block" if "threads per block" in msg or "threadIdx" in msg and "allows" in msg
               else "shared memory over the limit" if "shared memory" in msg else "invalid for the GPU")
        return _fail(MeasureErrorNo.COMPILE_DEVICE, f"{why}: {msg}", t0)
    except Exception as e:  # noqa: BLE001 - any other build failure: recorded, never raised
        return _fail(MeasureErrorNo.COMPILE_HOST, f"{type(e).__name__}: {e}", t0)
    arch = f.target.arch
    report = ""
    regs: dict[str, dict[str, int]] = {}
    if find_ptxas() is not None:
        try:
            report = assemble(f.ptx, arch).report
        except PtxasError as e:
            return _fail(MeasureErrorNo.COMPILE_DEVICE, f"ptxas error: {e}", t0)
        regs = parse_ptxas(report)
    try:
        kernels = _launches(f)
    except TaskError as e:
        return _fail(MeasureErrorNo.COMPILE_HOST, str(e), t0)
    shared = {k.name: k.shared_bytes for k in f.kernels}
    out = []
    for k in kernels:
        r = regs.get(k.name, {})
        k = KernelLaunch(k.name, k.grid, k.block, k.params, r.get("registers", 0), shared.get(k.name, 0),
                         r.get("spill", 0))
        if k.registers > REGISTERS_PER_THREAD:
            return _fail(MeasureErrorNo.COMPILE_DEVICE, f"registers over the limit: kernel {k.name} uses {k.registers} "
                         f"registers per thread ({REGISTERS_PER_THREAD} at most)", t0)
        need = registers_per_block(k.registers, k.threads)
        if need > REGISTERS_PER_SM:
            return _fail(MeasureErrorNo.COMPILE_DEVICE, f"registers over the limit: kernel {k.name} needs {k.registers} "
                         f"registers x {k.threads} threads = {need} per block, an SM of {arch} has "
                         f"{REGISTERS_PER_SM}", t0)
        out.append(k)
    shapes = [(tuple(int(getattr(d, "value", d)) for d in t.shape), str(t.dtype), _is_input(t)) for t in tensors]
    if time.perf_counter() - t0 > builder.timeout:
        return _fail(MeasureErrorNo.BUILD_TIMEOUT, f"build took more than {builder.timeout:g} s", t0)
    return CudaBuild(f.ptx, arch, out, shapes, report, time.perf_counter() - t0)


def build_batch(inputs: list[MeasureInput], option: MeasureOption) -> list[CudaBuild | MeasureResult]:
    """Build (and prove) the points as Dask tasks on the cluster's workers, in order."""
    from ... import cluster
    from .task import get_template

    if not inputs:
        return []
    client = option.client or cluster.get_client(option.scheduler)
    tpls = {inp.task.name: get_template(inp.task.name) for inp in inputs}
    futs = [client.submit(build_one, tpls[i.task.name], i.task.name, i.task.args, i.task.target,
                          i.config.to_json_dict(), option.builder, pure=False) for i in inputs]
    nworkers = max(1, len(client.scheduler_info().get("workers", {})))
    # a build past its timeout is not waited for (its worker finishes it, ignored): the batch goes on
    deadline = time.monotonic() + option.builder.timeout * math.ceil(len(inputs) / nworkers) + 10.0
    out: list[CudaBuild | MeasureResult] = []
    stuck = False
    for fut in futs:
        try:
            out.append(fut.result(timeout=max(0.1, deadline - time.monotonic())))
        except Exception as e:  # noqa: BLE001 - a lost worker or a timeout: this point's error
            timeout = "Timeout" in type(e).__name__
            stuck |= timeout
            if timeout:
                fut.cancel()
            out.append(MeasureResult([], int(MeasureErrorNo.BUILD_TIMEOUT if timeout else MeasureErrorNo.WORKER_LOST),
                                     0.0, time.time(), f"build: {type(e).__name__}: {e}", "s"))
    if stuck and option.client is None and not option.scheduler:
        try:  # a build still running holds its worker: restart the local cluster's workers
            client.restart(timeout=60)
        except Exception:  # noqa: BLE001 - best effort; the next batch reports what is still wrong
            pass
    return out


# ---------------------------------------------------------------------------- the measuring process


class MeasureProcess:
    """A child process that runs requests one at a time, replaced when it dies, hangs or says
    its state is lost (``call`` never raises for those: it returns ``("dead" | "timeout" |
    "error", message)``). A plain subprocess (a Dask worker is a daemon process, which
    multiprocessing does not let have children), speaking length-prefixed pickles on its pipes."""

    def __init__(self) -> None:
        self._proc: Any = None
        self.started = 0  # how many processes were started (replacements counted)

    def _start(self) -> None:
        import vdla

        env = dict(os.environ)
        root = str(Path(vdla.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        # the server file run as __main__ (not as a script path, which would put the autotvm folder on
        # sys.path, its modules shadowing same-named ones): vdla is imported only when a request needs it
        code = f"import runpy; runpy.run_path({_measure_server.__file__!r}, run_name='__main__')"
        self._proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=env)
        self.started += 1

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(10)
            for f in (self._proc.stdin, self._proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        self._proc = None

    def call(self, func: Any, payload: Any, timeout: float) -> tuple[str, Any]:
        """``func(payload)`` in the process (started or replaced as needed)."""
        if not self.alive():
            self.kill()
            self._start()
        proc = self._proc
        try:
            _measure_server.write(proc.stdin, (func, payload))
            ready, _, _ = select.select([proc.stdout], [], [], timeout)
            if not ready:
                self.kill()
                return "timeout", f"no answer within {timeout:g} s (the measuring process was replaced)"
            ans = _measure_server.read(proc.stdout)
        except (EOFError, OSError):
            proc.wait(10)
            code = proc.returncode
            self.kill()
            return "dead", f"the measuring process died (exit code {code}); it was replaced"
        if ans[0] == "error" and len(ans) > 2 and ans[2]:
            self.kill()  # its context is unusable: the next request starts a fresh process
            return "error", f"{ans[1]} (the measuring process was replaced)"
        return ans[0], ans[1]

    def close(self) -> None:
        if self.alive():
            try:
                _measure_server.write(self._proc.stdin, None)
                self._proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


class _Fatal(RuntimeError):
    fatal = True


# ---------------------------------------------------------------------------- running (the GPU worker)

_PROCESS: MeasureProcess | None = None
_GPU_REFS: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}


def _gpu_measure(req: dict[str, Any]) -> list[float]:
    """In the measuring process: load, check once, time. A CUDA error is fatal (the process ends)."""
    import ctypes

    from ...runtime.cuda_driver import CudaError, DeviceArray, get_device

    b: CudaBuild = req["build"]
    runner: LocalRunner = req["runner"]
    key = req["key"]
    if key not in _GPU_REFS:
        _GPU_REFS.clear()  # one task's arrays at a time
        _GPU_REFS[key] = _reference_arrays(req)
    ins, want = _GPU_REFS[key]
    try:
        dev = get_device(0)
        mod = dev.load(hash(b.ptx), b.ptx)
        arrays = []
        k_in = 0
        for shape, dtype, is_in in b.args:
            if is_in:
                arrays.append(DeviceArray(dev, shape, dtype).copyfrom(ins[k_in]))
                k_in += 1
            else:
                arrays.append(DeviceArray(dev, shape, dtype).copyfrom(np.zeros(shape, dtype)))
        launches = []
        temps = []
        for k in b.kernels:
            values, types = [], []
            for p in k.params:
                if p[0] == "arg":
                    values.append(arrays[p[1]].ptr)
                else:
                    temps.append(DeviceArray(dev, p[1], p[2]))
                    values.append(temps[-1].ptr)
                types.append(ctypes.c_void_p)  # a device pointer
            launches.append((dev.function(mod, k.name), k.name, k.grid, k.block, values, types))

        def once() -> None:
            for launch in launches:
                dev.launch(*launch)

        once()
        dev.synchronize(b.kernels[0].name if b.kernels else "")
        outs = [a.numpy() for a, (_, _, is_in) in zip(arrays, b.args) if not is_in]
        if runner.check_correctness and want:
            for k, (got, exp) in enumerate(zip(outs, want)):
                if not np.allclose(got, exp, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(exp).max()))):
                    raise ValueError(f"wrong answer: output {k} differs from the numpy reference "
                                     f"(max |diff| {float(np.abs(got.astype(np.float64) - exp).max()):g})")
        costs = []
        for _ in range(runner.repeat):
            n = runner.number
            while True:
                t = dev.time(once, n)
                if t * n * 1e3 >= runner.min_repeat_ms or n >= 1 << 20:
                    break
                n *= 2
            costs.append(t)
        return costs
    except CudaError as e:
        raise _Fatal(str(e)) from None


def _reference_arrays(req: dict[str, Any]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    from .measure import _reference, _task

    task = _task(req["tpl"], req["name"], req["args"], req["target"])
    _, tensors = task.instantiate(task.fallback())
    return _reference(task, tensors)


def run_one(build: CudaBuild, tpl: Template | None, name: str, args: list[Any], target: str,
            runner: LocalRunner) -> MeasureResult:
    """Run one built point in this worker's measuring process (started on first use)."""
    global _PROCESS
    t0 = time.perf_counter()
    if _PROCESS is None:
        _PROCESS = MeasureProcess()
    key = repr([name, args, target])
    req = {"build": build, "runner": runner, "key": key, "tpl": tpl, "name": name, "args": args, "target": target}
    # the first request of a task computes its numpy reference: allow for it beyond the run's timeout
    status, got = _PROCESS.call(_gpu_measure, req, runner.timeout + 120.0)
    if status == "ok":
        return MeasureResult(list(got), int(MeasureErrorNo.NO_ERROR), time.perf_counter() - t0 + build.build_s,
                             time.time(), "", "s")
    if status == "timeout":
        return MeasureResult([], int(MeasureErrorNo.RUN_TIMEOUT), time.perf_counter() - t0, time.time(), got, "s")
    no = MeasureErrorNo.WRONG_ANSWER if "wrong answer" in str(got) else MeasureErrorNo.RUNTIME_DEVICE
    return MeasureResult([], int(no), time.perf_counter() - t0, time.time(), str(got)[:2000], "s")


def _probe_gpu() -> str | None:
    """This process's GPU 0 architecture, or None (runs on each worker)."""
    try:
        from ..targets.cuda.target import present_arch

        return present_arch()
    except Exception:  # noqa: BLE001 - no driver, no bindings: no GPU
        return None


@dataclass
class GpuWorkers:
    """Where runs go: the workers holding a GPU and whether they declare the ``GPU`` resource."""

    addresses: list[str]
    arch: str | None
    resource: bool
    _next: int = field(default=0, repr=False)


def gpu_workers(client: Any) -> GpuWorkers:
    """The cluster's GPU workers: those with the Dask resource ``GPU``, else the first worker that
    reports a GPU (asked one at a time: asking opens a CUDA context in the worker); raises
    :class:`NoCudaDevice` (:data:`NO_GPU`) when there are none. Kept per cluster and set of workers."""
    info = client.scheduler_info().get("workers", {})
    key = (getattr(client.scheduler, "address", ""), tuple(sorted(info)))
    got = _GPU_WORKERS.get(key)
    if got is not None:
        return got
    declared = [a for a, w in info.items() if (w.get("resources") or {}).get("GPU", 0) >= 1]
    if declared:
        archs = client.run(_probe_gpu, workers=declared[:1])
        got = GpuWorkers(declared, next(iter(archs.values()), None), True)
    else:
        for addr in sorted(info):
            arch = client.run(_probe_gpu, workers=[addr]).get(addr)
            if arch:
                # one worker measures: several processes timing one GPU at once would share it
                got = GpuWorkers([addr], arch, False)
                break
        else:
            raise NoCudaDevice(NO_GPU)
    _GPU_WORKERS[key] = got
    return got


_GPU_WORKERS: dict[tuple[str, tuple[str, ...]], GpuWorkers] = {}


def note_builds(inputs: list[MeasureInput], built: list[CudaBuild | MeasureResult]) -> None:
    """Give the cost model ptxas's register counts of the points built (:func:`.features.note_registers`)."""
    from . import features

    for inp, b in zip(inputs, built):
        if isinstance(b, CudaBuild):
            features.note_registers(inp.task, inp.config.index, b.registers)


def measure_batch_cuda(inputs: list[MeasureInput], option: MeasureOption) -> list[MeasureResult]:
    """Build every point on the cluster, then run the valid ones on its GPU worker(s); in order."""
    from ... import cluster
    from .task import get_template

    if not inputs:
        return []
    client = option.client or cluster.get_client(option.scheduler)
    gpus = gpu_workers(client)  # before any build: without a GPU the run stops here, in one line
    built = build_batch(inputs, option)
    note_builds(inputs, built)
    out: list[MeasureResult | None] = [b if isinstance(b, MeasureResult) else None for b in built]
    futs = {}
    for k, (inp, b) in enumerate(zip(inputs, built)):
        if isinstance(b, MeasureResult):
            continue
        kw: dict[str, Any] = {"resources": {"GPU": 1}} if gpus.resource else {"workers": gpus.addresses}
        futs[k] = client.submit(run_one, b, get_template(inp.task.name), inp.task.name, inp.task.args,
                                inp.task.target, option.runner, pure=False, **kw)
    for k, fut in futs.items():
        try:
            out[k] = fut.result(timeout=option.runner.timeout + 180)
        except Exception as e:  # noqa: BLE001 - a lost worker: the point's error, the run goes on
            tb = "".join(traceback.format_exception_only(type(e), e)).strip()
            out[k] = MeasureResult([], int(MeasureErrorNo.WORKER_LOST), 0.0, time.time(), tb[:2000], "s")
    return [r for r in out if r is not None]


BATCH_MEASURERS["cuda"] = measure_batch_cuda
