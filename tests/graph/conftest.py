"""Shared fixtures of the graph-level tests: small seeded models and their int8 forms."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import models
from vdla.compiler.graph.fold import fold_batch_norm, fold_constants
from vdla.compiler.graph.quantize import quantize


def small_resnet(**kw):
    return models.resnet18(input_size=32, width=16, num_classes=10, **kw)


@pytest.fixture(scope="session")
def resnet_fp():
    return fold_batch_norm(fold_constants(small_resnet()))


@pytest.fixture(scope="session")
def resnet_int8(resnet_fp):
    return quantize(resnet_fp, models.sample_input(resnet_fp, 100, count=4))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def int8(rng, shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape).astype(np.int8)
