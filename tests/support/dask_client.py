"""A real Dask LocalCluster with 2 worker processes, one per test module that asks for it: the
`dask_client` fixture of the folders whose tests measure or sweep on workers (tests/cli,
tests/explore), imported by their conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def dask_client():  # type: ignore[no-untyped-def]
    import dask

    from vdla import cluster

    # one retry: a test that kills a worker on purpose should not wait for three
    dask.config.set({"distributed.scheduler.allowed-failures": 1})
    shared = "local:2" in cluster._CLIENTS  # another folder's session fixture made it: leave it open
    client = cluster.get_client(n_workers=2)
    yield client
    if not shared:
        cluster.close_clients("local:2")
