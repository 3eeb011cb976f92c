"""TVM-style devices and arrays: ``vdla.device("llvm", 0)``, ``vdla.nd.array(x, dev)``.

A :class:`DLDevice` is what TVM calls ``tvm.runtime.Device``: a (device type, index)
pair naming where an array lives -- the host CPU (``cpu``/``llvm``), a GPU (``cuda``)
or the accelerator (``ext_dev``, VTA's name for it). An :class:`NDArray` is an array
placed on one; its storage is a host numpy array (the CPU and the simulators read host
memory; a built accelerator function copies arguments into its Device's DRAM for each
call), except on ``cuda``, where a :class:`CudaNDArray` holds GPU memory (:mod:`.cuda_driver`;
"no CUDA device" without a GPU). ``.numpy()`` is always available.

Built functions accept NDArrays (or anything duck-typed with ``.numpy()`` and
``copyfrom``) through :func:`host_view`, which gives the host array to compute on and
the write-back that puts results into the caller's array. ``ext_dev`` runs on the
backend set with :func:`set_ext_dev_backend` (default ``fsim``, the golden simulator;
``VDLA_EXT_DEV`` in the environment sets it too).

This module belongs to the runtime: it never imports the compiler.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DLDevice", "NDArray", "CudaNDArray", "array", "empty", "device", "cpu", "cuda", "ext_dev", "host_view", "is_array_like",
    "set_ext_dev_backend", "ext_dev_backend", "NDArrayError", "ext_dev_stats", "clear_ext_dev_stats",
    "record_ext_dev_run",
]


class NDArrayError(ValueError):
    """An array or device request that cannot be met (unknown device, shape or dtype mismatch)."""


#: TVM's (DLPack's) device type codes; the names TVM accepts for each
DEVICE_TYPES: dict[str, int] = {
    "cpu": 1, "llvm": 1, "c": 1, "stackvm": 1,
    "cuda": 2, "gpu": 2, "nvptx": 2,
    "ext_dev": 12, "vdla": 12, "vta": 12,
}
TYPE_NAMES: dict[int, str] = {1: "cpu", 2: "cuda", 12: "ext_dev"}

_ext_backend = os.environ.get("VDLA_EXT_DEV", "fsim")
_accelerators: dict[tuple[str, Any], Any] = {}


def set_ext_dev_backend(backend: str) -> None:
    """Run ``ext_dev`` arrays' functions on Device ``backend`` (``fsim``, ``pysim``, ``verilator``, ``serial:PORT``)."""
    global _ext_backend
    if not isinstance(backend, str) or not backend:
        raise NDArrayError(f"set_ext_dev_backend: expected a backend name such as 'fsim', got {backend!r}")
    _ext_backend = backend
    _accelerators.clear()


def ext_dev_backend() -> str:
    """The backend name ``ext_dev`` runs on."""
    return _ext_backend


_stats: dict[str, int] = {}


def record_ext_dev_run(report: Any) -> None:
    """Add a run's counters (bytes loaded per buffer, GEMM/ALU iterations, cycles) to the ext_dev totals."""
    for k, v in getattr(report, "counters", {}).items():
        _stats[k] = _stats.get(k, 0) + int(v)
    _stats["cycles"] = _stats.get("cycles", 0) + int(getattr(report, "cycles", 0))


def ext_dev_stats() -> dict[str, int]:
    """VTA's simulator statistics: counter totals of the ext_dev runs since :func:`clear_ext_dev_stats`."""
    return dict(_stats)


def clear_ext_dev_stats() -> None:
    _stats.clear()


class DLDevice:
    """A device type and index (TVM's ``tvm.runtime.Device``); compares by value."""

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: int, device_id: int = 0) -> None:
        if device_type not in TYPE_NAMES:
            raise NDArrayError(f"unknown device type code {device_type}; known: {TYPE_NAMES}")
        if not isinstance(device_id, int | np.integer) or device_id < 0:
            raise NDArrayError(f"device index must be a non-negative integer, got {device_id!r}")
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    @property
    def kind(self) -> str:
        """``cpu``, ``cuda`` or ``ext_dev``."""
        return TYPE_NAMES[self.device_type]

    @property
    def exist(self) -> bool:
        """Whether this device is there: the CPU and the accelerator (a simulator at least) always are."""
        if self.device_type == 2:
            from .cuda_driver import device_count  # the real driver: 0 without one

            return self.device_id < device_count()
        return self.device_id == 0 or self.device_type == 1

    @property
    def device_name(self) -> str:
        if self.device_type == 2:
            if not self.exist:
                return "no CUDA GPU"
            from .cuda_driver import get_device

            return get_device(self.device_id).name
        if self.device_type == 12:
            return f"VDLA accelerator ({_ext_backend})"
        return "host CPU"

    def sync(self) -> None:
        """Wait for the device: a GPU finishes its queued kernels (every other call here is synchronous)."""
        if self.device_type == 2 and self.exist:
            from .cuda_driver import get_device

            get_device(self.device_id).synchronize()

    def accelerator(self, config: Any = None) -> Any:
        """The runtime :class:`~vdla.runtime.device.Device` an ``ext_dev`` runs programs on
        (one per backend and config, reused across calls)."""
        if self.device_type != 12:
            raise NDArrayError(f"{self} is not the accelerator; use vdla.ext_dev(0)")
        from .device import Device

        key = (_ext_backend, config)
        dev = _accelerators.get(key)
        if dev is None:
            dev = _accelerators[key] = Device(_ext_backend, config=config)
        return dev

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DLDevice) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"


def device(dev_type: str | int, dev_id: int = 0) -> DLDevice:
    """``vdla.device("llvm"|"cpu"|"cuda"|"ext_dev", 0)`` (a target string's first word works too)."""
    if isinstance(dev_type, int):
        return DLDevice(dev_type, dev_id)
    if not isinstance(dev_type, str) or not dev_type.split():
        raise NDArrayError(f"device: expected a name such as 'cpu', 'cuda', 'ext_dev', got {dev_type!r}")
    word = dev_type.split()[0]
    if word not in DEVICE_TYPES:
        raise NDArrayError(f"unknown device {dev_type!r}; use one of {', '.join(sorted(DEVICE_TYPES))}")
    return DLDevice(DEVICE_TYPES[word], dev_id)


def cpu(dev_id: int = 0) -> DLDevice:
    return DLDevice(1, dev_id)


def cuda(dev_id: int = 0) -> DLDevice:
    return DLDevice(2, dev_id)


def ext_dev(dev_id: int = 0) -> DLDevice:
    """The accelerator (VTA's ``ext_dev``)."""
    return DLDevice(12, dev_id)


class NDArray:
    """An n-dimensional array on a device, as TVM's ``tvm.nd.NDArray``."""

    def __init__(self, data: np.ndarray, dev: DLDevice) -> None:
        self._data = data
        self.device = dev

    # -- TVM's attributes
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> str:
        return str(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    def numpy(self) -> np.ndarray:
        """A numpy copy of the contents."""
        return self._data.copy()

    def copyfrom(self, source: Any) -> NDArray:
        """Overwrite the contents with ``source`` (a numpy array, an NDArray or a nested list) of the same shape."""
        src = source.numpy() if is_array_like(source) else np.asarray(source)
        if src.shape != self._data.shape:
            raise NDArrayError(f"copyfrom: array shape {self.shape} but source shape {tuple(src.shape)}")
        self._data[...] = src.astype(self._data.dtype, copy=False)
        return self

    def copyto(self, target: DLDevice | NDArray) -> NDArray:
        """Copy into another NDArray, or to a new array on a device."""
        if isinstance(target, DLDevice):
            return array(self.numpy(), target)
        if is_array_like(target):
            target.copyfrom(self)
            return target  # type: ignore[return-value]
        raise NDArrayError(f"copyto: expected a device or an NDArray, got {type(target).__name__}")

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (isinstance(key, slice) and key == slice(None)):
            raise NDArrayError("NDArray supports only whole-array assignment: arr[:] = value")
        self.copyfrom(value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<vdla.nd.NDArray shape={self.shape}, {self.device}>\n{self._data!r}"

    def _host_view(self) -> tuple[np.ndarray, Callable[[], None] | None]:
        return self._data, None  # host memory: a kernel writes it in place


class CudaNDArray(NDArray):
    """An NDArray in GPU memory (``vdla.nd.array(x, vdla.cuda(0))``): a :class:`~.cuda.DeviceArray`
    that a cuda-built function uses in place; ``.numpy()`` copies it to the host."""

    def __init__(self, data: Any, dev: DLDevice) -> None:
        self.device_array = data
        self.device = dev

    @property
    def shape(self) -> tuple[int, ...]:
        return self.device_array.shape

    @property
    def dtype(self) -> str:
        return str(self.device_array.dtype)

    @property
    def ndim(self) -> int:
        return self.device_array.ndim

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def numpy(self) -> np.ndarray:
        return self.device_array.numpy()

    def copyfrom(self, source: Any) -> NDArray:
        src = source.numpy() if is_array_like(source) else np.asarray(source)
        if src.shape != self.shape:
            raise NDArrayError(f"copyfrom: array shape {self.shape} but source shape {tuple(src.shape)}")
        self.device_array.copyfrom(src.astype(self.device_array.dtype, copy=False))
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"<vdla.nd.NDArray shape={self.shape}, {self.device}>\n{self.numpy()!r}"

    def _host_view(self) -> tuple[np.ndarray, Callable[[], None] | None]:
        host = self.numpy()  # a CPU or accelerator function computes on a host copy, written back after
        return host, lambda: self.copyfrom(host)


def _on_device(host: np.ndarray, dev: DLDevice) -> NDArray:
    """``host`` (owned by the caller) placed on ``dev``: GPU memory for cuda (NoCudaDevice without a GPU)."""
    if dev.device_type == 2:
        from .cuda_driver import DeviceArray, get_device

        return CudaNDArray(DeviceArray(get_device(dev.device_id), host.shape, host.dtype).copyfrom(host), dev)
    return NDArray(host, dev)


def _as_device(dev: Any) -> DLDevice:
    if dev is None:
        return cpu(0)
    if isinstance(dev, DLDevice):
        return dev
    if isinstance(dev, str):
        return device(dev)
    raise NDArrayError(f"expected a device (vdla.cpu(), vdla.ext_dev() ...), got {type(dev).__name__}")


def array(arr: Any, device: Any = None) -> NDArray:
    """An NDArray holding a copy of ``arr`` (numpy array, NDArray or nested list) on ``device`` (default cpu(0))."""
    src = arr.numpy() if is_array_like(arr) else np.array(arr)
    if src.dtype == object:
        raise NDArrayError(f"nd.array: cannot make an array of {type(arr).__name__} (dtype object)")
    return _on_device(np.ascontiguousarray(src).copy(), _as_device(device))


def empty(shape: int | Sequence[int], dtype: str = "float32", device: Any = None) -> NDArray:
    """An array of ``shape`` and ``dtype`` (zero-filled here: TVM leaves it uninitialised)."""
    shp = (shape,) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shp):
        raise NDArrayError(f"nd.empty: negative size in shape {shp}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise NDArrayError(f"nd.empty: unknown dtype {dtype!r}") from None
    return _on_device(np.zeros(shp, dt), _as_device(device))


def is_array_like(a: Any) -> bool:
    """An NDArray or a duck-typed array from another runtime (has ``.numpy()``), not a numpy array."""
    return not isinstance(a, np.ndarray) and callable(getattr(a, "numpy", None))


def host_view(a: Any) -> tuple[Any, Callable[[], None] | None]:
    """The host numpy array a kernel computes on for argument ``a``, and how to write it back.

    A numpy array is itself (no write-back); an :class:`NDArray` gives its storage (the
    kernel writes it in place; one on a GPU gives a host copy, written back); any other object with ``.numpy()`` gives a contiguous
    copy, written back with its ``copyfrom``. Other values (scalars) pass through."""
    if isinstance(a, NDArray):
        return a._host_view()
    if is_array_like(a):
        host = np.ascontiguousarray(a.numpy())
        if not callable(getattr(a, "copyfrom", None)):
            return host, None
        return host, lambda: a.copyfrom(host)
    return a, None
