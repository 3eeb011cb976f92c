"""The runtime: devices, DRAM buffers, and the command-stream builder that writes programs.

A hardware engineer writes programs by hand with `CommandStream` (VTA runtime level:
2D loads/stores, uop kernels, dependency push/pop, finish) and runs them on a
`Device`; the compiler produces the same programs (`Program`).

Modules: :mod:`.device` (Device and the backend registry), :mod:`.dram` (buffers and the
allocator), :mod:`.kernel` (micro-op kernels), :mod:`.stream` (CommandStream),
:mod:`.program` (Program and its file format), :mod:`.container` (the one binary file
container), :mod:`.ndarray` (TVM-style devices and NDArrays: ``vdla.nd.array``; the
function ``vdla.device`` is exported by ``vdla``, since ``runtime.device`` is the module),
:mod:`.module` (TVM's Module methods: time_evaluator, export_library, load_module), :mod:`.cuda_driver`
(a GPU through the CUDA driver API: ``vdla.cuda(0)`` arrays, the cuda target's launches). The device backends are in :mod:`.backends`, loaded by name when a Device
first uses them, so importing the runtime loads no RTL.
"""

from ..isa import AluOp, Mem, Stage
from .device import BACKENDS, Device, DeviceError, register_backend
from .dram import Allocator, Buffer, BufferError_, OutOfMemoryError
from .kernel import KernelError, Loop, UopKernel
from .module import BenchmarkResult, ModuleLoadError, enabled, load_module, register_loader
from .ndarray import DLDevice, NDArray, cpu, cuda, ext_dev
from .program import FORMAT_VERSION, Program, ProgramFileError
from .stream import CommandStream, StreamError

__all__ = [
    "Device", "DeviceError", "BACKENDS", "register_backend", "Buffer", "Allocator", "OutOfMemoryError",
    "BufferError_", "UopKernel", "Loop", "KernelError", "CommandStream", "StreamError", "Program",
    "ProgramFileError", "FORMAT_VERSION", "Mem", "Stage", "AluOp",
    "NDArray", "DLDevice", "cpu", "cuda", "ext_dev", "load_module", "register_loader", "ModuleLoadError",
    "BenchmarkResult", "enabled",
]
