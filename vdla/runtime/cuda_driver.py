"""The CUDA runtime: a GPU through the driver API (``cuda-bindings``, the ``gpu`` extra), loaded lazily.

It belongs to the runtime, below the compiler: ``vdla.cuda(0)`` and ``vdla.nd.array(x, vdla.cuda(0))``
(:mod:`.ndarray`) use it directly, and the compiler's cuda target launches its kernels through it.

:func:`get_device` initialises the driver (``cuInit``) and the device's primary context once;
with no driver or no GPU it raises :class:`NoCudaDevice` ("no CUDA device: ..."), so a
``cuda`` build works anywhere and only running needs the GPU. :class:`CudaDevice` loads PTX
(``cuModuleLoadData``: the driver JIT-compiles it for the GPU present), allocates memory,
copies, launches (``cuLaunchKernel``) and times with CUDA events. :class:`DeviceArray` is
an array in GPU memory (``to_device(x)``, ``.numpy()``). A kernel that faults is reported
with its name and the driver's error; CUDA cannot recover from a fault within the process, so
every later use of that GPU raises an error that says so and names the kernel.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np


class CudaError(RuntimeError):
    """An error from the CUDA driver."""


class NoCudaDevice(CudaError):
    """There is no CUDA driver or no GPU on this machine."""


_lock = threading.Lock()
_devices: dict[int, CudaDevice] = {}


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as err:
        raise NoCudaDevice(
            f"no CUDA device: the cuda-bindings package is not installed ({err}); pip install 'vdla[gpu]'"
        ) from None
    return driver


def _check(res: Any, what: str) -> Any:
    """Unpack a cuda-bindings result tuple ``(err, values...)``; raise CudaError naming ``what``."""
    drv = _driver()
    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        raise CudaError(f"{what}: {name.decode() if name else err} ({text.decode() if text else ''})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def device_count() -> int:
    """Number of CUDA GPUs (0 with no driver)."""
    try:
        drv = _driver()
        if _check_init(drv) is not None:
            return 0
        return int(_check(drv.cuDeviceGetCount(), "cuDeviceGetCount"))
    except (NoCudaDevice, CudaError):
        return 0


def _check_init(drv: Any) -> str | None:
    """None when the driver initialised, else why not."""
    try:
        res = drv.cuInit(0)
    except Exception as err:  # the driver library itself is missing (DynamicLibNotFoundError, OSError)
        return f"{type(err).__name__}: {err}"
    if res[0] != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(res[0])
        return name.decode() if name else str(res[0])
    return None


def get_device(index: int = 0) -> CudaDevice:
    """The CUDA device ``index``; NoCudaDevice when there is none."""
    with _lock:
        dev = _devices.get(index)
        if dev is None:
            drv = _driver()
            why = _check_init(drv)
            if why is not None:
                raise NoCudaDevice(f"no CUDA device: the CUDA driver is not usable here ({why})")
            n = int(_check(drv.cuDeviceGetCount(), "cuDeviceGetCount"))
            if index >= n:
                raise NoCudaDevice(f"no CUDA device {index}: this machine has {n} GPU(s)")
            dev = _devices[index] = CudaDevice(index)
        return dev


class CudaDevice:
    """One GPU: its primary context, loaded modules, memory and launches."""

    def __init__(self, index: int) -> None:
        drv = _driver()
        self.index = index
        self.handle = _check(drv.cuDeviceGet(index), "cuDeviceGet")
        self.context = _check(drv.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.name = _check(drv.cuDeviceGetName(256, self.handle), "cuDeviceGetName").split(b"\0")[0].decode()
        major = _check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle), "attribute")  # fmt: skip
        minor = _check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle), "attribute")  # fmt: skip
        self.arch = f"sm_{major}{minor}"
        self._modules: dict[int, Any] = {}
        self._functions: dict[tuple[int, str], Any] = {}
        #: Why this GPU can no longer be used in this process ("" while it can).
        self.lost = ""

    def __repr__(self) -> str:
        return f"<CudaDevice {self.index}: {self.name} ({self.arch})>"

    def activate(self) -> None:
        if self.lost:
            raise CudaError(self.lost)
        _check(_driver().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    # ------------------------------------------------------------------ modules
    def load(self, key: int, ptx: str) -> Any:
        """Load PTX once per ``key`` (the driver JIT-compiles it for this GPU)."""
        mod = self._modules.get(key)
        if mod is None:
            self.activate()
            data = ptx.encode() + b"\0"
            mod = self._modules[key] = _check(_driver().cuModuleLoadData(data), "cuModuleLoadData (JIT of the PTX)")
        return mod

    def function(self, module: Any, name: str) -> Any:
        """The kernel `name` of a loaded module (looked up once)."""
        key = (id(module), name)  # the module object lives on in self._modules
        func = self._functions.get(key)
        if func is None:
            func = self._functions[key] = _check(_driver().cuModuleGetFunction(module, name.encode()),
                                                 f"cuModuleGetFunction({name})")
        return func

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int) -> int:
        self.activate()
        return int(_check(_driver().cuMemAlloc(max(1, nbytes)), f"cuMemAlloc({nbytes} bytes)"))

    def free(self, ptr: int) -> None:
        _check(_driver().cuMemFree(ptr), "cuMemFree")

    def upload(self, ptr: int, a: np.ndarray) -> None:
        self.activate()  # the context may not be current on this thread
        _check(_driver().cuMemcpyHtoD(ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def download(self, a: np.ndarray, ptr: int) -> None:
        self.activate()
        _check(_driver().cuMemcpyDtoH(a.ctypes.data, ptr, a.nbytes), "cuMemcpyDtoH")

    # ------------------------------------------------------------------ launches
    def launch(self, func: Any, name: str, grid: tuple[int, ...], block: tuple[int, ...],
               values: list[Any], types: list[Any]) -> None:  # fmt: skip
        drv = _driver()
        self.activate()
        res = drv.cuLaunchKernel(func, *grid, *block, 0, 0, (tuple(values), tuple(types)), 0)
        _check(res, f"launching kernel {name!r} (grid {grid}, block {block})")

    def synchronize(self, what: str = "") -> None:
        """Wait for the GPU; a kernel fault is reported naming ``what`` (the kernel).

        A fault (an illegal address, say) is sticky: every later call in this process fails,
        and no reset brings the context back (a primary-context reset and retain answered
        ILLEGAL_ADDRESS on an H200; the driver's rule is that the process must end). So the
        device is marked lost, and each later use raises an error that names the kernel that
        faulted instead of the driver's bare code."""
        try:
            _check(_driver().cuCtxSynchronize(), f"kernel {what!r} failed on {self.name}" if what else "cuCtxSynchronize")
        except CudaError as err:
            self.lost = (f"{self.name} is unusable in this process since {err}; CUDA cannot recover a context "
                         "after a fault: start a new process")  # fmt: skip
            raise

    def time(self, fn: Any, number: int = 10) -> float:
        """Mean seconds of ``fn()`` (which launches work) over ``number`` runs, by CUDA events."""
        drv = _driver()
        self.activate()
        start = _check(drv.cuEventCreate(0), "cuEventCreate")
        stop = _check(drv.cuEventCreate(0), "cuEventCreate")
        try:
            fn()
            self.synchronize("warm-up")
            _check(drv.cuEventRecord(start, 0), "cuEventRecord")
            for _ in range(number):
                fn()
            _check(drv.cuEventRecord(stop, 0), "cuEventRecord")
            _check(drv.cuEventSynchronize(stop), "cuEventSynchronize")
            ms = _check(drv.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
        finally:
            drv.cuEventDestroy(start)
            drv.cuEventDestroy(stop)
        return float(ms) / 1e3 / number


class DeviceArray:
    """An array in GPU memory: ``to_device(x)``, ``empty(shape, dtype)``, ``.numpy()``."""

    def __init__(self, device: CudaDevice, shape: tuple[int, ...], dtype: Any, base: DeviceArray | None = None,
                 offset: int = 0) -> None:
        self.device = device
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.base = base  # a view keeps its owner (and the memory) alive
        # a view starts ``offset`` bytes into its owner's memory
        self.ptr = base.ptr + offset if base is not None else device.alloc(self.nbytes)

    def reshape(self, shape: tuple[int, ...]) -> DeviceArray:
        """The same memory with another shape (no copy)."""
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape, dtype=np.int64)) != int(np.prod(self.shape, dtype=np.int64)):
            raise ValueError(f"cannot reshape a device array of shape {self.shape} to {shape}")
        root = self.base or self
        return DeviceArray(self.device, shape, self.dtype, base=root, offset=self.ptr - root.ptr)

    def view(self, offset: int, shape: tuple[int, ...]) -> DeviceArray:
        """The ``shape`` elements from element ``offset`` on of this array's memory (a contiguous
        block, no copy)."""
        shape = tuple(int(s) for s in shape)
        n, have = int(np.prod(shape, dtype=np.int64)), int(np.prod(self.shape, dtype=np.int64))
        if offset < 0 or offset + n > have:
            raise ValueError(f"view of {n} elements at {offset} outside a device array of {have}")
        root = self.base or self
        return DeviceArray(self.device, shape, self.dtype, base=root,
                           offset=self.ptr - root.ptr + offset * self.dtype.itemsize)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def copyfrom(self, a: np.ndarray | DeviceArray) -> DeviceArray:
        """Copy ``a`` (host memory, or another device array: GPU to GPU) into this array."""
        if isinstance(a, DeviceArray):
            if a.shape != self.shape or a.dtype != self.dtype:
                raise ValueError(f"copyfrom: {a.dtype}{list(a.shape)} does not match the device array's "
                                 f"{self.dtype}{list(self.shape)}")
            self.device.activate()
            _check(_driver().cuMemcpyDtoD(self.ptr, a.ptr, self.nbytes), "cuMemcpyDtoD")
            return self
        a = np.ascontiguousarray(a, dtype=self.dtype)
        if a.shape != self.shape:
            raise ValueError(f"copyfrom: shape {a.shape} does not match the device array's {self.shape}")
        self.device.upload(self.ptr, a)
        return self

    def numpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.device.download(out, self.ptr)
        return out

    asnumpy = numpy

    def __del__(self) -> None:
        try:
            if self.ptr and self.base is None:
                self.device.free(self.ptr)
                self.ptr = 0
        except Exception:  # interpreter shutdown: the context may be gone already
            pass

    def __repr__(self) -> str:
        return f"<DeviceArray {self.shape} {self.dtype} on {self.device.name}>"


class CudaGraph:
    """A fixed sequence of kernel launches captured once as a CUDA graph (the driver's graph API)
    and replayed with one ``cuGraphLaunch`` per run, as torch's reduce-overhead mode does: the
    per-kernel launch cost from Python is paid once, at :meth:`__init__`.

    ``launches`` are ``(function, name, grid, block, values, types)`` as
    :meth:`CudaDevice.launch` takes them; each becomes a kernel node depending on the one before
    (the plan's order). The arrays they point at must stay where they are while the graph lives:
    the caller keeps them (``keep``)."""

    def __init__(self, device: CudaDevice, launches: list[tuple[Any, ...]], keep: Any = None) -> None:
        drv = _driver()
        device.activate()
        self.device, self.names, self._keep = device, [launch[1] for launch in launches], keep
        self.graph = _check(drv.cuGraphCreate(0), "cuGraphCreate")
        self.exec: Any = None
        prev: list[Any] = []
        for func, name, grid, block, values, types in launches:
            p = drv.CUDA_KERNEL_NODE_PARAMS()
            p.func = func
            p.gridDimX, p.gridDimY, p.gridDimZ = (tuple(grid) + (1, 1))[:3]
            p.blockDimX, p.blockDimY, p.blockDimZ = (tuple(block) + (1, 1))[:3]
            p.sharedMemBytes = 0
            p.kernelParams = (tuple(values), tuple(types))  # the node copies the values when it is added
            p.extra = 0
            node = _check(drv.cuGraphAddKernelNode(self.graph, prev, len(prev), p),
                          f"cuGraphAddKernelNode({name}, grid {grid}, block {block})")
            prev = [node]
        self.exec = _check(drv.cuGraphInstantiate(self.graph, 0), "cuGraphInstantiate")

    def __len__(self) -> int:
        return len(self.names)

    def launch(self, sync: bool = True) -> None:
        """Replay every kernel in order (on the default stream); ``sync``: wait, so that a fault is
        reported here (it names the graph's kernels: a graph does not say which one faulted)."""
        self.device.activate()
        _check(_driver().cuGraphLaunch(self.exec, 0), "cuGraphLaunch")
        if sync:
            self.device.synchronize(f"CUDA graph of {len(self.names)} kernels ({', '.join(self.names[:3])}, ...)")

    def __del__(self) -> None:
        try:
            drv = _driver()
            if self.exec is not None:
                drv.cuGraphExecDestroy(self.exec)
            drv.cuGraphDestroy(self.graph)
        except Exception:  # interpreter shutdown: the context may be gone already
            pass


def to_device(a: np.ndarray, index: int = 0) -> DeviceArray:
    """Copy a numpy array to GPU ``index``."""
    a = np.ascontiguousarray(a)
    return DeviceArray(get_device(index), a.shape, a.dtype).copyfrom(a)


def empty(shape: tuple[int, ...], dtype: Any = "float32", index: int = 0) -> DeviceArray:
    return DeviceArray(get_device(index), shape, dtype)


CTYPES = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool,
}  # fmt: skip

__all__ = ["CudaError", "NoCudaDevice", "CudaDevice", "CudaGraph", "DeviceArray", "get_device", "device_count", "to_device", "empty"]
