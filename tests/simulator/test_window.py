"""CFG's window mode on the golden simulator (vdla.simulator.machine): a depthwise row
convolution computed by hand with numpy, then each rule of `isa.SEMANTIC_CHOICES`' "GEMM
window" (warm-up writes nothing, every pass starts from zeros, reset GEMMs and init as
usual), each also against the independent reference model `support.simref.Ref`."""

from __future__ import annotations

import numpy as np
import pytest
from support.simref import DEFAULT, SMALL, Prog, assert_same_state, sync_load_to_compute

from vdla import isa
from vdla.isa import Mem
from vdla.runtime.stream import CommandStream, StreamError
from vdla.simulator import ProgramError
from vdla.simulator.golden import execute


def _taps(c, *rows: list[int]) -> np.ndarray:
    """WGT rows whose lane o holds tap t = rows[k][t] scaled by (o + 1): every channel its own kernel."""
    w = np.zeros((len(rows), c.block_out, c.block_in), np.int8)
    for k, taps in enumerate(rows):
        for t, v in enumerate(taps):
            w[k, :, t] = v * (np.arange(c.block_out) + 1)
    return w


def _prog(c, inp: np.ndarray, wgt: np.ndarray, acc: np.ndarray | None = None) -> Prog:
    p = Prog(c)
    p.load(Mem.INP, inp)
    p.load(Mem.WGT, wgt)
    sync_load_to_compute(p)
    p.load(Mem.ACC, np.zeros((4, c.batch, c.block_out), "<i4") if acc is None else acc, pop_prev=1)
    return p


def _depthwise_row(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """numpy: out[n, o] = sum_k w[o, k] * x[n + k - pad, o], zero outside x."""
    n, lanes = x.shape
    k = w.shape[1]
    xp = np.concatenate([np.zeros((pad, lanes), np.int64), x, np.zeros((k - 1 - pad, lanes), np.int64)])
    return np.stack([sum(w[:, t] * xp[i + t] for t in range(k)) for i in range(n)])


@pytest.mark.parametrize("k", [1, 3, 5])
def test_a_window_gemm_is_a_depthwise_row_convolution(k):
    """A row of 7 positions, a K-tap kernel per channel, pad (K-1)/2: warm-up (K-1)/2 and (K-1)/2
    zero positions loaded after the row; the taps go in newest first (tap t = kernel[K-1-t])."""
    c = DEFAULT
    rng = np.random.default_rng(k)
    n, pad = 7, (k - 1) // 2
    x = rng.integers(-128, 128, (n, c.block_in))
    kern = rng.integers(-128, 128, (c.block_out, k))
    inp = np.zeros((n + pad, 1, c.block_in), np.int8)
    inp[:n, 0] = x
    wgt = np.zeros((1, c.block_out, c.block_in), np.int8)
    wgt[0, :, :k] = kern[:, ::-1]
    p = _prog(c, inp, wgt, np.zeros((n + pad + 1, 1, c.block_out), "<i4"))
    p.uops([(0, 0, 0)])
    p.add(isa.cfg(window=1, warmup=pad))
    p.add(isa.gemm(uop_end=1, iter_out=1, iter_in=n + pad, dst_factor_in=1, src_factor_in=1))
    report, _, m, ref, _ = p.run()
    want = _depthwise_row(x, kern, pad)
    assert m.acc[pad : pad + n, 0].tolist() == want.tolist()  # output x lands at dst + warmup + x
    assert not m.acc[:pad].any() and not m.acc[pad + n :].any()  # the warm-up wrote nothing
    assert report.counters["gemm_counter"] == n + pad  # every iteration counts
    assert_same_state(m, ref)


def test_every_inner_pass_starts_from_zeros():
    """Two outer iterations over the same rows: the second pass's first tap sees zeros, not the
    first pass's last row; with two uops per inner iteration the window holds both."""
    c = SMALL
    inp = np.arange(1, 5, dtype=np.int8).reshape(4, 1, 1) * np.ones((1, 1, c.block_in), np.int8)  # row r = r + 1
    p = _prog(c, inp, _taps(c, [1, 10, 50]), np.zeros((8, 1, c.block_out), "<i4"))
    p.uops([(0, 0, 0), (0, 1, 0)])  # per inner iteration: rows j*2 and j*2 + 1, written to dst j (twice)
    p.add(isa.cfg(window=1))
    p.add(isa.gemm(uop_end=2, iter_out=2, iter_in=2, dst_factor_out=4, dst_factor_in=1, src_factor_in=2))
    _, _, m, ref, _ = p.run()
    lane0 = m.acc[:8, 0, 0].tolist()
    # pass positions 0..3 read rows 1, 2, 3, 4: sums 1; 2 + 10; then 3 + 20 + 50; 4 + 30 + 100
    # dst j gets positions 2j and 2j + 1 added: [1 + 12, 73 + 134]; the second pass the same
    assert lane0 == [13, 207, 0, 0, 13, 207, 0, 0]
    assert m.acc[1, 0, 1] == 2 * 207  # lane 1's kernel is twice lane 0's
    assert_same_state(m, ref)


def test_warmup_positions_write_nothing_and_restart_every_pass():
    c = SMALL
    inp = np.ones((3, 1, c.block_in), np.int8)
    acc = np.full((6, 1, c.block_out), 1000, "<i4")
    p = _prog(c, inp, _taps(c, [1, 1, 1, 1]), acc)
    p.uops([(0, 0, 0)])
    p.add(isa.cfg(window=1, warmup=2, epilogue=1, clip_lo=-128, clip_hi=127))
    p.add(isa.gemm(uop_end=1, iter_out=2, iter_in=3, dst_factor_out=3, dst_factor_in=1, src_factor_in=1))
    _, _, m, ref, _ = p.run()
    # positions 0 and 1 of each pass are warm-up: rows 0, 1, 3, 4 keep 1000 (and OUT its 0)
    assert m.acc[:6, 0, 0].tolist() == [1000, 1000, 1003, 1000, 1000, 1003]
    assert m.out[:6, 0, 0].tolist() == [0, 0, 127, 0, 0, 127]
    assert_same_state(m, ref)


def test_window_with_init_starts_from_the_bias_row():
    c = SMALL
    acc = np.zeros((12, 1, c.block_out), "<i4")
    acc[:4] = 777  # stale: init ignores it
    acc[10] = -50  # the bias row: init_base 10 + WGT index 0
    p = _prog(c, np.full((3, 1, c.block_in), 2, np.int8), _taps(c, [1, 1]), acc)
    p.uops([(0, 0, 0)])
    p.add(isa.cfg(window=1, warmup=1, init_base=10))
    p.add(isa.gemm(init=1, uop_end=1, iter_out=1, iter_in=3, dst_factor_in=1, src_factor_in=1))
    _, _, m, ref, _ = p.run()
    assert m.acc[:3, 0, 0].tolist() == [777, -50 + 4, -50 + 4]
    assert_same_state(m, ref)


def test_a_reset_gemm_ignores_the_window():
    c = SMALL
    p = _prog(c, np.ones((1, 1, c.block_in), np.int8), _taps(c, [1]), np.full((4, 1, c.block_out), 9, "<i4"))
    p.uops([(0, 0, 0)])
    p.add(isa.cfg(window=1, warmup=3))
    p.add(isa.gemm(reset=1, uop_end=1, iter_out=1, iter_in=4, dst_factor_in=1))
    _, _, m, ref, _ = p.run()
    assert not m.acc[:4].any()  # every row zeroed, the warm-up notwithstanding
    assert_same_state(m, ref)


def test_a_config_without_the_window_refuses_it():
    c = SMALL.replace(name="small-no-window", gemm_window=False)
    assert "window" not in {s.name for s in isa.layout(c).formats["cfg"].slots}
    with pytest.raises(ProgramError, match=r"instruction 0 \(CFG\): config 'small-no-window' has no GEMM window"):
        execute(c, [isa.cfg(window=1), isa.finish()], np.zeros(4096, np.uint8))
    with pytest.raises(StreamError, match=r"Config.gemm_window is off"):
        CommandStream(c).cfg(window=True)
    with pytest.raises(isa.FieldRangeError, match="warmup"):
        isa.encode([isa.cfg(window=1, warmup=c.block_in)], SMALL)  # the window holds block_in rows
