"""Storage planning: which buffer each kernel output of a plan is written to, worked out once
per compiled model (liveness-based reuse, as TVM's graph executor plans its storage).

:func:`plan_storage` walks the plan in run order. A kernel step of a planned target takes a
free buffer (the smallest that holds its output, else the largest free one, grown) or a new
one; a ``view`` step shares its input's buffer. After each step, a buffer whose values have
no reader left goes back to the free list, so later steps reuse it. Graph outputs keep their
buffers to the end of the run. Host and VDLA steps make their own arrays and take no part.

The runner allocates the buffers once (GPU memory on the first run on a GPU; host memory for
llvm) and each planned step writes its output into a view of its buffer, so a run allocates
nothing and a model's peak memory is the plan's :attr:`StoragePlan.total_bytes`, not the sum
of every intermediate value (:attr:`StoragePlan.naive_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph
from .plan import Step

__all__ = ["StoragePlan", "plan_storage", "value_nbytes"]


@dataclass
class StoragePlan:
    """``sizes[s]``: bytes of buffer ``s``; ``of[value]``: the buffer a planned value lives in;
    ``overwritten``: values whose buffer a later step of the run reuses (gone by the run's end)."""

    sizes: list[int] = field(default_factory=list)
    of: dict[str, int] = field(default_factory=dict)
    overwritten: set[str] = field(default_factory=set)
    naive_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


def value_nbytes(graph: Graph, value: str) -> int:
    """The bytes of ``value`` (its type's shape and dtype)."""
    t = graph.type_of(value)
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def plan_storage(graph: Graph, steps: Mapping[str, Step], targets: Iterable[str],
                 keep: Iterable[str] = ()) -> StoragePlan:
    """Buffers for the outputs of ``graph``'s steps that run on ``targets`` (see the module doc).
    ``keep``: values whose buffers are never handed on (besides the graph's outputs)."""
    planned = set(targets)
    order = graph.topo_order()
    kept = set(graph.outputs) | set(keep)
    readers: dict[str, int] = {}
    for n in order:
        for v in set(n.inputs):
            readers[v] = readers.get(v, 0) + 1
    plan = StoragePlan()
    live: dict[int, int] = {}  # buffer -> readers left of the values in it (kept buffers never reach 0)
    held: dict[int, list[str]] = {}  # buffer -> the values written into it so far
    free: list[int] = []

    def take(size: int) -> int:
        fits = [s for s in free if plan.sizes[s] >= size]
        if fits:
            s = min(fits, key=lambda b: plan.sizes[b])
        elif free:  # nothing large enough: grow the largest free buffer rather than add one
            s = max(free, key=lambda b: plan.sizes[b])
            plan.sizes[s] = size
        else:
            plan.sizes.append(size)
            return len(plan.sizes) - 1
        free.remove(s)
        return s

    def uses(v: str) -> int:
        return readers.get(v, 0) + (1 << 30 if v in kept else 0)

    for n in order:
        step = steps[n.name]
        s: int | None = None
        if step.target in planned:
            size = value_nbytes(graph, n.name)
            plan.naive_bytes += size
            s = take(size)
            plan.overwritten.update(held.get(s, []))  # what the buffer held before is gone
            held[s] = [n.name]
            live[s] = 0
        elif step.target == "view" and n.inputs and n.inputs[0] in plan.of:
            s = plan.of[n.inputs[0]]
            held[s].append(n.name)
        if s is not None:
            plan.of[n.name] = s
            live[s] += uses(n.name)
        # the step has read its inputs: a buffer with no reader left is free for the steps after
        done: set[int] = set()
        for v in set(n.inputs):
            b = plan.of.get(v)
            if b is not None:
                live[b] -= 1
                if live[b] == 0:
                    done.add(b)
        if s is not None and live[s] == 0:  # an output nobody reads (or a view that ended its input)
            done.add(s)
        free.extend(sorted(done))  # once each: a buffer listed twice would be handed out twice
    return plan
