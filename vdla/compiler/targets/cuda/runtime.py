"""The CUDA driver access the cuda target launches through; it lives in :mod:`vdla.runtime.cuda_driver`
(the runtime owns every device, and ``vdla.cuda(0)`` needs it without the compiler), and is
re-exported here so ``vdla.compiler.targets.cuda.runtime`` keeps working."""

from ....runtime.cuda_driver import (  # noqa: F401
    CTYPES,
    CudaDevice,
    CudaError,
    DeviceArray,
    NoCudaDevice,
    __all__,  # noqa: F401
    device_count,
    empty,
    get_device,
    to_device,
)
