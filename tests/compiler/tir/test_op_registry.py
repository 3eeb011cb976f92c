"""TVM's operator registry (``tvm.ir``): declaring an operator, attributes by level, lowering
rules per target, the decorator forms, ``call.op.name``, and the errors for bad registrations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import vdla
from vdla.compiler.tir import op_registry
from vdla.compiler.tir.nodes import Call, IRError, Var
from vdla.compiler.tir.op_registry import Op, OpRegistryError, register_intrin_lowering, register_op_attr


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    saved = op_registry.snapshot()
    yield
    op_registry.restore(saved)


def test_tvm_ir_names() -> None:
    assert vdla.ir.register_op_attr is register_op_attr and vdla.ir.register_intrin_lowering is register_intrin_lowering
    from vdla.ir import register_intrin_lowering as f  # TVM's import path

    assert f is register_intrin_lowering
    assert vdla.tir.CallEffectKind.Pure == 1 and vdla.tir.Call is Call


def test_declare_then_call() -> None:
    x = Var("x", "float32")
    with pytest.raises(IRError, match="unknown intrinsic 'tir.myop'"):
        vdla.tir.call_intrin("float32", "tir.myop", x)
    with pytest.raises(OpRegistryError, match="'tir.myop' is not registered"):
        Op.get("tir.myop")
    register_op_attr("tir.myop", "TCallEffectKind", vdla.tir.CallEffectKind.Pure)
    c = vdla.tir.call_intrin("float32", "tir.myop", x)
    assert isinstance(c, Call) and c.op.name == "tir.myop" and c.args[0] is x
    assert Op.get("tir.myop").get_attr("TCallEffectKind") == vdla.tir.CallEffectKind.Pure
    assert vdla.te.exp(x).op.name == "tir.exp"  # a built-in's operator


def test_levels_and_targets() -> None:
    def rule_a(op: Call) -> Call:
        return op

    def rule_b(op: Call) -> Call:
        return op

    register_intrin_lowering("tir.exp", target="cuda", f=rule_a, level=20)
    register_intrin_lowering("tir.exp", target="cuda", f=rule_b, level=10)
    assert op_registry.lowering_rule("tir.exp", ("cuda",)) is rule_a  # the higher level stays
    register_intrin_lowering("tir.exp", target="nvptx", f=rule_b, level=10)
    assert op_registry.lowering_rule("tir.exp", ("nvptx", "cuda")) is rule_b
    assert op_registry.lowering_rule("tir.exp", ("llvm",)) is None
    with pytest.raises(OpRegistryError, match="already registered at level 20"):
        register_intrin_lowering("tir.exp", target="cuda", f=rule_b, level=20)

    @register_intrin_lowering("tir.log", target="cuda", level=30)
    def rule_c(op: Call) -> Call:
        return op

    assert op_registry.lowering_rule("tir.log", ("cuda",)) is rule_c

    @register_op_attr("tir.log", "FMyAttr")
    def attr(x: int) -> int:
        return x

    assert Op.get("tir.log").get_attr("FMyAttr") is attr


def test_bad_registrations() -> None:
    with pytest.raises(OpRegistryError, match="non-empty string"):
        register_op_attr("", "TCallEffectKind", 1)
    with pytest.raises(OpRegistryError, match="level must be a positive int"):
        register_op_attr("tir.exp", "X", 1, level=0)
    with pytest.raises(OpRegistryError, match="target must be a target kind"):
        register_intrin_lowering("tir.exp", target="", f=lambda op: op)
    with pytest.raises(OpRegistryError, match="f must be callable"):
        register_intrin_lowering("tir.exp", target="cuda", f=3)  # type: ignore[arg-type]
