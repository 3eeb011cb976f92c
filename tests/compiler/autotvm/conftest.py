"""A real Dask LocalCluster with 2 worker processes, shared by the autotvm tests that measure."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def dask_client():  # type: ignore[no-untyped-def]
    import dask

    from vdla import cluster

    # one retry: a test that kills a worker on purpose should not wait for three
    dask.config.set({"distributed.scheduler.allowed-failures": 1})
    client = cluster.get_client(n_workers=2)
    yield client
    cluster.close_clients()

