"""The runtime of parallel loops on the host: ``vdla_parallel_launch`` and the thread count.

JIT-compiled kernels call ``vdla_parallel_launch(task, closure, n)`` for each parallel loop
(:mod:`.codegen` outlines the loop into ``task``). :func:`launch_address` gives the address
:mod:`.jit` registers under that name, from one of two back ends:

* ``native`` (the default): ``threadpool.c``, persistent pthread workers handed work through
  atomics (see that file). It is compiled at first use with the system C compiler (``$CC``,
  Python's ``sysconfig`` CC, ``cc``/``gcc``/``clang``, else a C++ compiler), once per source
  version: the library is cached as ``$XDG_CACHE_HOME/vdla/threadpool-<hash>.so`` (default
  ``~/.cache``), written to a temporary file and renamed so concurrent processes never load
  a partial one;
* ``python``: a ctypes callback submitting to a ``concurrent.futures`` pool (17-50 us per
  region). Used when no compiler is found or the build fails (one warning says why), or
  when ``VDLA_NATIVE_POOL=0``.

The thread count is :func:`set_num_threads` / :func:`get_num_threads` (default
``VDLA_NUM_THREADS`` or every core this process may run on, :func:`available_cores`). A count
beyond those cores, from either, is used as asked (oversubscription is the user's call) and
said once per process and count: one :class:`ThreadCountWarning` (:func:`check_cores`; a
child process started after it, such as a Dask worker of ``vdla tune``, does not repeat it).
A region from inside another one runs serially in its caller on both back ends.

:func:`workspace_addresses` gives the allocator of the kernels' large intermediate buffers:
the native pool's, which keeps freed buffers for the next call of the same size (see
``threadpool.c``), else ``aligned_alloc``/``free``.
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["set_num_threads", "get_num_threads", "launch_address", "backend", "native_stats", "configure",
           "cache_dir", "build_library", "available_cores", "check_cores", "ThreadCountWarning", "MAX_THREADS",
           "SOURCE", "workspace_addresses", "workspace_cached_bytes"]

#: the C source of the native pool
SOURCE = Path(__file__).with_name("threadpool.c")
#: the most threads a region uses (the native pool's MAX_THREADS; checked when it is loaded)
MAX_THREADS = 4096

_lock = threading.Lock()
_num_threads = 1
_native: ctypes.CDLL | None = None
_launch_addr: int | None = None


class ThreadCountWarning(UserWarning):
    """More threads asked for than this process has cores (the count is still used)."""


#: the counts already warned about, in this process and (through the environment) its parent
_WARNED_ENV = "_VDLA_THREADS_WARNED"
_warned: set[int] = set()
#: where the thread count came from while no one has set it: "VDLA_NUM_THREADS=N", or "" (every core)
_env_source = ""


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS has one, else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def check_cores(n: int, source: str = "") -> bool:
    """Warn (one :class:`ThreadCountWarning`, once per process and count) when ``n`` threads are more
    than :func:`available_cores`; ``source`` says who asks (``"--threads 64"``). True when beyond."""
    cores = available_cores()
    if n <= cores:
        return False
    told = {int(x) for x in os.environ.get(_WARNED_ENV, "").split(",") if x.strip().isdigit()}
    if n not in _warned and n not in told:
        _warned.add(n)
        os.environ[_WARNED_ENV] = ",".join(str(k) for k in sorted(_warned | told))
        who = source or f"{n} threads"
        warnings.warn(f"{who} asks for {n} threads but this process has {cores} core{'s' * (cores != 1)}: parallel "
                      f"loops use {n} threads anyway (oversubscribed; usually slower than {cores})",
                      ThreadCountWarning, stacklevel=3)
    return True


def _env_threads() -> int:
    global _env_source
    raw = os.environ.get("VDLA_NUM_THREADS", "")
    cores = available_cores()
    try:
        n = int(raw) if raw.strip() else cores
    except ValueError:
        warnings.warn(f"VDLA_NUM_THREADS={raw!r} is not an integer: using every core", RuntimeWarning, stacklevel=2)
        n = cores
    n = max(1, min(MAX_THREADS, n))
    _env_source = f"VDLA_NUM_THREADS={raw.strip()}" if n > cores else ""
    return n


def set_num_threads(n: int) -> None:
    """Number of threads parallel loops use (default: VDLA_NUM_THREADS or all cores). More than
    :func:`available_cores` is used as asked, with one :class:`ThreadCountWarning` per count."""
    global _num_threads, _env_source
    try:
        k = operator.index(n)  # ints and numpy integers, not floats or strings
    except TypeError:
        k = 0
    if isinstance(n, bool) or not 1 <= k <= MAX_THREADS:
        raise ValueError(f"number of threads must be an integer from 1 to {MAX_THREADS}, got {n!r}")
    check_cores(k, f"set_num_threads({k})")
    _num_threads = n = k
    _env_source = ""
    if _native is not None:
        _native.vdla_pool_set_num_threads(n)


def get_num_threads() -> int:
    return _num_threads


_num_threads = _env_threads()


# ---------------------------------------------------------------------------- building the native pool


def cache_dir() -> Path:
    """Where the compiled pool is kept: ``$XDG_CACHE_HOME/vdla`` (default ``~/.cache/vdla``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vdla"


def _library_name() -> str:
    """The library's file name: a hash of the source and of the platform it is built for."""
    h = hashlib.sha256(SOURCE.read_bytes())
    h.update(f"\0{sys.platform}\0{platform.machine()}".encode())
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    return f"threadpool-{h.hexdigest()[:16]}{suffix}"


def _compilers() -> list[tuple[list[str], bool]]:
    """Candidate compiler commands, in order, as (argv, is C++): those found on PATH."""
    cands: list[tuple[str, bool]] = []
    if os.environ.get("CC"):
        cands.append((os.environ["CC"], False))
    if sysconfig.get_config_var("CC"):
        cands.append((str(sysconfig.get_config_var("CC")), False))
    cands += [("cc", False), ("gcc", False), ("clang", False)]
    if os.environ.get("CXX"):
        cands.append((os.environ["CXX"], True))
    cands += [("c++", True), ("g++", True), ("clang++", True)]
    out: list[tuple[list[str], bool]] = []
    seen: set[str] = set()
    for cmd, cxx in cands:
        argv = shlex.split(cmd)
        exe = shutil.which(argv[0]) if argv else None
        if exe is None or exe in seen:
            continue
        seen.add(exe)
        out.append(([exe, *argv[1:]], cxx))
    return out


def build_library(out: Path, compilers: list[tuple[list[str], bool]] | None = None) -> str | None:
    """Compile :data:`SOURCE` into the shared library ``out``; None on success, else why not.

    Each candidate compiler is tried in turn; the library is written next to ``out`` under a
    temporary name and renamed, so a process never sees a partial file."""
    cands = _compilers() if compilers is None else compilers
    if not cands:
        return "no C or C++ compiler found (tried $CC, Python's CC, cc, gcc, clang, $CXX, c++, g++, clang++)"
    errors = []
    for argv, cxx in cands:
        fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
        os.close(fd)
        cmd = [*argv, *(["-x", "c++"] if cxx else []), "-O2", "-fPIC", "-shared", "-pthread", str(SOURCE), "-o", tmp]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if res.returncode == 0:
                os.replace(tmp, out)
                return None
            errors.append(f"{shlex.join(cmd)} exited with {res.returncode}: {res.stderr.strip()[-400:]}")
        except (OSError, subprocess.TimeoutExpired) as e:
            errors.append(f"{shlex.join(cmd)}: {e}")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return "; ".join(errors)


def _load_native() -> tuple[ctypes.CDLL | None, str]:
    """The native pool (building it if needed), or None and why not."""
    name = _library_name()
    where = cache_dir()
    try:
        where.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=where, prefix=".probe-")  # noqa: SIM115 - is it writable?
        probe.close()
    except OSError:
        where = Path(tempfile.mkdtemp(prefix="vdla-threadpool-"))
    path = where / name
    why = ""
    for attempt in range(2):
        if not path.exists() or attempt:
            err = build_library(path)
            if err is not None:
                return None, f"building the native thread pool failed: {err}"
        try:
            lib = ctypes.CDLL(str(path))
            if lib.vdla_pool_max_threads() != MAX_THREADS:
                raise OSError(f"MAX_THREADS is {lib.vdla_pool_max_threads()}, not {MAX_THREADS}")
            return lib, ""
        except (OSError, AttributeError) as e:  # a damaged file in the cache: build it again once
            why = f"loading {path} failed: {e}"
    return None, why


def _setup(lib: ctypes.CDLL) -> None:
    lib.vdla_pool_set_num_threads.argtypes = [ctypes.c_int]
    lib.vdla_pool_set_chunks_per_thread.argtypes = [ctypes.c_int]
    lib.vdla_pool_set_spin_us.argtypes = [ctypes.c_int]
    lib.vdla_pool_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    lib.vdla_pool_settings.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    lib.vdla_workspace_cached_bytes.restype = ctypes.c_int64
    lib.vdla_pool_set_num_threads(_num_threads)
    for var, setter in (("VDLA_POOL_CHUNKS", lib.vdla_pool_set_chunks_per_thread),
                        ("VDLA_POOL_SPIN_US", lib.vdla_pool_set_spin_us)):
        raw = os.environ.get(var, "").strip()
        if raw:
            try:
                setter(int(raw))
            except ValueError:
                warnings.warn(f"{var}={raw!r} is not an integer: ignored", RuntimeWarning, stacklevel=3)


def workspace_addresses() -> tuple[int, int]:
    """The addresses of ``vdla_workspace_alloc(align, n)`` and ``vdla_workspace_free(p)``: the
    native pool's caching allocator, or libc's ``aligned_alloc`` and ``free`` (the same
    signatures) when the Python pool is used."""
    launch_address()  # loads the native pool, if it can be
    if _native is not None:
        return (int(ctypes.cast(_native.vdla_workspace_alloc, ctypes.c_void_p).value or 0),
                int(ctypes.cast(_native.vdla_workspace_free, ctypes.c_void_p).value or 0))
    libc = ctypes.CDLL(None)
    return (int(ctypes.cast(libc.aligned_alloc, ctypes.c_void_p).value or 0),
            int(ctypes.cast(libc.free, ctypes.c_void_p).value or 0))


def workspace_cached_bytes() -> int:
    """Bytes of freed kernel workspaces kept for reuse (0 without the native pool)."""
    launch_address()
    return int(_native.vdla_workspace_cached_bytes()) if _native is not None else 0


def launch_address() -> int:
    """The address of ``vdla_parallel_launch`` (the native pool, or the Python fallback)."""
    global _native, _launch_addr
    with _lock:
        if _launch_addr is None:
            if _env_source:  # VDLA_NUM_THREADS beyond the cores: said when the first kernel needs the pool
                check_cores(_num_threads, _env_source)
            if os.environ.get("VDLA_NATIVE_POOL", "1").strip() != "0":
                lib, why = _load_native()
                if lib is None:
                    warnings.warn(f"{why}; parallel loops use the Python thread pool instead (about 20 us more "
                                  "per parallel region)", RuntimeWarning, stacklevel=2)
                else:
                    _setup(lib)
                    _native = lib
            if _native is not None:
                _launch_addr = int(ctypes.cast(_native.vdla_parallel_launch, ctypes.c_void_p).value or 0)
            else:
                _launch_addr = int(ctypes.cast(_launch_c, ctypes.c_void_p).value or 0)
        return _launch_addr


def backend() -> str | None:
    """``"native"`` or ``"python"``: the pool parallel loops use (None before the first kernel)."""
    if _launch_addr is None:
        return None
    return "native" if _native is not None else "python"


def native_stats() -> dict[str, int]:
    """The native pool's counters in this process: workers started, regions run in parallel,
    nested regions and regions that found the pool busy (both run serially in their caller)."""
    if _native is None:
        raise RuntimeError(f"the native thread pool is not loaded (backend() is {backend()!r})")
    buf = (ctypes.c_int64 * 4)()
    _native.vdla_pool_stats(buf)
    return dict(zip(("workers", "parallel", "nested", "busy"), map(int, buf), strict=True))


def configure(chunks_per_thread: int | None = None, spin_us: int | None = None) -> dict[str, int]:
    """Native pool settings: chunks a region is cut into per thread (more balance threads that
    run at uneven speed; default 4, ``VDLA_POOL_CHUNKS``), and how long idle threads spin
    before they sleep (default 100 us, ``VDLA_POOL_SPIN_US``). Returns the previous settings."""
    if _native is None:
        raise RuntimeError(f"the native thread pool is not loaded (backend() is {backend()!r})")
    for name, v, lo in (("chunks_per_thread", chunks_per_thread, 1), ("spin_us", spin_us, 0)):
        if v is not None and (not isinstance(v, int) or v < lo):
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    buf = (ctypes.c_int64 * 2)()
    _native.vdla_pool_settings(buf)
    if chunks_per_thread is not None:
        _native.vdla_pool_set_chunks_per_thread(chunks_per_thread)
    if spin_us is not None:
        _native.vdla_pool_set_spin_us(spin_us)
    return {"chunks_per_thread": int(buf[0]), "spin_us": int(buf[1])}


# ---------------------------------------------------------------------------- the Python fallback

_TASK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_tasks: dict[int, object] = {}
_local = threading.local()


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    if _pool is None or _pool_size < n:
        _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="vdla-par")
        _pool_size = n
    return _pool


def _forget_pool_in_child() -> None:
    """A forked child has none of the executor's threads: work queued to it would never run."""
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _run_task(fn: object, closure: int, t: int, k: int) -> None:
    _local.inside = True
    try:
        fn(closure, t, k)  # type: ignore[operator]
    finally:
        _local.inside = False


def _launch(task: int, closure: int, n: int) -> None:
    fn = _tasks.get(task)
    if fn is None:
        fn = _tasks[task] = _TASK(task)
    k = max(1, min(_num_threads, int(n)))
    if k == 1 or getattr(_local, "inside", False):
        fn(closure, 0, 1)  # type: ignore[operator]
        return
    pool = _get_pool(k - 1)
    futs = [pool.submit(_run_task, fn, closure, t, k) for t in range(1, k)]
    _run_task(fn, closure, 0, k)
    for f in futs:
        f.result()


_launch_c = _LAUNCH(_launch)
