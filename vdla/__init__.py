"""vdla: a hardware/software co-design kit for the VDLA deep-learning accelerator.

VDLA is the decoupled access-execute accelerator of the TVM paper (later VTA). The
package follows the data: `config` (parameters) -> `isa` (the one field table) ->
`hardware` (Amaranth HDL) / `simulator` (the golden model) / `runtime` (devices and
the command-stream builder) -> `compiler`.
"""

from . import compat

compat.install()  # TVM's paths (vdla.te, vdla.vta ...) and the old ones (vdla.compiler.ir ..., with a warning)

# TVM's names too (nd, device, tir, target, testing ...), so that TVM programs run with
# `import vdla as tvm`: docs/coming_from_tvm.md maps them, vdla.compat holds them
from .compat import contrib, rpc, testing  # noqa: E402
from .compiler import autotvm, build, lower, te, tir, topi, transform  # noqa: E402  (autotvm: AutoTVM's names)
from .compiler.targets import target  # noqa: E402
from .compiler.tir import op_registry as ir  # noqa: E402  (TVM's tvm.ir: register_op_attr, register_intrin_lowering)
from .config import Config, ConfigError, preset  # noqa: E402
from .runtime import Device, Program  # noqa: E402
from .runtime import ndarray as nd  # noqa: E402  (TVM's tvm.nd)
from .runtime.ndarray import cpu, cuda, device, ext_dev  # noqa: E402
from .runtime.packed import get_global_func, register_func  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "preset", "Device", "Program", "te", "lower", "build", "__version__",
           "contrib", "nd", "rpc", "testing", "topi", "transform", "tir", "target", "device", "cpu", "cuda", "ext_dev",
           "register_func", "get_global_func", "autotvm", "ir"]
