"""The importer's core: model inputs, value bookkeeping, attribute checking, error messages
and the node loop. The operator families (:mod:`.consts`, :mod:`.tensor`, :mod:`.elemwise`,
:mod:`.nn`, :mod:`.pool`) are mix-ins adding ``op_<OnnxType>`` methods to :class:`Core`.

Values are either *known* (numpy arrays computed at import: initializers, ``Constant``,
and every shape subgraph, folded by :mod:`.consts`) or graph values. A known value becomes
a graph constant only where an operator reads it as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir import Graph, GraphError

__all__ = ["Core", "onnx_module", "ELEM_DTYPES"]


def onnx_module():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise GraphError("ONNX import needs the onnx package: pip install 'vdla[graph]'") from e
    return onnx


#: ONNX element types of model inputs -> the graph dtype they are read as (int64 and
#: float64 inputs are narrowed: the graph level computes in int32 / float32).
ELEM_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int32", 11: "float32"}
#: The narrowed ones -> their declared dtype, kept on the input's type: the runners take arrays
#: of it (as onnxruntime does) and cast them at the boundary.
WIDE_INPUTS = {7: "int64", 11: "float64"}


class Core:
    """State and helpers shared by every operator family."""

    #: ONNX operators whose extra outputs the op method handles itself.
    MULTI_OUTPUT: frozenset[str] = frozenset({"Dropout", "Split", "BatchNormalization", "MaxPool",
                                              "LayerNormalization", "LSTM", "GRU", "RNN"})

    def __init__(self, model: Any, shapes: Mapping[str, Sequence[int]] | None, rnn: str = "scan") -> None:
        onnx = onnx_module()
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.nph = onnx, helper, numpy_helper
        self.model = model
        if rnn not in ("scan", "unroll"):
            raise GraphError(f"rnn={rnn!r}: 'scan' (an LSTM's recurrence as one lstm_scan node) or 'unroll'")
        self.rnn = rnn
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        og = model.graph
        self.g = Graph(og.name or "onnx")
        self.known: dict[str, np.ndarray] = {}  # values computed at import, by ONNX name
        self.env: dict[str, str] = {}  # ONNX value name -> graph value name
        # ONNX N,C,L values -> their N,C,1,L graph form, so chains of 1-D convs and their
        # activations stay 2-D (and on VDLA) without a reshape between every pair
        self.h1: dict[str, str] = {}
        self.idx = 0
        for t in og.initializer:
            self.known[t.name] = numpy_helper.to_array(t)
        self._inputs(og, dict(shapes or {}))

    def _inputs(self, og: Any, shapes: dict[str, Sequence[int]]) -> None:
        real_inputs = [i for i in og.input if i.name not in self.known]
        for k in shapes:
            if k not in {i.name for i in real_inputs}:
                raise GraphError(
                    f"shapes names {k!r}, which is not an input of the model "
                    f"(inputs: {', '.join(i.name for i in real_inputs)})"
                )
        for vi in real_inputs:
            if not vi.type.HasField("tensor_type"):
                raise GraphError(f"model input {vi.name!r} is not a tensor")
            tt = vi.type.tensor_type
            dtype = ELEM_DTYPES.get(tt.elem_type)
            if dtype is None:
                raise GraphError(
                    f"model input {vi.name!r} has unsupported element type "
                    f"{self.onnx.TensorProto.DataType.Name(tt.elem_type)} (float, double, int8, uint8, int32, int64)"
                )
            dims: list[int] = []
            for ax, d in enumerate(tt.shape.dim):
                if d.HasField("dim_value") and d.dim_value > 0:
                    dims.append(d.dim_value)
                elif vi.name in shapes:
                    dims.append(-1)
                else:
                    sym = d.dim_param or "?"
                    raise GraphError(
                        f"model input {vi.name!r} has a dynamic dimension {sym!r} (axis {ax}) without a bound; "
                        f"give its shape with --shape {vi.name}=d0,d1,... (shapes={{{vi.name!r}: (...)}} in Python)"
                    )
            if vi.name in shapes:
                want = tuple(int(s) for s in shapes[vi.name])
                if len(want) != len(dims) or any(d not in (-1, w) for d, w in zip(dims, want)):
                    raise GraphError(
                        f"shape {want} given for input {vi.name!r} does not match its declared shape "
                        f"{tuple(d if d > 0 else '?' for d in dims)}"
                    )
                dims = list(want)
            self.env[vi.name] = self.g.add_input(vi.name, tuple(dims), dtype, boundary=WIDE_INPUTS.get(tt.elem_type))

    # -- messages -------------------------------------------------------------------------
    def where(self, node: Any, idx: int) -> str:
        return f"node {node.name!r}" if node.name else f"node #{idx} ({node.op_type} -> {list(node.output)})"

    def at(self, node: Any, idx: int) -> str:
        """``ONNX Op (opset N) at node 'name'``: how every message names a node."""
        return f"ONNX {node.op_type} (opset {self.opset}) at {self.where(node, idx)}"

    def err(self, node: Any, idx: int, msg: str) -> GraphError:
        return GraphError(f"{self.at(node, idx)}: {msg}")

    def bad(self, node: Any, idx: int, attr: str, value: Any, why: str = "") -> GraphError:
        return self.err(node, idx, f"unsupported attribute {attr}={value!r}" + (f" ({why})" if why else ""))

    # -- attributes -----------------------------------------------------------------------
    def attr_values(self, node: Any) -> dict[str, Any]:
        out = {}
        for a in node.attribute:
            v = self.helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
        return out

    def attrs(self, node: Any, idx: int, allowed: Mapping[str, Any]) -> dict[str, Any]:
        """The node's attributes over ``allowed``'s defaults; any other attribute is an error."""
        out = dict(allowed)
        schema = self.schema(node.op_type)
        for k, v in self.attr_values(node).items():
            if schema is not None and k not in schema.attributes:
                raise self.err(node, idx, f"attribute {k!r} is not defined for {node.op_type} at opset {self.opset} "
                                          f"(version {schema.since_version}; it has {', '.join(schema.attributes) or 'none'})")
            if k not in allowed:
                raise self.err(node, idx, f"unsupported attribute {k!r} (supported: {', '.join(allowed) or 'none'})")
            out[k] = v
        return out

    def schema(self, op_type: str) -> Any:
        """ONNX's schema of ``op_type`` as of this model's opset (None when onnx has none)."""
        try:
            return self.onnx.defs.get_schema(op_type, self.opset, "")
        except Exception:  # noqa: BLE001 - unknown operator or opset: the op method decides
            return None

    # -- values ---------------------------------------------------------------------------
    def has_input(self, node: Any, pos: int) -> bool:
        return pos < len(node.input) and node.input[pos] != ""

    def value(self, name: str) -> str:
        """Graph value for an ONNX tensor name (a known array becomes a graph constant here)."""
        if name in self.env:
            return self.env[name]
        if name in self.known:
            a = self.known[name]
            if a.dtype == np.float64 or a.dtype == np.float16:
                a = a.astype(np.float32)
            if a.dtype == np.bool_:
                raise GraphError(f"boolean tensor {name!r} is used as data; the graph level has no bool type")
            if a.dtype == np.int64 and a.size and np.abs(a).max() >= 2**31:
                raise GraphError(f"int64 tensor {name!r} used as data does not fit int32")
            if a.dtype in (np.int64, np.int16, np.uint16, np.uint32, np.uint64):
                a = a.astype(np.int32)
            self.env[name] = self.g.add_const(name, a)
            return self.env[name]
        raise GraphError(f"ONNX value {name!r} is used before it is defined")

    def shape_of(self, name: str) -> tuple[int, ...]:
        if name in self.known:
            return tuple(self.known[name].shape)
        return self.g.type_of(self.value(name)).shape

    def const(self, name: str) -> np.ndarray | None:
        if name in self.known:
            return self.known[name]
        v = self.env.get(name)
        if v is not None and v in self.g.consts:
            return self.g.consts[v]
        return None

    def need_const(self, node: Any, idx: int, pos: int, what: str) -> np.ndarray:
        a = self.const(node.input[pos]) if self.has_input(node, pos) else None
        if a is None:
            raise self.err(node, idx, f"{what} (input {pos}) must be a constant (or computable at import)")
        return a

    def ints_input(self, node: Any, idx: int, pos: int, what: str) -> list[int] | None:
        """An optional constant integer-list input (axes, pads, repeats ...), or None when absent."""
        if not self.has_input(node, pos):
            return None
        return [int(v) for v in self.need_const(node, idx, pos, what).reshape(-1)]

    def emit(self, node: Any, op: str, ins: list[str], out: int = 0, **attrs: Any) -> str:
        """Add the graph node computing ONNX output ``out`` of ``node``; errors name the ONNX node."""
        try:
            name = self.g.add_node(op, ins, name=node.output[out], **attrs)
        except GraphError as e:
            raise GraphError(f"{self.at(node, self.idx)}: {e}") from None
        if node.name:
            self.g.nodes[-1].notes["onnx_node"] = node.name
        self.env[node.output[out]] = name
        return name

    def base(self, node: Any) -> str:
        """The name an ONNX node's helper values start with: its first output (or its own name)."""
        return next((o for o in node.output if o), node.name or node.op_type.lower())

    def helper_node(self, node: Any, op: str, ins: list[str], suffix: str, **attrs: Any) -> str:
        """An extra graph node an ONNX node lowers into (named after its output)."""
        try:
            return self.g.add_node(op, ins, name=f"{self.base(node)}.{suffix}", **attrs)
        except GraphError as e:
            raise GraphError(f"{self.at(node, self.idx)}: {e}") from None

    def reshape(self, node: Any, x: str, shape: Sequence[int], suffix: str) -> str:
        if tuple(self.g.type_of(x).shape) == tuple(shape):
            return x
        if x in self.g.consts:  # a weight stays a constant
            return self.g.add_const(f"{x}.{suffix}", self.g.consts[x].reshape(tuple(shape)))
        return self.helper_node(node, "reshape", [x], suffix, shape=tuple(int(s) for s in shape))

    def alias(self, node: Any, src: str, out: int = 0) -> None:
        """ONNX output ``out`` of ``node`` is the same value as ONNX value ``src``."""
        if src in self.known and src not in self.env:
            self.known[node.output[out]] = self.known[src]
        else:
            self.env[node.output[out]] = self.value(src)

    # -- driver ---------------------------------------------------------------------------
    def run(self) -> Graph:
        from .consts import FOLDERS, fold

        og = self.model.graph
        supported = self.supported()
        for idx, n in enumerate(og.node):
            self.idx = idx  # the node being imported (for messages of helpers that are not passed it)
            if n.domain not in ("", "ai.onnx"):
                raise GraphError(f"unsupported ONNX operator {n.domain}.{n.op_type} at {self.where(n, idx)} "
                                 f"(opset {self.opset})")
            if n.op_type in FOLDERS and fold(self, n, idx):
                continue
            fn = getattr(self, f"op_{n.op_type}", None)
            if fn is None and n.op_type in FOLDERS:
                data = [v for v in n.input if v and v not in self.known]
                raise self.err(n, idx, f"supported only on values computable at import (constants and shapes); "
                                       f"input {data[0]!r} is computed from the model's inputs")
            if fn is None:
                raise GraphError(
                    f"unsupported ONNX operator {n.op_type} at {self.where(n, idx)} (opset {self.opset}); "
                    f"supported: {', '.join(supported)}"
                )
            if n.op_type not in self.MULTI_OUTPUT:
                extra = [o for o in n.output[1:] if o]
                if extra:
                    raise self.err(n, idx, f"extra outputs {extra} are not supported")
            fn(n, idx)
        outs = []
        for o in og.output:
            if o.name in self.env:
                outs.append(self.env[o.name])
            elif o.name in self.known:
                outs.append(self.value(o.name))
            else:
                raise GraphError(f"model output {o.name!r} is not computed by any node")
        self.g.outputs = outs
        return self.g.infer_types()

    @classmethod
    def supported(cls) -> list[str]:
        from .consts import FOLDERS

        return sorted({k[3:] for k in dir(cls) if k.startswith("op_")} | set(FOLDERS))
