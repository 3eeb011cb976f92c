"""A host plan as one native call: every step an llvm kernel or a view, run without Python between them.

:meth:`.run.CompiledModel.run` calls a model whose steps are all llvm kernels and views this
way (as it replays a whole-GPU plan as a CUDA graph): :func:`build` lays the plan's values out
in a table of pointers (:mod:`...targets.llvm.sequence`): each constant (contiguous, once), each
planned buffer (:mod:`.memory`, once), each input and output (written before every run), and a
view step's slot as its input's pointer plus the view's byte offset. The compiled sequence then
calls each kernel in plan order (one op per step). A run costs one ``ctypes`` call and the input
checks instead of a Python round per step; a timed run reads the clock between the steps.

A plan it cannot take (a kernel with scalar or symbolic-size arguments, a step on another
target, an output that is a constant or an input) gets the reason back, and runs step by step.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...targets.llvm.sequence import Call, View, compile_sequence
from ...targets.llvm.sequence import Sequence as Compiled
from ..ir import Graph, Node
from .plan import Step

__all__ = ["NativePlan", "build", "view_of"]


def view_of(a: np.ndarray, shape: tuple[int, ...], offset: int) -> np.ndarray:
    """``a``'s memory from element ``offset`` on, in ``shape`` (a view step's value on the host)."""
    size = int(np.prod(shape, dtype=np.int64))
    return a.reshape(shape) if offset == 0 and a.size == size else a.reshape(-1)[offset:offset + size].reshape(shape)


@dataclass
class NativePlan:
    """A compiled plan: :meth:`run` takes the checked inputs and gives the outputs and the values."""

    graph: Graph
    sequence: Compiled
    table: ctypes.Array
    inputs: dict[str, int]  # graph input -> its slot
    outputs: list[tuple[str, int, tuple[int, ...], np.dtype]]  # kernel-made graph outputs: name, slot, shape, dtype
    views: list[tuple[str, str, tuple[int, ...], int]]  # view steps of per-run arrays: name, input, shape, offset
    #: values at fixed addresses: the constants, the planned buffers that no later step reuses
    fixed: dict[str, np.ndarray] = field(default_factory=dict)
    #: arrays whose pointers are in the table (kept alive with it)
    keep: list[np.ndarray] = field(default_factory=list)

    def run(self, inputs: dict[str, np.ndarray], timed: bool = False
            ) -> tuple[list[np.ndarray], dict[str, np.ndarray], list[float] | None]:
        """One run on ``inputs`` (numpy arrays of the graph's input types): (outputs, values by
        name, and with ``timed`` the seconds of each step in plan order)."""
        table = self.table
        env: dict[str, np.ndarray] = dict(self.fixed)
        held = []  # contiguous copies made for this run, alive until the call returns
        for name, slot in self.inputs.items():
            a = inputs[name]
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
                held.append(a)
            env[name] = a
            table[slot] = a.ctypes.data
        for name, slot, shape, dtype in self.outputs:
            a = np.empty(shape, dtype)
            env[name] = a
            table[slot] = a.ctypes.data
        times = self.sequence(table, timed)
        for name, src, shape, off in self.views:
            env[name] = view_of(env[src], shape, off)
        # an output living in a planned buffer (a view of one) is copied: the next run overwrites it
        return [np.array(env[o]) if o in self.fixed else env[o] for o in self.graph.outputs], env, times


def _signature(step: Step) -> tuple[int, list[tuple[np.dtype, tuple[int, ...]]]] | None:
    entry = getattr(step.kernel.func, "native_entry", None) if step.kernel is not None else None
    return entry() if entry is not None else None


def build(graph: Graph, order: Sequence[tuple[Node, Step]], buffer: Callable[[str], np.ndarray | None],
          gone: set[str]) -> NativePlan | str:
    """The native plan of ``order`` (every step of ``graph`` in run order), or why there is none.
    ``buffer(name)``: the planned host memory of an llvm step's output (None for a graph output);
    ``gone``: values whose buffer a later step reuses (left out of the values a run returns)."""
    slots: dict[str, int] = {}
    keep: list[np.ndarray] = []
    fixed: dict[str, np.ndarray] = {}
    at: dict[int, int] = {}  # slot -> the address written into it once
    inputs: dict[str, int] = {}
    outputs: list[tuple[str, int, tuple[int, ...], np.dtype]] = []
    views: list[tuple[str, str, tuple[int, ...], int]] = []
    ops: list[Call | View] = []
    nslots = 0
    # a value is at a fixed address when it is in `fixed` (constants, planned buffers, views of
    # them); the others (inputs, outputs, views of those) get their address each run

    def new_slot(name: str | None = None, array: np.ndarray | None = None) -> int:
        nonlocal nslots
        s, nslots = nslots, nslots + 1
        if name is not None:
            slots[name] = s
        if array is not None:
            keep.append(array)
            at[s] = array.ctypes.data
        return s

    for name in graph.inputs:
        inputs[name] = new_slot(name)

    def const_slot(name: str) -> int:
        if name not in slots:
            a = np.ascontiguousarray(graph.consts[name])
            fixed[name] = a
            new_slot(name, a)
        return slots[name]

    for n, k in order:
        if k.target == "view":
            src = n.inputs[0]
            if src in graph.consts:
                const_slot(src)
            if src not in slots:
                return f"view {n.name!r} reads {src!r}, which no earlier step made"
            assert n.type is not None
            shape = tuple(n.type.shape)
            itemsize = np.dtype(graph.type_of(src).dtype).itemsize
            ops.append(View(slots[src], k.offset * itemsize, new_slot(n.name)))
            if src in fixed:
                fixed[n.name] = view_of(fixed[src], shape, k.offset)
            else:
                views.append((n.name, src, shape, k.offset))
            continue
        if k.target != "llvm":
            return f"node {n.name!r} runs on {k.target}"
        sig = _signature(k)
        if sig is None:
            return f"node {n.name!r}: its kernel takes scalar or symbolic-size arguments"
        address, params = sig
        args = list(k.kernel.args) + [n.name]
        if len(args) != len(params):
            return f"node {n.name!r}: {len(args)} values for a kernel of {len(params)} arguments"
        arg_slots: list[int] = []
        for a, (dtype, shape) in zip(args, params, strict=True):
            t = graph.type_of(a)
            if tuple(t.shape) != shape or np.dtype(t.dtype) != dtype:
                return f"node {n.name!r}: value {a!r} is {t.dtype}{list(t.shape)}, its kernel takes {dtype}{list(shape)}"
            if a == n.name:
                out = buffer(n.name)
                if out is None:  # a graph output: a new array each run, as the step-by-step runner gives
                    s = new_slot(n.name)
                    outputs.append((n.name, s, shape, dtype))
                else:
                    s = new_slot(n.name, out)
                    fixed[n.name] = out
            elif a in graph.consts:
                s = const_slot(a)
                if s in arg_slots:  # the same constant twice: the kernel's arguments must not alias
                    s = new_slot(None, graph.consts[a].copy())
            elif a in slots:
                s = slots[a]
                if s in arg_slots:
                    return f"node {n.name!r} reads {a!r} twice (aliased kernel arguments)"
            else:
                return f"node {n.name!r} reads {a!r}, which no earlier step made"
            arg_slots.append(s)
        ops.append(Call(address, tuple(arg_slots)))
    for o in graph.outputs:
        if o in graph.inputs or o in graph.consts:
            return f"output {o!r} is a graph {'input' if o in graph.inputs else 'constant'}"
    seq = compile_sequence(ops, nslots)
    table = seq.slots()
    for s, addr in at.items():
        table[s] = addr
    # every constant (as the step runner's values hold them), then the values at fixed addresses
    fixed = {**graph.consts, **{k: v for k, v in fixed.items() if k not in gone}}
    return NativePlan(graph, seq, table, inputs, outputs, views, fixed, keep)
