"""Virtual threads overlap load and compute; schedules the hardware cannot run fail at
build time naming the stage, the buffer and the limit; the public API (vdla.build /
vdla.lower with target "vdla"), disassembly, token checking, save/load."""
from __future__ import annotations

import numpy as np
import pytest
from support.templates import conv_case

from vdla import preset
from vdla.compiler.targets.vdla.top import Knobs, Tail
from vdla.compiler.topi.workloads import OFFLOADED

DEFAULT = preset("default")


def _significant(report) -> bool:  # type: ignore[no-untyped-def]
    """Load and compute each busy for at least a fifth of the run."""
    m = report.modules
    return m["load"].busy >= 0.2 * report.cycles and m["compute"].busy >= 0.2 * report.cycles


#: Test size per layer. 3x3 layers: 8x8 (or the layer's own size). A 1x1 layer at 8x8 is a
#: single output tile, so two threads would each get one tile and nothing to overlap; these run
#: at a size where every thread has at least two output tiles (C11 at its full 14x14, where each
#: thread's one tile still has two input-channel chunks to pipeline) -- all in well under a second.
_SIZE = {"C3": 32, "C5": 32, "C8": 28, "C11": 14}


def _tasks(layer, size: int, k: Knobs) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(output tiles, output tiles x input-channel chunks) per virtual thread of a conv schedule."""
    oh = (size + 2 * layer.pad - layer.k) // layer.stride + 1
    nt = k.oc_nthread * k.h_nthread
    tiles = (layer.oc // DEFAULT.block_out // k.tile_co) * (oh // k.tile_h) * (oh // k.tile_w)
    chunks = layer.ic // DEFAULT.block_in // k.tile_ci
    return tiles // nt, tiles * chunks // nt


@pytest.mark.parametrize("layer", OFFLOADED, ids=[lay.name for lay in OFFLOADED])
def test_two_virtual_threads_reduce_cycles(layer) -> None:  # type: ignore[no-untyped-def]
    size = _SIZE.get(layer.name, min(8, layer.size))
    args = (DEFAULT, layer.ic, layer.oc, size, layer.k, layer.stride, layer.pad, Tail(bias=True, shift=8))
    one = conv_case(*args, Knobs())
    two = conv_case(*args, Knobs(vthreads=2))
    np.testing.assert_array_equal(two["got"], two["ref"])
    k2 = two["s"].vdla_knobs
    assert k2.oc_nthread * k2.h_nthread == 2
    tiles, tasks = _tasks(layer, size, k2)
    assert tasks >= 2, f"{layer.name} at {size}x{size}: one load/compute task per thread, nothing to overlap"
    if layer.k == 1 and layer.name != "C11":
        assert tiles >= 2, f"{layer.name} at {size}x{size}: {tiles} output tile(s) per thread"
    r1, r2 = one["report"], two["report"]
    assert _significant(r1), (
        f"{layer.name}: load {r1.modules['load'].busy} / compute {r1.modules['compute'].busy} busy of {r1.cycles} cycles"
    )
    assert r2.cycles < r1.cycles, f"{layer.name}: 2 threads {r2.cycles} cycles, 1 thread {r1.cycles}"


def test_compile_and_vthread_interleaving_visible_in_stream() -> None:
    """Two threads: loads of one thread sit between the GEMMs of the other in the stream."""
    r1 = conv_case(DEFAULT, 64, 64, 8, 3, 1, 1, Tail(shift=8), Knobs(oc_nthread=2, tile_ci=1))
    ops = [x.opcode for x in r1["f"].program.instructions()]
    gemms = [i for i, op in enumerate(ops) if op == 2]
    loads_between = [i for i, op in enumerate(ops) if op == 0 and gemms[0] < i < gemms[-1]]
    assert loads_between
    assert r1["f"].info["lower_s"] + r1["f"].info["codegen_s"] < 5
