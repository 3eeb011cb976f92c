"""Code generation puts each virtual thread's tasks of a loop iteration together (loads, GEMM,
ALU tail, store), so one thread's store runs under the other thread's compute; the reorder
keeps every conflicting pair of tasks in order and the results bit-exact."""
from __future__ import annotations

import numpy as np
import pytest
from support.templates import conv_case

from vdla import preset
from vdla.compiler.targets.vdla import codegen
from vdla.compiler.targets.vdla.sync import Task
from vdla.compiler.targets.vdla.top import Knobs, Tail
from vdla.isa import Stage

DEFAULT = preset("default")


def _task(stage: Stage, vt: int | None, epoch: int, reads=(), writes=(), label: str = "") -> Task:  # type: ignore[no-untyped-def]
    return Task(stage, None, list(reads), list(writes), label, vt=vt, epoch=epoch)


def test_threads_grouped_within_an_iteration() -> None:
    t = [_task(Stage.COMPUTE, 0, 1, writes=[("ACC", 0, 4)], label="a0"),
         _task(Stage.COMPUTE, 1, 1, writes=[("ACC", 4, 8)], label="a1"),
         _task(Stage.COMPUTE, 0, 1, reads=[("ACC", 0, 4)], writes=[("ACC", 0, 4)], label="b0"),
         _task(Stage.COMPUTE, 1, 1, reads=[("ACC", 4, 8)], writes=[("ACC", 4, 8)], label="b1"),
         _task(Stage.STORE, 0, 1, reads=[("OUT", 0, 4)], label="s0"),
         _task(Stage.STORE, 1, 1, reads=[("OUT", 4, 8)], label="s1"),
         _task(Stage.COMPUTE, 0, 2, writes=[("ACC", 0, 4)], label="c0"),  # the next iteration stays after
         _task(Stage.COMPUTE, None, 2, writes=[("ACC", 8, 9)], label="x")]
    assert [x.label for x in codegen.group_threads(t)] == ["a0", "b0", "s0", "a1", "b1", "s1", "c0", "x"]


def test_conflicting_threads_keep_their_order() -> None:
    # thread 1 reads what thread 0 writes later: grouping would move the write before the read
    t = [_task(Stage.COMPUTE, 0, 1, writes=[("ACC", 0, 4)], label="a0"),
         _task(Stage.COMPUTE, 1, 1, reads=[("ACC", 0, 1)], writes=[("ACC", 4, 8)], label="a1"),
         _task(Stage.COMPUTE, 0, 1, writes=[("ACC", 0, 4)], label="b0")]
    assert [x.label for x in codegen.group_threads(t)] == ["a0", "a1", "b0"]


def test_reset_sinks_to_its_first_conflict() -> None:
    t = [_task(Stage.COMPUTE, 0, 1, writes=[("ACC", 0, 4), ("OUT", 0, 4)], label="gemm reset"),
         _task(Stage.COMPUTE, 1, 1, writes=[("ACC", 4, 8), ("OUT", 4, 8)], label="gemm reset"),
         _task(Stage.LOAD, 0, 2, writes=[("INP", 0, 4)], label="load0"),
         _task(Stage.COMPUTE, 0, 2, reads=[("INP", 0, 4)], writes=[("ACC", 0, 4), ("OUT", 0, 4)], label="g0"),
         _task(Stage.COMPUTE, 1, 2, reads=[("INP", 4, 8)], writes=[("ACC", 4, 8), ("OUT", 4, 8)], label="g1")]
    got = codegen.sink_resets(t)
    assert [x.label for x in got] == ["load0", "gemm reset", "g0", "gemm reset", "g1"]
    assert [x.vt for x in got if x.label == "gemm reset"] == [0, 1] and got[1].epoch == 2


@pytest.mark.parametrize("knobs", [Knobs(oc_nthread=2, tile_co=1, tile_h=4), Knobs(h_nthread=2, tile_co=2, tile_h=2)],
                         ids=["oc-threads", "row-threads"])
def test_grouped_threads_bit_exact_and_faster(knobs: Knobs, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1x1 conv with a ReLU6-like tail (bias, shift, clip): the ALU tail is most of the compute,
    so interleaved threads wait for each other's stores; grouped, they do not."""
    args = (DEFAULT, 16, 64, 8, 1, 1, 0, Tail(bias=True, shift=6, clip=(0, 96)), knobs)
    grouped = conv_case(*args)
    np.testing.assert_array_equal(grouped["got"], grouped["ref"])
    monkeypatch.setattr(codegen, "group_threads", lambda tasks: tasks)
    plain = conv_case(*args)
    np.testing.assert_array_equal(plain["got"], plain["ref"])
    assert grouped["report"].cycles < plain["report"].cycles, (grouped["report"].cycles, plain["report"].cycles)
