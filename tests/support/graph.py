"""Graph test helpers: a small seeded ResNet and random int8 arrays."""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph import models


def small_resnet(**kw):
    return models.resnet18(input_size=32, width=16, num_classes=10, **kw)


def int8(rng, shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape).astype(np.int8)
