"""``vta.testing``: ``simulator`` (statistics and debug flags of the ext_dev runs) and ``run``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import simulator

__all__ = ["simulator", "run"]


def run(run_func: Callable[[Any, Any], Any]) -> Any:
    """``run_func(env, remote)`` with the current environment and a local session (VTA's ``vta.testing.run``)."""
    from ....compiler.targets.vdla.env import get_env
    from ... import rpc

    return run_func(get_env(), rpc.LocalSession())
