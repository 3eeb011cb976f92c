"""The ``fused`` operator: a sub-graph run as one node (its anchor's fusion class).

Each op registers itself (:func:`.registry.register`) when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, TensorType
from .registry import _REQUIRED, _err, register


def _fused_infer(at: dict[str, Any], ts: list[TensorType]) -> TensorType:
    body = at["body"]
    if not isinstance(body, Graph):
        raise _err("fused: attribute body must be a Graph")
    if len(body.inputs) != len(ts):
        raise _err(f"fused: body takes {len(body.inputs)} inputs, node gives {len(ts)}")
    for (nm, want), got in zip(body.inputs.items(), ts):
        if want != got:
            raise _err(f"fused: body input {nm!r} is {want}, node gives {got}")
    body.infer_types()
    if len(body.outputs) != 1:
        raise _err("fused: body must have exactly one output")
    return body.type_of(body.outputs[0])


def _fused(at: dict[str, Any], xs: list[np.ndarray]) -> np.ndarray:
    from ..reference import run

    body = at["body"]
    return run(body, dict(zip(body.inputs, xs)), check=False)[0]


register("fused", "opaque", (0, 1 << 16), {"body": _REQUIRED, "pattern": "", "kind": "opaque"})((_fused_infer, _fused))
