"""Genetic search (AutoTVM's ``GATuner``): a population of points as genes (one choice index per
knob); the fittest ``elite_num`` survive, parents are drawn in proportion to their score,
children take each knob from either parent and mutate each knob with ``mutation_prob``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..space import ConfigEntity
from .tuner import Tuner

__all__ = ["GATuner"]


class GATuner(Tuner):
    def __init__(self, task: Any, pop_size: int = 16, elite_num: int = 3, mutation_prob: float = 0.1,
                 seed: int | None = None) -> None:
        super().__init__(task, seed)
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.dims = self.space.dims()
        self.scores: dict[int, float] = {}
        self.queue: list[int] = []
        self.generation = [self._random_unvisited_gene() for _ in range(self.pop_size)]
        self.queue = [self._index(g) for g in self.generation if g is not None]

    def _gene(self, index: int) -> list[int]:
        g = []
        for d in self.dims:
            g.append(index % d)
            index //= d
        return g

    def _index(self, gene: list[int]) -> int:
        idx, mul = 0, 1
        for v, d in zip(gene, self.dims):
            idx += v * mul
            mul *= d
        return idx

    def _random_unvisited_gene(self) -> list[int] | None:
        i = self._random_unvisited()
        return None if i is None else self._gene(i)

    def _breed(self) -> None:
        scored = sorted(self.scores.items(), key=lambda kv: -kv[1])
        if not scored:
            return
        elites = [self._gene(i) for i, _ in scored[: self.elite_num]]
        pool = [self._gene(i) for i, _ in scored[: max(self.pop_size, 2)]]
        w = np.array([s for _, s in scored[: len(pool)]], float) + 1e-9
        w = w / w.sum()
        children: list[int] = []
        tries = 0
        while len(children) < self.pop_size - len(elites) and tries < 50 * self.pop_size:
            tries += 1
            a, b = (pool[k] for k in self.rng.choice(len(pool), 2, p=w))
            cut = int(self.rng.integers(len(self.dims) + 1))
            child = a[:cut] + b[cut:]
            for k, d in enumerate(self.dims):
                if self.rng.random() < self.mutation_prob:
                    child[k] = int(self.rng.integers(d))
            idx = self._index(child)
            if idx not in self.visited and idx not in children:
                children.append(idx)
        while len(children) < self.pop_size - len(elites):  # converged: fresh blood
            i = self._random_unvisited()
            if i is None or i in children:
                break
            children.append(i)
        self.queue += children

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out: list[ConfigEntity] = []
        while len(out) < batch_size:
            if not self.queue:
                self._breed()
                if not self.queue:
                    i = self._random_unvisited()
                    if i is None:
                        break
                    self.queue.append(i)
            i = self.queue.pop(0)
            if i in self.visited:
                continue
            self.visited.add(i)
            out.append(self.space.get(i))
        return out

    def update(self, inputs: list[Any], results: list[Any]) -> None:
        for idx, sc in self.history[-len(inputs):]:
            self.scores[idx] = sc
