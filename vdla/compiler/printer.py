"""Text form of the IR, close to TVM's: ``for (i, 0, 512) parallel { ... }``."""

from __future__ import annotations

from typing import Any

from . import ir

_SYM = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "eq": "==",
    "ne": "!=",
    "and": "&&",
    "or": "||",
}


def expr_str(e: Any) -> str:
    if not isinstance(e, ir.Expr):
        return str(e)
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.IntImm):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32",) else f"{e.dtype}({e.value})"
    if isinstance(e, ir.FloatImm):
        return f"{e.value!r}f" if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if isinstance(e, ir.Cast):
        return f"{e.dtype}({expr_str(e.value)})"
    if isinstance(e, ir.BinOp):
        if e.op in _SYM:
            return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
        return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
    if isinstance(e, ir.Cmp | ir.Logic):
        return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
    if isinstance(e, ir.Not):
        return f"!{expr_str(e.a)}"
    if isinstance(e, ir.Select):
        name = "if_then_else" if e.lazy else "select"
        return f"{name}({expr_str(e.cond)}, {expr_str(e.t)}, {expr_str(e.f)})"
    if isinstance(e, ir.Call):
        return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, ir.CallExtern):
        return f"call_extern({e.name!r}, {', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, ir.AddressOf):
        return f"&{expr_str(e.value)}"
    if isinstance(e, ir.ElemOffset):
        return f"elem_offset({expr_str(e.value)})"
    if isinstance(e, ir.TensorStride):
        return f"stride({e.tensor.name}, {e.dim})"
    if isinstance(e, ir.TensorRead):
        return f"{e.tensor.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    if isinstance(e, ir.Reduce):
        axes = ", ".join(f"{iv.var.name}:[{expr_str(iv.dom.min)}, {expr_str(iv.dom.extent)})" for iv in e.axis)
        where = "" if e.condition is None else f", where={expr_str(e.condition)}"
        return f"reduce({e.combiner.name}, {expr_str(e.source)}, axis=[{axes}]{where})"
    if isinstance(e, ir.BufferLoad):
        return f"{e.buffer.name}[{expr_str(e.index)}]"
    if isinstance(e, ir.Ramp):
        return f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})"
    if isinstance(e, ir.Broadcast):
        return f"x{e.lanes}({expr_str(e.value)})"
    return repr(e)  # pragma: no cover


def _lines(s: Any, ind: str, out: list[str]) -> None:
    if isinstance(s, ir.Seq):
        for x in s.stmts:
            _lines(x, ind, out)
    elif isinstance(s, ir.For):
        kind = "" if s.kind == "serial" else f" {s.kind}"
        if s.thread_tag:
            kind += f"({s.thread_tag})"
        out.append(f"{ind}for ({s.var.name}, {expr_str(s.min)}, {expr_str(s.extent)}){kind} {{")
        _lines(s.body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, ir.ProducerStore):
        out.append(f"{ind}{s.tensor.name}[{', '.join(expr_str(i) for i in s.indices)}] = {expr_str(s.value)}")
    elif isinstance(s, ir.BufferStore):
        out.append(f"{ind}{s.buffer.name}[{expr_str(s.index)}] = {expr_str(s.value)}")
    elif isinstance(s, ir.ProducerRealize):
        rng = ", ".join(f"{expr_str(m)}:{expr_str(e)}" for m, e in s.bounds)
        out.append(f"{ind}realize {s.tensor.name}[{rng}] {s.scope} {{")
        _lines(s.body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, ir.Allocate):
        shape = ", ".join(expr_str(x) for x in s.buffer.shape)
        out.append(f"{ind}allocate {s.buffer.name}[{s.buffer.dtype} * {shape}] {s.buffer.scope}")
        _lines(s.body, ind, out)
    elif isinstance(s, ir.IfThenElse):
        out.append(f"{ind}if {expr_str(s.cond)} {{")
        _lines(s.then_case, ind + "  ", out)
        if s.else_case is not None:
            out.append(f"{ind}}} else {{")
            _lines(s.else_case, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, ir.AttrStmt):
        out.append(f"{ind}// attr {s.key} = {expr_str(s.value)}")
        _lines(s.body, ind, out)
    elif isinstance(s, ir.LetStmt):
        out.append(f"{ind}let {s.var.name} = {expr_str(s.value)}")
        _lines(s.body, ind, out)
    elif isinstance(s, ir.Evaluate):
        out.append(f"{ind}{expr_str(s.value)}")
    else:  # pragma: no cover
        out.append(f"{ind}{s!r}")


def stmt_str(s: Any) -> str:
    out: list[str] = []
    _lines(s, "", out)
    return "\n".join(out)


def func_str(f: ir.PrimFunc) -> str:
    params = []
    for p in f.params:
        if isinstance(p, ir.Buffer):
            params.append(f"{p.name}: {p.dtype}[{', '.join(expr_str(x) for x in p.shape)}]")
        else:
            params.append(f"{p.name}: {p.dtype}")
    out = [f"primfn {f.name}({', '.join(params)}) {{"]
    _lines(f.body, "  ", out)
    out.append("}")
    return "\n".join(out)


def to_str(node: Any) -> str:
    """Readable text of any IR node."""
    if isinstance(node, ir.PrimFunc):
        return func_str(node)
    if isinstance(node, ir.Stmt):
        return stmt_str(node)
    return expr_str(node)
