"""Waveform files for the RTL devices: which format a request asks for, and whether it can be had.

    Device("verilator", waves="run.vcd")    # or .fst where Verilator's FST writer builds
    Device("pysim", waves="run.vcd")        # Amaranth's simulator writes VCD only
    vdla run prog.vdla --device verilator --waves run.vcd

The format follows the file's suffix (``.vcd`` or ``.fst``); a format the device cannot
write is an error that says why and what to ask for instead, never a silent switch to
another format. Verilator writes FST only when its FST writer compiles, which needs the
zlib and lz4 headers (`vdla.simulator.rtl.verilator.wave_format` probes the C++
compiler); Amaranth's simulator writes VCD only. A trace is complete once the device is
closed (``dev.close()``, or leaving ``with Device(...) as dev:``).

``VDLA_WAVES=FILE`` in the environment (``=1``: a file in the build folder) still asks
``Device("verilator")`` for a trace when none is given in code.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SimulatorError

__all__ = ["WavesError", "FORMATS", "resolve"]

FORMATS = ("vcd", "fst")


class WavesError(SimulatorError):
    """A waveform file the device cannot write (unknown suffix, or a format it does not support)."""


def resolve(path: str | Path, device: str, supported: dict[str, str]) -> Path:
    """The absolute path of the trace `path` for `device`, checked against `supported`
    (format -> "" when available, else the reason it is not)."""
    p = Path(path).expanduser().resolve()
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise WavesError(f"waves file {str(path)!r}: name it .vcd or .fst (the suffix picks the format)")
    why = supported.get(fmt, f"{device} does not write {fmt.upper()}")
    if why:
        other = [f for f, reason in supported.items() if not reason]
        hint = f"; ask for {p.with_suffix('.' + other[0]).name} instead" if other else ""
        raise WavesError(f"{device} cannot write {p.name}: {why}{hint}")
    p.parent.mkdir(parents=True, exist_ok=True)
    return p
