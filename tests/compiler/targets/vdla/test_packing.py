"""Packed layouts: numpy helpers against index formulas, and the layout pass."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.targets.vdla.packing import (
    pack_activation,
    pack_channel_const,
    pack_weight,
    packed_shape,
    unpack_activation,
    unpack_weight,
)


@pytest.mark.parametrize("shape,b,c", [((1, 16, 3, 3), 1, 16), ((3, 20, 2, 5), 2, 8), ((5, 7), 2, 4)])
def test_pack_activation_index_formula(rng, shape, b, c):
    x = rng.integers(-100, 100, size=shape).astype(np.int8)
    p = pack_activation(x, b, c, pad=True)
    assert p.shape == packed_shape(shape, b, c)
    for idx in np.ndindex(*shape):
        n, ch = idx[0], idx[1]
        pidx = (n // b, ch // c, *idx[2:], n % b, ch % c)
        assert p[pidx] == x[idx]
    # padding is zero and unpack drops it
    assert np.abs(p).sum() == np.abs(x).sum()
    np.testing.assert_array_equal(unpack_activation(p, shape), x)


def test_pack_weight_index_formula(rng):
    w = rng.integers(-100, 100, size=(20, 6, 3, 3)).astype(np.int8)
    p = pack_weight(w, 8, 4, pad=True)  # block_out 8, block_in 4
    assert p.shape == (3, 2, 3, 3, 8, 4)
    for o, i, a, b in np.ndindex(*w.shape):
        assert p[o // 8, i // 4, a, b, o % 8, i % 4] == w[o, i, a, b]
    np.testing.assert_array_equal(unpack_weight(p, w.shape), w)
    d = rng.integers(-100, 100, size=(10, 12)).astype(np.int8)
    pd = pack_weight(d, 4, 8, pad=True)
    assert pd.shape == (3, 2, 4, 8) and pd[2, 1, 1, 3] == d[9, 11]


def test_pack_channel_const():
    c = np.arange(20, dtype=np.int32).reshape(1, 20, 1, 1)
    p = pack_channel_const(c, 8, 6)
    assert p.shape == (1, 3, 1, 1, 1, 8) and p[0, 2, 0, 0, 0, 3] == 19 and p[0, 2, 0, 0, 0, 4] == 0
