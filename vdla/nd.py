"""``vdla.nd``: arrays on devices, as TVM's ``tvm.nd`` (``nd.array(x, dev)``, ``nd.empty``).

The names live in :mod:`vdla.runtime.ndarray`; this module is where TVM programs look for them.
"""

from .runtime.ndarray import NDArray, NDArrayError, array, empty

__all__ = ["NDArray", "NDArrayError", "array", "empty"]
