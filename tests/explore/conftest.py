"""A real Dask LocalCluster with 2 worker processes for the sweep tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def dask_client():  # type: ignore[no-untyped-def]
    from vdla import cluster

    client = cluster.get_client(n_workers=2)
    yield client
    cluster.close_clients()
