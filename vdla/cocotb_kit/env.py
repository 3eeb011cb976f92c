"""What `vdla.cocotb_kit.run_tests` tells the test module it runs: the Config and the memory size.

``$VDLA_SIM_CONFIG``: the Config the core was built for (a JSON file, or a preset name);
``$VDLA_SIM_RAM``: the bytes of memory behind the AXI4 port. `vdla.cocotb_kit.AxiTopDriver`
reads both (its constructor's arguments override them). No cocotb here.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..config import Config, preset

__all__ = ["CONFIG_VAR", "RAM_VAR", "DEFAULT_RAM", "test_config", "test_ram_size"]

CONFIG_VAR, RAM_VAR = "VDLA_SIM_CONFIG", "VDLA_SIM_RAM"
#: Memory behind the AXI4 port when neither the runner nor the caller says (1 MiB).
DEFAULT_RAM = 1 << 20


def test_config() -> Config:
    """The Config of the core under test: ``$VDLA_SIM_CONFIG`` (default: the default preset)."""
    value = os.environ.get(CONFIG_VAR, "default")
    return Config.load(value) if Path(value).suffix == ".json" else preset(value)


def test_ram_size() -> int:
    return int(os.environ.get(RAM_VAR, DEFAULT_RAM))


test_config.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, despite the name
test_ram_size.__test__ = False  # type: ignore[attr-defined]
