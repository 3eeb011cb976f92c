"""ONNX test helpers: one-node models built with ``onnx.helper`` and an independent reference
(onnxruntime; onnx's own ReferenceEvaluator where onnxruntime cannot run the model, e.g.
an opset it no longer implements)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def ir_version(opset: int) -> int:
    """The IR version stamped on a test model of ``opset`` (what exporters of that era wrote)."""
    return 3 if opset < 8 else 7 if opset < 13 else 8 if opset < 18 else 9 if opset < 21 else 10


def model(nodes: Sequence[Any], inputs: Mapping[str, Any], opset: int, outputs: Sequence[str] = ("y",),
          inits: Mapping[str, np.ndarray] | None = None, name: str = "t") -> Any:
    """A model of ``nodes``; ``inputs`` maps input names to a shape (float32) or an array (its dtype/shape)."""
    vis = []
    for k, v in inputs.items():
        if isinstance(v, np.ndarray):
            et = helper.np_dtype_to_tensor_dtype(v.dtype)
            vis.append(helper.make_tensor_value_info(k, et, list(v.shape)))
        else:
            vis.append(helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)))
    outs = [helper.make_empty_tensor_value_info(o) for o in outputs]
    g = helper.make_graph(list(nodes), name, vis, outs,
                          [numpy_helper.from_array(np.asarray(a), name=k) for k, a in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version(opset))


def feeds_for(inputs: Mapping[str, Any], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in inputs.items():
        out[k] = v if isinstance(v, np.ndarray) else rng.standard_normal(v).astype(np.float32)
    return out


def reference(m: Any, feeds: Mapping[str, np.ndarray]) -> tuple[list[np.ndarray], str]:
    """Outputs of ``m`` from onnxruntime, or from onnx.reference when onnxruntime refuses it."""
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return sess.run(None, dict(feeds)), "onnxruntime"
    except Exception as e:  # noqa: BLE001 - an opset onnxruntime dropped: use onnx's evaluator
        from onnx.reference import ReferenceEvaluator

        try:
            return list(ReferenceEvaluator(m).run(None, dict(feeds))), "onnx.reference"
        except Exception as e2:  # noqa: BLE001
            raise AssertionError(f"no reference can run the model: onnxruntime: {e}; onnx.reference: {e2}") from e2
