"""Fixtures of the graph-level tests: small seeded models and their int8 forms."""

from __future__ import annotations

import numpy as np
import pytest
from support.graph import small_resnet

from vdla.compiler.graph import models
from vdla.compiler.graph.fold import fold_batch_norm, fold_constants
from vdla.compiler.graph.quantize import quantize


@pytest.fixture(scope="session")
def resnet_fp():
    return fold_batch_norm(fold_constants(small_resnet()))


@pytest.fixture(scope="session")
def resnet_int8(resnet_fp):
    return quantize(resnet_fp, models.sample_input(resnet_fp, 100, count=4))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
