"""vdla: a hardware/software co-design kit for the VDLA deep-learning accelerator.

VDLA is the decoupled access-execute accelerator of the TVM paper (later VTA). The
package follows the data: `config` (parameters) -> `isa` (the one field table) ->
`hardware` (Amaranth HDL) / `simulator` (the golden model) / `runtime` (devices and
the command-stream builder) -> `compiler`.
"""

from . import _deprecated

_deprecated.install()  # old module paths (vdla.compiler.ir, ...) keep working for one release, with a warning

from .compiler import autotvm, build, lower, te  # noqa: E402  (autotvm: vdla.autotvm, AutoTVM's names)
from .config import Config, ConfigError, preset  # noqa: E402
from .runtime import Device, Program  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "preset", "Device", "Program", "te", "lower", "build", "autotvm", "__version__"]
