"""The parallel-loop runtime (vdla.compiler.targets.llvm.threadpool): parallel kernels against numpy
on the native pool (few/as many/more iterations than threads, nested regions, many launches,
several Python threads, a forked child) and on the Python fallback, and the native pool's build."""

from __future__ import annotations

import ctypes
import os
import shlex
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler import build, get_num_threads, set_num_threads, te
from vdla.compiler.targets.llvm import threadpool

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def nthreads() -> Iterator[None]:
    old = get_num_threads()
    yield
    set_num_threads(old)


def _affine(rows: int, cols: int, par_axes: tuple[int, ...] = (0,)) -> object:
    """B = 3 A + 1 over (rows, cols), the axes ``par_axes`` parallel (nested when both)."""
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    for ax in par_axes:
        s[B].parallel(B.op.axis[ax])
    return build(s, [A, B], name=f"affine_{rows}x{cols}_{'_'.join(map(str, par_axes))}")


def _native() -> None:
    _affine(2, 2)  # the first kernel loads the runtime
    if threadpool.backend() != "native":
        pytest.skip(f"the native thread pool is not in use here (backend {threadpool.backend()!r})")


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 7, 1000])
def test_parallel_loop_matches_numpy(nthreads: None, threads: int, rows: int) -> None:
    """Fewer, as many and far more iterations than threads: every row once, none twice."""
    f = _affine(rows, 17)
    set_num_threads(threads)
    a = np.random.default_rng(rows).integers(-99, 99, (rows, 17)).astype(np.float32)  # exact in fp32
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_array_equal(b, a * 3 + 1)


def test_regions_run_on_the_workers(nthreads: None) -> None:
    _native()
    f = _affine(64, 8)
    set_num_threads(2)
    before = threadpool.native_stats()
    a = np.ones((64, 8), np.float32)
    b = np.zeros_like(a)
    f(a, b)
    after = threadpool.native_stats()
    assert after["parallel"] == before["parallel"] + 1
    assert after["workers"] >= 1
    set_num_threads(1)  # one thread: no region goes to the pool
    f(a, b)
    assert threadpool.native_stats()["parallel"] == after["parallel"]


def test_nested_parallel_loops_in_one_kernel(nthreads: None) -> None:
    f = _affine(9, 33, (0, 1))
    set_num_threads(3)
    a = np.random.default_rng(0).standard_normal((9, 33)).astype(np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6, atol=1e-5)


def test_a_region_launched_from_a_task_runs_serially_in_its_thread(nthreads: None) -> None:
    """The runtime's own rule, driven through its C interface: every inner region runs whole
    (one chunk of one) on the thread of the outer chunk that launched it."""
    _native()
    set_num_threads(3)
    task_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    launch = ctypes.CFUNCTYPE(None, task_t, ctypes.c_void_p, ctypes.c_int64)(threadpool.launch_address())
    seen: list[tuple[int, int, int, int]] = []
    lock = threading.Lock()

    @task_t
    def inner(closure: int, j: int, m: int) -> None:
        with lock:
            seen.append((closure, j, m, threading.get_ident()))

    @task_t
    def outer(closure: int, j: int, m: int) -> None:
        chunk = -(-6 // m)
        for i in range(j * chunk, min(6, (j + 1) * chunk)):
            launch(inner, i + 1, 5)
            with lock:
                seen.append((-(i + 1), 0, 0, threading.get_ident()))

    before = threadpool.native_stats()
    launch(outer, None, 6)
    assert sorted(c for c, *_ in seen if c > 0) == [1, 2, 3, 4, 5, 6]
    assert all((j, m) == (0, 1) for c, j, m, _ in seen if c > 0)
    where = {-c: tid for c, _, _, tid in seen if c < 0}
    assert all(tid == where[c] for c, _, _, tid in seen if c > 0)
    assert threadpool.native_stats()["nested"] - before["nested"] == 6


def test_ten_thousand_back_to_back_regions(nthreads: None) -> None:
    """One call launches 10,000 small regions from compiled code; a second loop makes 500 calls."""
    rows = 10_000
    a = te.compute((rows, 3), lambda r, i: (r * 3 + i).astype("int32"), name="A")
    s = te.create_schedule(a.op)
    s[a].parallel(a.op.axis[1])
    f = build(s, [a], name="many_regions")
    set_num_threads(3)
    out = np.zeros((rows, 3), np.int32)
    f(out)
    np.testing.assert_array_equal(out.ravel(), np.arange(rows * 3))
    g = _affine(4, 4)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    y = np.zeros_like(x)
    for k in range(500):
        x[0, 0] = k
        g(x, y)
        assert y[0, 0] == 3 * k + 1
    np.testing.assert_allclose(y, x * 3 + 1)


def test_kernels_from_several_python_threads_at_once(nthreads: None) -> None:
    f = _affine(257, 64)
    set_num_threads(2)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            for _ in range(40):
                a = rng.standard_normal((257, 64)).astype(np.float32)
                b = np.zeros_like(a)
                f(a, b)
                np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6, atol=1e-5)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors[0]
    assert not any(t.is_alive() for t in ts)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_pool_works_in_a_forked_child(nthreads: None) -> None:
    """Workers started before fork() do not exist in the child: it starts its own."""
    f = _affine(100, 16)
    set_num_threads(2)
    a = np.random.default_rng(1).standard_normal((100, 16)).astype(np.float32)
    b = np.zeros_like(a)
    f(a, b)  # the parent's workers are running now
    native = threadpool.backend() == "native"
    pid = os.fork()
    if pid == 0:  # the child: report through the exit status only
        code = 1
        try:
            fresh = not native or threadpool.native_stats()["workers"] == 0
            c = np.zeros_like(a)
            for _ in range(20):
                f(a, c)
            ok = np.allclose(c, a * 3 + 1, rtol=1e-6, atol=1e-5)
            used = not native or threadpool.native_stats()["parallel"] == 20
            code = 0 if (fresh and ok and used) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish its parallel kernels within 60 s (deadlock)")
        time.sleep(0.02)
    assert os.waitstatus_to_exitcode(status) == 0
    f(a, b)  # and the parent's pool still works
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------- other processes

_CHILD = textwrap.dedent("""
    import os, time, warnings, numpy as np
    warnings.simplefilter("always")
    from vdla.compiler import build, set_num_threads, te
    from vdla.compiler.targets.llvm import threadpool
    with warnings.catch_warnings(record=True) as caught:
        A = te.placeholder((50, 8), name="A")
        B = te.compute((50, 8), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
        s = te.create_schedule(B.op)
        s[B].parallel(B.op.axis[0])
        f = build(s, [A, B])
    a = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    for nt in (1, 2, 3, 64):
        set_num_threads(nt)
        b = np.zeros_like(a)
        f(a, b)
        assert np.allclose(b, a * 3 + 1, rtol=1e-6, atol=1e-5), nt
    set_num_threads(3)
    if hasattr(os, "fork"):  # the pool's threads exist in the parent only
        pid = os.fork()
        if pid == 0:
            b = np.zeros_like(a)
            f(a, b)
            os._exit(0 if np.allclose(b, a * 3 + 1, rtol=1e-6, atol=1e-5) else 3)
        deadline = time.monotonic() + 60
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                raise SystemExit("the forked child hung")
            time.sleep(0.02)
        assert os.waitstatus_to_exitcode(status) == 0, "the forked child computed a wrong result"
        print("FORK done")
    print("BACKEND", threadpool.backend())
    for w in caught:
        print("WARNING", w.category.__name__, str(w.message).replace(chr(10), " "))
""")


def _child_env(**env: str) -> dict[str, str]:
    """This environment without the pool's own settings, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VDLA_NATIVE_POOL", "VDLA_POOL_"))}
    return dict(base, PYTHONPATH=str(ROOT), **env)


def _run_child(env: dict[str, str]) -> tuple[str, list[str]]:
    full = _child_env(**env)
    res = subprocess.run([sys.executable, "-c", _CHILD], env=full, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    backend = next(ln.split()[1] for ln in lines if ln.startswith("BACKEND"))
    assert "FORK done" in lines or not hasattr(os, "fork")
    return backend, [ln for ln in lines if ln.startswith("WARNING")]


def test_python_fallback_when_asked(tmp_path: Path) -> None:
    backend, warns = _run_child({"VDLA_NATIVE_POOL": "0", "XDG_CACHE_HOME": str(tmp_path)})
    assert backend == "python"
    assert warns == []
    assert not (tmp_path / "vdla").exists()  # nothing was built


def test_python_fallback_without_a_compiler_warns_once(tmp_path: Path) -> None:
    cc = shlex.split(str(sysconfig.get_config_var("CC") or "cc"))[0]
    if os.path.isabs(cc) and os.path.exists(cc):
        pytest.skip(f"Python's CC is an absolute path ({cc}): an empty PATH does not hide it")
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty), "XDG_CACHE_HOME": str(tmp_path / "cache"), "CC": "", "CXX": ""}
    backend, warns = _run_child(env)
    assert backend == "python"
    assert len(warns) == 1, warns
    assert "no C or C++ compiler found" in warns[0] and "Python thread pool" in warns[0]


def test_concurrent_first_builds_share_one_cached_library(tmp_path: Path) -> None:
    """Two processes building into the same empty cache at once both load a whole library."""
    if not threadpool._compilers():
        pytest.skip("no C compiler here")
    env = _child_env(XDG_CACHE_HOME=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        assert "BACKEND native" in out and "WARNING" not in out
    libs = sorted(p.name for p in (tmp_path / "vdla").iterdir())
    assert libs == [threadpool._library_name()]  # no temporary file left behind
    mtime = (tmp_path / "vdla" / libs[0]).stat().st_mtime_ns
    backend, warns = _run_child({"XDG_CACHE_HOME": str(tmp_path)})
    assert (backend, warns) == ("native", [])
    assert (tmp_path / "vdla" / libs[0]).stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_build_failures_say_why(tmp_path: Path) -> None:
    out = tmp_path / "pool.so"
    assert "no C or C++ compiler found" in (threadpool.build_library(out, compilers=[]) or "")
    why = threadpool.build_library(out, compilers=[(["false"], False)])
    assert why is not None and "exited with 1" in why
    assert list(tmp_path.iterdir()) == []  # the temporary output is removed


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", threadpool.MAX_THREADS + 1])
def test_set_num_threads_rejects_bad_counts(nthreads: None, bad: object) -> None:
    with pytest.raises(ValueError, match="number of threads"):
        set_num_threads(bad)  # type: ignore[arg-type]


def test_set_num_threads_takes_numpy_integers(nthreads: None) -> None:
    set_num_threads(np.int64(3))
    assert get_num_threads() == 3 and type(get_num_threads()) is int


@pytest.mark.parametrize(("kw", "msg"), [({"chunks_per_thread": 0}, "chunks_per_thread must be an integer >= 1"),
                                         ({"spin_us": -1}, "spin_us must be an integer >= 0"),
                                         ({"spin_us": 2.5}, "spin_us must be an integer >= 0")])
def test_configure_rejects_bad_settings(kw: dict[str, object], msg: str) -> None:
    _native()
    with pytest.raises(ValueError, match=msg):
        threadpool.configure(**kw)  # type: ignore[arg-type]


def test_one_static_chunk_per_thread_is_still_correct(nthreads: None) -> None:
    """chunks_per_thread=1: each thread's share is one chunk (claimed dynamically all the same)."""
    _native()
    f = _affine(101, 9)
    set_num_threads(3)
    a = np.arange(101 * 9, dtype=np.float32).reshape(101, 9)
    b = np.zeros_like(a)
    old = threadpool.configure(chunks_per_thread=1)
    try:
        assert threadpool.configure()["chunks_per_thread"] == 1
        f(a, b)
    finally:
        threadpool.configure(**old)
    np.testing.assert_array_equal(b, a * 3 + 1)


def test_native_pool_under_concurrent_nested_and_forked_launches(tmp_path: Path) -> None:
    """threadpool_stress.c: three launcher threads, nested regions, four settings and a fork
    each, every iteration run exactly once (the C source linked directly, no Python in between)."""
    cc = next((argv for argv, cxx in threadpool._compilers() if not cxx), None)
    if cc is None:
        pytest.skip("no C compiler here")
    exe = tmp_path / "stress"
    driver = Path(__file__).with_name("threadpool_stress.c")
    subprocess.run([*cc, "-O2", "-pthread", str(driver), str(threadpool.SOURCE), "-o", str(exe)], check=True,
                   capture_output=True, timeout=120)
    try:
        res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the stress driver did not finish within 120 s (a lost wake-up or a deadlock)")
    assert (res.returncode, res.stdout.strip()) == (0, "ok"), res.stdout + res.stderr
