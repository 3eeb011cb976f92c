"""ONNX Einsum: one-node models built with onnx.helper at opsets 12 to 21, imported as
transpose / reshape / reduce_sum / matmul (or dense) graph nodes, run on the numpy reference
against onnxruntime; the transformers' contractions compile for llvm and cuda with no host
step; an equation the importer cannot decompose is an error naming the node and the equation.
Seeds are the case index."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from support.onnx_models import feeds_for, model, reference  # noqa: E402
from support.strategy import check_on_every_target  # noqa: E402

from vdla.compiler.graph import run  # noqa: E402
from vdla.compiler.graph.ir import GraphError  # noqa: E402
from vdla.compiler.graph.onnx_import import from_onnx  # noqa: E402

OPSETS = tuple(range(12, 22))

#: (equation, input shapes, constant inputs by position): what transformers and friends export
CASES = [
    ("bhid,bhjd->bhij", [(2, 3, 5, 4), (2, 3, 6, 4)], {}),  # attention scores Q @ Kᵀ
    ("bhij,bhjd->bhid", [(2, 3, 5, 6), (2, 3, 6, 4)], {}),  # attention output P @ V
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], {}),
    ("ij,jk->ik", [(3, 4), (4, 5)], {}),
    ("ij,jk", [(3, 4), (4, 5)], {}),  # implicit output: the indices seen once, sorted
    ("bi,bi->b", [(4, 6), (4, 6)], {}),  # a batched dot product
    ("i,i->", [(7,), (7,)], {}),  # a dot product: a scalar
    ("i,j->ij", [(3,), (4,)], {}),  # an outer product
    ("bid,de->bie", [(2, 5, 4), (4, 6)], {1: (4, 6)}),  # a projection by a constant: dense
    ("bnd,hd->bnh", [(2, 5, 4), (6, 4)], {1: (6, 4)}),  # nn.Linear's weight as stored
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 2)], {}),  # ellipsis: broadcast batch dimensions
    ("bhqd,bkd->bhqk", [(2, 3, 4, 5), (2, 6, 5)], {}),  # multi-query attention: one K for every head
    ("ij->ji", [(3, 4)], {}),
    ("bij->bj", [(2, 3, 4)], {}),  # one operand: a sum
    ("bijk->bkji", [(2, 3, 4, 5)], {}),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)], {}),  # three operands: pairwise, left to right
    ("bhwc,hkc->bhwk", [(2, 3, 4, 5), (3, 6, 5)], {}),  # Swin's relative-position style contraction
    ("abc,abd->cd", [(3, 4, 5), (3, 4, 6)], {}),  # two summed indices
    ("ijk,k->ij", [(3, 4, 5), (5,)], {}),
]


def _build(eq: str, shapes: list, consts: dict, opset: int, seed: int):
    names = [f"x{k}" for k in range(len(shapes))]
    rng = np.random.default_rng(seed)
    inits = {names[p]: rng.standard_normal(s).astype(np.float32) for p, s in consts.items()}
    inputs = {nm: s for nm, s in zip(names, shapes) if nm not in inits}
    node = helper.make_node("Einsum", names, ["y"], name="einsum_node", equation=eq)
    return model([node], inputs, opset, ("y",), inits), inputs


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize(("seed", "case"), list(enumerate(CASES)), ids=[c[0] for c in CASES])
def test_einsum_matches_onnxruntime(seed: int, case: tuple, opset: int) -> None:  # type: ignore[type-arg]
    eq, shapes, consts = case
    m, inputs = _build(eq, shapes, consts, opset, seed)
    feeds = feeds_for(inputs, seed)
    want, source = reference(m, feeds)
    g = from_onnx(m)
    assert {n.op for n in g.nodes} <= {"transpose", "reshape", "reduce_sum", "matmul", "dense"}, str(g)
    (got,) = run(g, feeds)
    want = np.asarray(want[0], np.float32)
    assert got.shape == want.shape, f"seed {seed}: shape {got.shape} vs {source} {want.shape}"
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"seed {seed}, reference {source}")


def test_constant_weight_imports_as_dense() -> None:
    m, _ = _build("bid,de->bie", [(2, 5, 4), (4, 6)], {1: (4, 6)}, 13, 0)
    assert [n.op for n in from_onnx(m).nodes] == ["reshape", "dense", "reshape"]


@pytest.mark.parametrize("eq", ["bhid,bhjd->bhij", "bhij,bhjd->bhid", "bij,bjk->bik", "bi,bi->b", "bid,de->bie"])
def test_transformer_contractions_compile_without_host_steps(eq: str) -> None:
    shapes, consts = next((s, c) for e, s, c in CASES if e == eq)
    m, _ = _build(eq, shapes, consts, 17, 0)
    check_on_every_target(from_onnx(m))


@pytest.mark.parametrize(("eq", "shapes", "msg"), [
    ("ii->i", [(3, 3)], "index 'i' repeats within one operand"),
    ("ii->", [(3, 3)], "a diagonal or trace is not supported"),
    ("ij,jk->ik", [(3, 4)], "2 operand(s) in the equation, 1 input(s)"),
    ("ijk->ij", [(3, 4)], "does not fit an input of rank 2"),
    ("ij->ijk", [(3, 4)], "output index 'k' is in no operand"),
    ("ij,jk->ik", [(3, 4), (5, 6)], "index 'j' is 4 in one operand and 5 in another"),
    ("i.j->ij", [(3, 4)], "bad term"),
])
def test_undecomposable_equation_names_node_and_equation(eq: str, shapes: list, msg: str) -> None:
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], name="einsum_node", equation=eq)
    m = model([node], dict(zip(names, shapes)), 13)
    with pytest.raises(GraphError) as e:
        from_onnx(m)
    text = str(e.value)
    assert "Einsum (opset 13) at node 'einsum_node'" in text and f"equation {eq!r}" in text and msg in text, text
