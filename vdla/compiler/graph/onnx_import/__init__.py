"""ONNX import, opsets 6 to 21: an ``onnx.ModelProto`` (or .onnx file) to a :class:`Graph`.

One module per operator family, each a mix-in of ``op_<OnnxType>`` methods over
:class:`.core.Core` (inputs, values, messages, the node loop): :mod:`.consts` folds
constant and shape subgraphs at import, :mod:`.tensor` (reshape, transpose, pad, slice,
split, gather, reductions, dropout ...), :mod:`.elemwise` (activations, math, broadcasting
and n-ary binaries, softmax, QDQ), :mod:`.nn` (conv/conv-transpose of any rank, Gemm,
MatMul, normalisations, LRN), :mod:`.einsum` (Einsum as transposes, reshapes and matmuls),
:mod:`.pool`, :mod:`.rnn` (LSTM, GRU and RNN, unrolled) and
:mod:`.select` (Where, comparisons and logic, ScatterND, Resize/Upsample). :data:`SUPPORTED_OPS` lists them all.

Everything else — an unknown operator, an unsupported attribute or value, a
data-dependent shape, a dynamic input dimension without a bound given in ``shapes`` (the
CLI's ``--shape NAME=d0,d1,...``), a file that is not ONNX — raises a :class:`GraphError`
naming the node, operator, opset and attribute (or the file, or the input).

Model inputs of type double and int64 are computed as float32 and int32 (the graph level's
types) and keep their declared type (``TensorType.boundary``): every runner takes arrays of
either, as onnxruntime takes the declared one, and casts at the boundary; a value the narrower
type cannot hold is an error naming the input, the value and its index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ir import Graph, GraphError
from .core import Core, onnx_module
from .einsum import EinsumOps
from .elemwise import ElemwiseOps
from .nn import NNOps
from .pool import PoolOps
from .rnn import RnnOps
from .select import SelectOps
from .tensor import TensorOps

__all__ = ["from_onnx", "load_onnx", "read_model", "SUPPORTED_OPS"]


class Importer(TensorOps, ElemwiseOps, NNOps, EinsumOps, PoolOps, RnnOps, SelectOps, Core):
    """Every operator family over the core."""


SUPPORTED_OPS = Importer.supported()


def read_model(path: str | Path) -> Any:
    """Load an .onnx file; a missing, truncated or non-ONNX file is one clear GraphError."""
    onnx = onnx_module()
    p = Path(path)
    if not p.is_file():
        raise GraphError(f"no such ONNX file: {p}")
    data = p.read_bytes()
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf's DecodeError and friends: say what it means
        raise GraphError(f"{p}: not a valid ONNX model (truncated or not ONNX; the protobuf parser says: "
                         f"{str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if not model.HasField("graph") or not model.opset_import or model.ir_version <= 0:
        raise GraphError(f"{p}: not an ONNX model ({len(data)} bytes parse as protobuf but hold no graph, "
                         f"opset or IR version)")
    _load_external_data(onnx, model, p)
    return model


def _load_external_data(onnx: Any, model: Any, p: Path) -> None:
    """Weights kept beside the model (torch.onnx's dynamo exporter writes ``model.onnx.data``),
    read from the model's folder; a missing or short data file is one GraphError naming it."""
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    external = [t for t in _get_all_tensors(model) if uses_external_data(t)]
    if not external:
        return
    for t in external:
        info = ExternalDataInfo(t)
        f = p.parent / info.location
        if not f.is_file():
            raise GraphError(f"{p}: tensor {t.name!r} is stored in {info.location!r} beside the model, and "
                             f"{f} is not there (copy the .data file with the .onnx file)")
        need = (info.offset or 0) + (info.length or 0)
        if info.length and f.stat().st_size < need:
            raise GraphError(f"{p}: tensor {t.name!r} needs bytes up to {need} of {f}, which has "
                             f"{f.stat().st_size} (a truncated data file)")
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(p.parent))
    except Exception as e:  # the checker's refusals (a location outside the folder, ...)
        raise GraphError(f"{p}: cannot read its external weights: {str(e).splitlines()[0]}") from None


def from_onnx(model: Any, shapes: Mapping[str, Sequence[int]] | None = None, *, rnn: str = "scan") -> Graph:
    """Import an ``onnx.ModelProto`` (or a path to a .onnx file); ``shapes`` binds dynamic input
    dimensions; ``rnn`` is how LSTMs' recurrences import ("scan": one ``lstm_scan`` node, or "unroll")."""
    onnx = onnx_module()
    if isinstance(model, (str, Path)):
        model = read_model(model)
    if not isinstance(model, onnx.ModelProto):
        raise GraphError(f"from_onnx needs an onnx.ModelProto or a path, got {type(model).__name__}")
    return Importer(model, shapes, rnn).run()


def load_onnx(path: str | Path, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    return from_onnx(Path(path), shapes)
