"""The one place that hands out a Dask ``distributed`` client (tuning measurements, and any
later sweep or fuzz campaign, run as Dask tasks on it).

:func:`get_client` gives, in this order of preference: a client of the scheduler at
``address``; of the one named by the ``VDLA_SCHEDULER`` environment variable
(``tcp://HOST:8786``, a cluster started with ``dask scheduler`` / ``dask worker``, or by
dask-jobqueue on SLURM, dask-kubernetes, ...); else of an in-process ``LocalCluster`` with one
single-threaded worker process per core. Clients are kept per address and closed at exit. A
scheduler address where nobody answers is a :class:`ClusterError` after ``timeout`` seconds;
so is a local cluster whose workers do not start (the usual cause: a script without an
``if __name__ == "__main__":`` guard, which each spawned worker runs again on import).
"""

from __future__ import annotations

import atexit
import logging
import os
from typing import Any

__all__ = ["get_client", "close_clients", "ClusterError", "ENV"]

ENV = "VDLA_SCHEDULER"
_CLIENTS: dict[str, Any] = {}


class ClusterError(RuntimeError):
    """No Dask cluster could be reached or started."""


def get_client(address: str | None = None, n_workers: int | None = None, timeout: float = 10.0) -> Any:
    """A ``distributed.Client`` (see the module doc); ``n_workers`` sizes a new local cluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # pragma: no cover - the tune extra brings it
        raise ClusterError("Dask distributed is not installed: pip install 'vdla[tune]'") from e
    address = address or os.environ.get(ENV) or None
    n_workers = n_workers or os.cpu_count() or 1
    key = address or f"local:{n_workers}"
    client = _CLIENTS.get(key)
    if client is not None and client.status == "running":
        return client
    if address:
        try:
            client = Client(address, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as e:
            raise ClusterError(f"no Dask scheduler answers at {address!r} within {timeout:g} s "
                               f"(start one with `dask scheduler`, then `dask worker {address}`): {e}") from None
    else:
        logging.getLogger("distributed").setLevel(logging.ERROR)  # its INFO lines would bury the progress bar
        try:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        except RuntimeError as e:  # e.g. "Nanny failed to start": a worker process died while starting
            raise ClusterError(
                f"the local Dask cluster's worker processes did not start ({e}). Worker processes begin by "
                "importing the main script: a script that tunes keeps its work under "
                "`if __name__ == \"__main__\":`. Or measure on a running cluster (VDLA_SCHEDULER, "
                "measure_option(scheduler=...)) or in this process "
                "(measure_option(client=distributed.Client(processes=False)))") from None
        client = Client(cluster)
    _CLIENTS[key] = client
    return client


def close_clients(address: str | None = None) -> None:
    """Close every client handed out (and the local clusters behind them), or only ``address``'s."""
    for key, client in list(_CLIENTS.items()):
        if address is not None and key != address:
            continue
        cluster = getattr(client, "cluster", None)
        try:
            client.close()
            if cluster is not None and key.startswith("local:"):
                cluster.close()
        except Exception:  # noqa: BLE001 - shutting down: nothing left to report to
            pass
        _CLIENTS.pop(key, None)


atexit.register(close_clients)
