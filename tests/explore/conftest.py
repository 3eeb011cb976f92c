"""A real Dask LocalCluster with 2 worker processes for the sweep tests (tests/support/dask_client.py)."""

from support.dask_client import dask_client  # noqa: F401  (the fixture)
