"""Black-box searches: :class:`RandomTuner` (uniform, without repetition) and
:class:`GridSearchTuner` (every index in order)."""

from __future__ import annotations

from ..space import ConfigEntity
from .tuner import Tuner

__all__ = ["RandomTuner", "GridSearchTuner"]


class RandomTuner(Tuner):
    """Points drawn uniformly from those not measured yet."""

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out: list[ConfigEntity] = []
        taken: set[int] = set()
        while len(out) < batch_size:
            i = self._random_unvisited()
            if i is None:
                break
            self.visited.add(i)
            if i not in taken:
                taken.add(i)
                out.append(self.space.get(i))
        return out


class GridSearchTuner(Tuner):
    """Index 0, 1, 2, ... (the first knob varies fastest)."""

    def __init__(self, task, seed: int | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(task, seed)
        self.counter = 0

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        out = []
        while len(out) < batch_size and self.counter < len(self.space):
            if self.counter not in self.visited:
                out.append(self.space.get(self.counter))
                self.visited.add(self.counter)
            self.counter += 1
        return out

    def has_next(self) -> bool:
        return self.counter < len(self.space)
