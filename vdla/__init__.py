"""vdla: a hardware/software co-design kit for the VDLA deep-learning accelerator.

VDLA is the decoupled access-execute accelerator of the TVM paper (later VTA). The
package follows the data: `config` (parameters) -> `isa` (the one field table) ->
`hardware` (Amaranth HDL) / `simulator` (the golden model) / `runtime` (devices and
the command-stream builder) -> `compiler`.
"""

from .compiler import build, lower, te
from .config import Config, ConfigError, preset
from .runtime import Device, Program

__version__ = "0.1.0"
__all__ = ["Config", "ConfigError", "preset", "Device", "Program", "te", "lower", "build", "__version__"]
