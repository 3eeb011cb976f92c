"""The runtime: devices, DRAM buffers, and the command-stream builder that writes programs.

A hardware engineer writes programs by hand with `CommandStream` (VTA runtime level:
2D loads/stores, uop kernels, dependency push/pop, finish) and runs them on a
`Device`; the compiler produces the same `Program`s.
"""

from ..isa import AluOp, Mem, Stage
from . import pysim, serial, verilator  # noqa: F401  (importing them registers Device("pysim"), Device("serial:PORT"), Device("verilator"))
from .device import BACKENDS, Device, DeviceError, register_backend
from .dram import Allocator, Buffer, BufferError_, OutOfMemoryError
from .kernel import KernelError, Loop, UopKernel
from .program import FORMAT_VERSION, Program, ProgramFileError
from .stream import CommandStream, StreamError

__all__ = [
    "Device", "DeviceError", "BACKENDS", "register_backend", "Buffer", "Allocator", "OutOfMemoryError",
    "BufferError_", "UopKernel", "Loop", "KernelError", "CommandStream", "StreamError", "Program",
    "ProgramFileError", "FORMAT_VERSION", "Mem", "Stage", "AluOp",
]
