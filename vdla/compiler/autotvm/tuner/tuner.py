"""The tuner loop (AutoTVM's ``Tuner.tune``): pick a batch, measure it, learn, call back.

A point's score is ``task.flop / cost``: FLOP/s on llvm (cost in seconds), FLOP per cycle on
vdla (cost in cycles); failed points score 0. Subclasses choose points (:meth:`next_batch`)
and learn from results (:meth:`update`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..measure import MeasureInput, MeasureOption, MeasureResult, measure_batch
from ..space import ConfigEntity
from ..task import Task

__all__ = ["Tuner", "score"]

Callback = Callable[["Tuner", list[MeasureInput], list[MeasureResult]], None]


def score(task: Task, res: MeasureResult) -> float:
    """FLOP per second (llvm) or per cycle (vdla); 0 for a failed point."""
    if not res.ok or not res.costs:
        return 0.0
    return (task.flop or 1.0) / max(res.cost, 1e-12)


class Tuner:
    """Base class: ``tune(n_trial, measure_option, callbacks=...)``."""

    def __init__(self, task: Task, seed: int | None = None) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"a tuner takes a Task (autotvm.task.create), got {type(task).__name__}")
        self.task = task
        self.space = task.config_space
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self.best_config: ConfigEntity | None = None
        self.best_flops = 0.0
        self.best_result: MeasureResult | None = None
        self.trials = 0
        self.errors = 0
        self.history: list[tuple[int, float]] = []  # (index, score) in measurement order
        self.started = time.perf_counter()

    # -- to be provided by a search strategy
    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        raise NotImplementedError

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from measured points (default: nothing)."""

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def load_history(self, records: Sequence[tuple[MeasureInput, MeasureResult]]) -> None:
        """Points measured before (a log): those of this task count as visited and as data."""
        mine = [(i, r) for i, r in records if i.task.key() == self.task.key()]
        for i, r in mine:
            self._account(i, r)
        if mine:
            self.update([i for i, _ in mine], [r for _, r in mine])

    # -- the loop
    def _random_unvisited(self) -> int | None:
        n = len(self.space)
        if len(self.visited) >= n:
            return None
        if len(self.visited) > n // 2:  # dense: choose among what is left
            left = [i for i in range(n) if i not in self.visited]
            return int(self.rng.choice(left))
        while True:
            i = int(self.rng.integers(n))
            if i not in self.visited:
                return i

    def _account(self, inp: MeasureInput, res: MeasureResult) -> float:
        sc = score(self.task, res)
        idx = inp.config.index if inp.config.index is not None else -1
        self.visited.add(idx)
        self.trials += 1
        self.errors += int(not res.ok)
        self.history.append((idx, sc))
        if sc > self.best_flops:
            self.best_flops, self.best_config, self.best_result = sc, inp.config, res
        return sc

    def tune(self, n_trial: int, measure_option: MeasureOption | None = None, early_stopping: int | None = None,
             callbacks: Sequence[Callback] = ()) -> None:
        """Measure up to ``n_trial`` points (fewer when the space runs out or ``early_stopping``
        trials pass without a better one)."""
        from ..measure import measure_option as default_option

        if not isinstance(n_trial, int | np.integer) or isinstance(n_trial, bool) or n_trial <= 0:
            raise ValueError(f"n_trial must be a positive number of trials, got {n_trial!r}")
        option = measure_option or default_option()
        batch = option.n_parallel or self._default_batch(option)
        done, best_at = 0, 0
        while done < n_trial and self.has_next():
            configs = self.next_batch(min(batch, n_trial - done))
            if not configs:
                break
            inputs = [MeasureInput(self.task, c) for c in configs]
            results = measure_batch(inputs, option)
            for inp, res in zip(inputs, results):
                before = self.best_flops
                self._account(inp, res)
                if self.best_flops > before:
                    best_at = done
                done += 1
            self.update(inputs, results)
            for cb in callbacks:
                cb(self, inputs, results)
            if early_stopping is not None and done - best_at >= early_stopping:
                break

    def _default_batch(self, option: MeasureOption) -> int:
        from .... import cluster

        try:
            client = option.client or cluster.get_client(option.scheduler)
            return max(2, 2 * len(client.scheduler_info().get("workers", {})))
        except Exception:  # noqa: BLE001 - measure_batch reports the cluster problem
            return 8
