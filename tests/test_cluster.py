"""vdla.cluster: a scheduler address with nobody listening is a clear error within the timeout;
a scheduler and a worker started as separate processes (``dask scheduler`` / ``dask worker``
from this interpreter's environment, on 127.0.0.1) serve tuning measurements."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.autotvm import VDLA_DENSE

from vdla import cluster
from vdla.compiler import autotvm
from vdla.compiler.autotvm.measure import MeasureInput, measure_batch

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nobody_listening_is_a_clear_error_within_the_timeout() -> None:
    addr = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    with pytest.raises(cluster.ClusterError, match=f"no Dask scheduler answers at '{addr}' within 2 s"):
        cluster.get_client(addr, timeout=2)
    assert time.monotonic() - t0 < 20


def _dask(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "distributed.cli." + args[0], *args[1:]], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def test_separate_scheduler_and_worker_processes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs = [_dask("dask_scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0")]
    try:
        procs.append(_dask("dask_worker", addr, "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1",
                           "--dashboard-address", ":0", "--death-timeout", "60"))
        monkeypatch.setenv(cluster.ENV, addr)
        deadline = time.monotonic() + 60
        while True:
            try:
                client = cluster.get_client(timeout=5)
                client.wait_for_workers(1, timeout=60)
                break
            except cluster.ClusterError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        task = autotvm.task.create(*VDLA_DENSE, "vdla")
        fb = task.fallback()
        res = measure_batch([MeasureInput(task, task.config_space.get(fb.index))], autotvm.measure_option())
        assert res[0].ok and res[0].costs[0] > 0, res[0].error_msg
        assert addr in str(client.scheduler.address)
    finally:
        cluster.close_clients(addr)
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)


def test_script_without_main_guard_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Dask's worker processes import the main script: unguarded, each starts a cluster of its own."""
    script = tmp_path / "unguarded.py"
    script.write_text("from vdla import cluster\ncluster.get_client(n_workers=1)\nprint('started')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode != 0 and "started" not in run.stdout
    assert "ClusterError: the local Dask cluster's worker processes did not start" in run.stderr
    assert 'if __name__ == "__main__":' in run.stderr
