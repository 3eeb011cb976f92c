"""Measuring configs: AutoTVM's ``measure_option(builder=LocalBuilder(...), runner=LocalRunner(...))``.

Every measurement is one Dask task (:func:`vdla.cluster.get_client`): the worker rebuilds the
task's schedule for the point, builds it, runs it on random inputs and checks the output
against the template's numpy reference (computed once per task and worker process), then:

* ``llvm``: times the function (``number`` calls per repeat, ``repeat`` repeats; the timed
  part holds a cluster-wide lock so measurements on one machine do not share its cores);
* ``cuda``: builds it on every worker (proven by ptxas), runs it on a worker holding a GPU
  (:mod:`.measure_cuda`);
* ``vdla``: runs it on the golden simulator (``device="fsim"``: cycles from its cycle
  model, deterministic) or on Verilator (``device="verilator"``) and reports the cycles.

Nothing a point does stops the tuner: a schedule the template rejects, a build error (a tile
that overflows an on-chip buffer), a runtime rule broken, a wrong answer, a timeout or a
worker that died (Dask retries the task on another worker first) is a :class:`MeasureResult`
with its :class:`MeasureErrorNo` and message.
"""

from __future__ import annotations

import json
import math
import time
import traceback
import zlib
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

import numpy as np

from ...compat.aliases import module_getattr
from .space import ConfigEntity
from .task import Task, TaskError, Template, backend_of, create, get_template

__all__ = ["MeasureErrorNo", "MeasureInput", "MeasureResult", "LocalBuilder", "LocalRunner", "MeasureOption",
           "measure_option", "measure_batch", "measure_one", "func_name"]

__getattr__ = module_getattr(__name__)  # TVM's RPCRunner, request_remote: an error that says what to use


class MeasureErrorNo(IntEnum):
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template rejects the point
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3  # the target rejects it (a tile overflows a buffer, a runtime rule)
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8
    WORKER_LOST = 9  # the worker process died (after Dask's retries)


@dataclass
class MeasureInput:
    task: Task
    config: ConfigEntity


@dataclass
class MeasureResult:
    """``costs``: seconds per call (llvm) or cycles (vdla), one per repeat; empty on error."""

    costs: list[float]
    error_no: int
    all_cost: float  # seconds the measurement took, build included
    timestamp: float
    error_msg: str = ""
    unit: str = "s"

    @property
    def ok(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def cost(self) -> float:
        return float(np.mean(self.costs)) if self.costs else math.inf


@dataclass
class LocalBuilder:
    """Builds each point on a worker; ``timeout`` seconds per build."""

    timeout: float = 10.0


@dataclass
class LocalRunner:
    """Runs each point: ``number`` calls per repeat, ``repeat`` repeats (llvm, cuda); ``device`` for
    vdla (fsim or verilator); ``threads`` for llvm's parallel loops (None: the worker's default);
    ``min_repeat_ms`` (cuda): ``number`` doubles until a repeat lasts that long (CUDA events)."""

    number: int = 1
    repeat: int = 3
    timeout: float = 10.0
    device: str = "fsim"
    threads: int | None = None
    check_correctness: bool = True
    min_repeat_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.number < 1 or self.repeat < 1 or self.timeout <= 0:
            raise ValueError(f"LocalRunner: number ({self.number}) and repeat ({self.repeat}) must be >= 1 "
                             f"and timeout ({self.timeout}) > 0")


@dataclass
class MeasureOption:
    builder: LocalBuilder = field(default_factory=LocalBuilder)
    runner: LocalRunner = field(default_factory=LocalRunner)
    scheduler: str | None = None  # a Dask scheduler address (None: VDLA_SCHEDULER or a local cluster)
    n_parallel: int | None = None  # points per batch (None: two per worker)
    client: Any = field(default=None, repr=False)  # a distributed.Client to use as is
    # results by (task, point): a point met again (another tuner or seed in a comparison) is not
    # measured again; meant for vdla's deterministic cycles, or one timing per point on llvm
    cache: dict[str, MeasureResult] | None = field(default=None, repr=False)


def measure_option(builder: LocalBuilder | str | None = None, runner: LocalRunner | str | None = None,
                   scheduler: str | None = None, n_parallel: int | None = None, client: Any = None,
                   cache: dict[str, MeasureResult] | None = None) -> MeasureOption:
    """AutoTVM's ``measure_option``: how points are built and run (and on which cluster).
    ``"local"`` is AutoTVM's spelling of a default LocalBuilder / LocalRunner."""
    return MeasureOption(_local(builder, LocalBuilder, "builder"), _local(runner, LocalRunner, "runner"), scheduler,
                         n_parallel, client, cache)


def _local(value: Any, cls: type, what: str) -> Any:
    if value is None or value == "local":
        return cls()
    if not isinstance(value, cls):
        raise ValueError(f"measure_option: {what} {value!r} is not 'local' or a {cls.__name__}; vdla measures on "
                         f"Dask workers (RPC builders and runners are not provided: give scheduler= or client=)")
    return value


# ---------------------------------------------------------------------------- on the worker

_TASKS: dict[str, Task] = {}
_REFS: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}


def _task(tpl: Template | None, name: str, args: list[Any], target: str) -> Task:
    from .task import TEMPLATES

    if tpl is not None and name not in TEMPLATES:
        TEMPLATES[name] = tpl  # a template defined outside the package (a test, a notebook)
    key = json.dumps([name, args, target])
    if key not in _TASKS:
        _TASKS[key] = create(name, args, target)
    return _TASKS[key]


def func_name(task_name: str) -> str:
    """The name a point of task ``task_name`` is built under: the symbol
    (:func:`vdla.compiler.driver.symbol_name`) of the template's name up to its first dot (a
    user's ``"tutorial/conv2d"`` names no symbol a GPU kernel may have)."""
    from ..driver import symbol_name

    return symbol_name(task_name.split(".")[0])


def _random_inputs(task: Task, tensors: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for t in tensors:
        shape = tuple(int(getattr(d, "value", d)) for d in t.shape)
        dt = np.dtype(t.dtype)
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt == np.int8:
            out.append(rng.integers(-128, 128, shape, dtype=np.int8))
        else:
            out.append(rng.integers(-4000, 4000, shape).astype(dt))
    return out


def _is_input(t: Any) -> bool:
    from ..te.operation import PlaceholderOp

    return isinstance(t.op, PlaceholderOp)


def _reference(task: Task, tensors: list[Any]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(inputs, expected outputs) of a task, once per worker process (empty outputs: unchecked)."""
    ins = [t for t in tensors if _is_input(t)]
    # once per task (and per input layout, where a knob chooses it)
    key = json.dumps([task.key(), [[int(getattr(d, "value", d)) for d in t.shape] for t in ins]])
    if key not in _REFS:
        tpl = task.template
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        arrays = tpl.inputs(task.args, rng) if tpl.inputs is not None else _random_inputs(task, ins, rng)
        want = tpl.reference(task.args, arrays) if tpl.reference is not None else []
        _REFS[key] = (arrays, list(want))
    return _REFS[key]


def _fail(no: MeasureErrorNo, e: BaseException | str, t0: float, unit: str) -> MeasureResult:
    msg = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    return MeasureResult([], int(no), time.perf_counter() - t0, time.time(), str(msg)[:2000], unit)


def measure_one(tpl: Template | None, name: str, args: list[Any], target: str, config: dict[str, Any],
                builder: LocalBuilder, runner: LocalRunner) -> MeasureResult:
    """Build, check and time one point (runs on a worker; every failure is a result)."""
    from ..driver import build

    t0 = time.perf_counter()
    kind = backend_of(target)
    unit = "cycles" if kind == "vdla" else "s"
    try:
        task = _task(tpl, name, args, target)
        cfg = ConfigEntity.from_json_dict(config, task.config_space)
        s, tensors = task.instantiate(cfg)
    except (TaskError, KeyError, ValueError) as e:
        return _fail(MeasureErrorNo.INSTANTIATION_ERROR, e, t0, unit)
    except Exception as e:  # noqa: BLE001 - the template rejects this point (VDLAError, ScheduleError, ...)
        return _fail(MeasureErrorNo.INSTANTIATION_ERROR, e, t0, unit)
    try:
        if kind == "vdla":
            func = build(s, tensors, target="vdla", name=func_name(name), config=getattr(s, "vdla_config", None))
        else:
            func = build(s, tensors, target=target, name=func_name(name))
    except Exception as e:  # noqa: BLE001 - an invalid point for the target: recorded, never raised
        return _fail(MeasureErrorNo.COMPILE_DEVICE if kind == "vdla" else MeasureErrorNo.COMPILE_HOST, e, t0, unit)
    if time.perf_counter() - t0 > builder.timeout:
        return _fail(MeasureErrorNo.BUILD_TIMEOUT, f"build took more than {builder.timeout:g} s", t0, unit)
    try:
        ins, want = _reference(task, tensors)
    except Exception as e:  # noqa: BLE001
        return _fail(MeasureErrorNo.UNKNOWN_ERROR, f"reference failed: {type(e).__name__}: {e}", t0, unit)
    outs = [np.zeros(tuple(int(getattr(d, "value", d)) for d in t.shape), t.dtype) for t in tensors
            if not _is_input(t)]
    arrays = [a.copy() for a in ins] + outs
    t1 = time.perf_counter()
    try:
        if kind == "vdla":
            from ...runtime import Device

            costs = [float(func(Device(runner.device, config=func.config), *arrays).cycles)]
        else:
            costs = _time_llvm(func, arrays, runner)
    except Exception as e:  # noqa: BLE001
        return _fail(MeasureErrorNo.RUNTIME_DEVICE, e, t0, unit)
    if time.perf_counter() - t1 > runner.timeout:
        return _fail(MeasureErrorNo.RUN_TIMEOUT, f"run took more than {runner.timeout:g} s", t0, unit)
    if runner.check_correctness and want:
        for k, (got, exp) in enumerate(zip(outs, want)):
            bad = (not np.array_equal(got, exp)) if got.dtype.kind in "iu" else \
                (not np.allclose(got, exp, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(exp).max()))))
            if bad:
                return _fail(MeasureErrorNo.WRONG_ANSWER, f"output {k} differs from the numpy reference "
                             f"(max |diff| {float(np.abs(got.astype(np.float64) - exp).max()):g})", t0, unit)
    return MeasureResult(costs, int(MeasureErrorNo.NO_ERROR), time.perf_counter() - t0, time.time(), "", unit)


def _time_llvm(func: Any, arrays: list[np.ndarray], runner: LocalRunner) -> list[float]:
    from ..targets.llvm import jit

    def timed() -> list[float]:
        old = jit.get_num_threads()
        if runner.threads:
            jit.set_num_threads(runner.threads)
        try:
            func(*arrays)  # warm-up (and the run that is checked)
            # the calls looped in native code, as TVM's time_evaluator does
            return list(func.time_evaluator(func.name, number=runner.number, repeat=runner.repeat)(*arrays).results)
        finally:
            jit.set_num_threads(old)

    try:
        from distributed import Lock, get_worker

        get_worker()
    except (ImportError, ValueError):
        return timed()
    with Lock("vdla-llvm-timing"):  # one timing at a time per cluster: they would share the cores
        return timed()


# ---------------------------------------------------------------------------- on the tuner's side

#: target kind -> its own batch measurement (``cuda``: :func:`.measure_cuda.measure_batch_cuda`, registered
#: when that module is imported, as the package does); other kinds measure each point in one task here
BATCH_MEASURERS: dict[str, Any] = {}


def measure_batch(inputs: list[MeasureInput], option: MeasureOption) -> list[MeasureResult]:
    """Measure the points as Dask tasks; returns one result per input, in order."""
    from distributed.client import FutureCancelledError

    from ... import cluster

    if not inputs:
        return []
    if option.cache is not None:
        keys = [json.dumps([inp.task.key(), inp.config.knobs()]) for inp in inputs]
        todo = [(k, inp) for k, inp in zip(keys, inputs) if k not in option.cache]
        fresh = dict(zip([k for k, _ in todo],
                         measure_batch([inp for _, inp in todo], replace(option, cache=None)) if todo else []))
        for k, res in fresh.items():
            if res.error_no not in (MeasureErrorNo.RUN_TIMEOUT, MeasureErrorNo.WORKER_LOST):
                option.cache[k] = res
        return [fresh[k] if k in fresh else option.cache[k] for k in keys]
    if inputs[0].task.kind in BATCH_MEASURERS:  # cuda: built on every worker, run on a GPU worker
        return BATCH_MEASURERS[inputs[0].task.kind](inputs, option)
    client = option.client or cluster.get_client(option.scheduler)
    tpls = {inp.task.name: get_template(inp.task.name) for inp in inputs}  # a batch may mix tasks
    futs = [client.submit(measure_one, tpls[inp.task.name], inp.task.name, inp.task.args, inp.task.target,
                          inp.config.to_json_dict(), option.builder, option.runner, pure=False) for inp in inputs]
    nworkers = max(1, len(client.scheduler_info().get("workers", {})))
    rounds = math.ceil(len(inputs) / nworkers)
    limit = (option.builder.timeout + option.runner.timeout) * rounds + 30.0
    _wait(futs, limit)
    out: list[MeasureResult] = []
    stuck = False
    for inp, fut in zip(inputs, futs):
        unit = "cycles" if inp.task.kind == "vdla" else "s"
        if fut.status == "finished":
            out.append(fut.result())
        elif fut.status == "error":
            exc = fut.exception()
            if type(exc).__name__ == "KilledWorker":
                out.append(MeasureResult([], int(MeasureErrorNo.WORKER_LOST), 0.0, time.time(),
                                         f"the worker process died while measuring (after Dask's retries): {exc}",
                                         unit))
            else:
                tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                out.append(MeasureResult([], int(MeasureErrorNo.UNKNOWN_ERROR), 0.0, time.time(), tb[:2000], unit))
        else:
            stuck = True
            try:
                fut.cancel()
            except FutureCancelledError:  # pragma: no cover
                pass
            out.append(MeasureResult([], int(MeasureErrorNo.RUN_TIMEOUT), limit, time.time(),
                                     f"no result within {limit:g} s (build + run timeouts per round)", unit))
    if stuck and option.client is None and not option.scheduler:
        try:  # a hung measurement holds its worker: restart the local cluster's workers
            client.restart(timeout=60)
        except Exception:  # noqa: BLE001 - best effort; the next batch reports what is still wrong
            pass
    return out


def _wait(futs: list[Any], limit: float) -> None:
    """Until every future has finished or failed, or ``limit`` seconds (the rest are timeouts)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and any(f.status not in ("finished", "error", "cancelled") for f in futs):
        time.sleep(0.02)
