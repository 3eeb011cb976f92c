"""Design-space exploration: `vdla sweep` over Config variations (resources x fmax x model cycles).

- `space`: the variations (``--vary NAME=V1,V2``, a JSON/TOML file) and how a point makes a Config;
- `estimate`: the analytic resource and clock estimate of a board build (``--no-synth``), calibrated
  against the committed bitstream reports;
- `sweep`: one point as a Dask task (estimate or synthesis, then the model on the golden cycle
  model), the cache, the driver and its table/JSON;
- `plots`: latency vs LUT/DSP/BRAM with the Pareto front.

It sits above the compiler and the hardware (it imports both); the ``vdla sweep`` command
over it is `vdla.cli.sweep`.
"""

from .estimate import Estimate, calibration, estimate, overflows
from .space import SpaceError, apply, expand, load_space, parse_vary
from .sweep import Options, SweepResult, evaluate, pareto, run_sweep

__all__ = ["Estimate", "estimate", "overflows", "calibration", "SpaceError", "apply", "expand", "load_space",
           "parse_vary", "Options", "SweepResult", "evaluate", "pareto", "run_sweep"]
