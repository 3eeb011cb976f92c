"""Virtual threads overlap load and compute; schedules the hardware cannot run fail at
build time naming the stage, the buffer and the limit; the public API (vdla.build /
vdla.lower with target "vdla"), disassembly, token checking, save/load."""
from __future__ import annotations

import vdla
from vdla.compiler import te
from vdla.compiler.targets.vdla import check_tokens
from vdla.compiler.targets.vdla.top import Knobs, Tail, conv2d_packed, schedule_conv2d_packed
from vdla.isa import Stage, decode, encode, stage_of
from vdla.runtime import Program


def _small_conv(knobs: Knobs, tail: Tail | None = None):  # type: ignore[no-untyped-def]
    tail = tail or Tail(shift=8)
    D = te.placeholder((1, 2, 8, 8, 1, 16), "int8", name="data")
    K = te.placeholder((2, 2, 3, 3, 16, 16), "int8", name="kernel")
    out = conv2d_packed(D, K, 1, 1, tail)
    return schedule_conv2d_packed(out, knobs), [D, K, out]


def test_token_checker_explains_imbalance() -> None:
    s, args = _small_conv(Knobs())
    f = vdla.build(s, args, target="vdla")
    rep = f.check_tokens()
    assert rep.ok and rep.pushes == rep.pops
    insns = decode(f.program.insns, f.config)
    # drop the first pop of a load->compute token: one token is left over at the end
    k = next(i for i, x in enumerate(insns) if stage_of(x) == Stage.COMPUTE and x.pop_prev)
    insns[k] = insns[k].replace(pop_prev=0)
    bad = check_tokens(Program(f.config, encode(insns, f.config)))
    assert not bad.ok and "l2g" in str(bad) and "left" in str(bad)
    # drop a push instead: the matching pop can never be satisfied
    insns = decode(f.program.insns, f.config)
    k = next(i for i, x in enumerate(insns) if x.opcode == 0 and x.push_next)
    insns[k] = insns[k].replace(push_next=0)
    bad = check_tokens(Program(f.config, encode(insns, f.config)))
    assert not bad.ok and "deadlock" in str(bad) and "waits for a token on l2g" in str(bad)
