"""The tensor-ALU lowering (:mod:`vdla.compiler.targets.vdla.alu`): an added operand shifted left
by an immediate (``A + (B << m)``, a residual aligned to a finer scale) is shifted in place in
its own buffer, then added, bit-exact on the golden simulator; an operand read at a broadcast
index (its elements would be shifted more than once) is refused naming it. (A shifted operand
next to a plain load starts the chain instead: ``(B << m) + A`` on B's copy.)"""

from __future__ import annotations

import numpy as np
import pytest
from support.templates import alu_pair_schedule

import vdla
from vdla import Device, preset
from vdla.compiler import te
from vdla.compiler.targets.vdla import VDLAError, get_env, shift_left, shift_right

ENV = get_env(preset("default"))


@pytest.mark.parametrize("m", [1, 5, 12])
def test_shifted_operand_added_bit_exact(m: int) -> None:
    A = te.placeholder((4, 6, 16), "int32", name="A")
    B = te.placeholder((4, 6, 16), "int8", name="B")
    res = te.compute((4, 6, 16), lambda *i: te.min(te.max(shift_right(A[i] + 8, 4) + shift_left(B[i].astype("int32"), m),
                                                          -127), 127), name="res")
    out = te.compute((4, 6, 16), lambda *i: res[i].astype("int8"), name="out")
    f = vdla.build(alu_pair_schedule(ENV, A, B, res, out), [A, B, out], target="vdla")
    rng = np.random.default_rng(m)
    a = rng.integers(-6000, 6000, (4, 6, 16), dtype=np.int32)
    b = rng.integers(-3, 4, (4, 6, 16), dtype=np.int8)
    o = np.zeros((4, 6, 16), np.int8)
    f(Device("fsim"), a, b, o)
    want = np.clip(((a + 8) >> 4) + (b.astype(np.int32) << m), -127, 127)
    np.testing.assert_array_equal(o, want.astype(np.int8))


def test_shifted_operand_at_a_broadcast_index_is_refused() -> None:
    A = te.placeholder((4, 6, 16), "int32", name="A")
    B = te.placeholder((4, 6, 16), "int8", name="B")
    res = te.compute((4, 6, 16), lambda i, j, k: shift_right(A[i, j, k], 1) + shift_left(B[0, j, k].astype("int32"), 2),
                     name="res")
    out = te.compute((4, 6, 16), lambda *i: res[i].astype("int8"), name="out")
    with pytest.raises(VDLAError, match=r"stage 'res': alu: the shifted operand .* is not indexed as the output"):
        vdla.build(alu_pair_schedule(ENV, A, B, res, out), [A, B, out], target="vdla")
