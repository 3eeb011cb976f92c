"""Text form of the IR, close to TVM's: ``for (i, 0, 512) parallel { ... }``.

Every node's ``str()`` comes from here (:mod:`.nodes` calls :func:`to_str`). Nodes are
told apart by class name (:func:`_is` looks along the class's bases, like
``isinstance``), so this module needs nothing from :mod:`.nodes` (which imports it).
"""

from __future__ import annotations

from typing import Any

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


def _is(node: Any, *names: str) -> bool:
    """``isinstance(node, nodes.X)`` for any X in ``names``, by class name."""
    return any(c.__name__ in names for c in type(node).__mro__)


def expr_str(e: Any) -> str:
    if not _is(e, "Expr"):
        return str(e)
    if _is(e, "Var"):
        return e.name
    if _is(e, "IntImm"):
        if e.dtype == "bool":
            return "True" if e.value else "False"
        return str(e.value) if e.dtype in ("int32",) else f"{e.dtype}({e.value})"
    if _is(e, "FloatImm"):
        return f"{e.value!r}f" if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
    if _is(e, "Cast"):
        return f"{e.dtype}({expr_str(e.value)})"
    if _is(e, "BinOp"):
        if e.op in _SYM:
            return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
        return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
    if _is(e, "Cmp", "Logic"):
        return f"({expr_str(e.a)} {_SYM[e.op]} {expr_str(e.b)})"
    if _is(e, "Not"):
        return f"!{expr_str(e.a)}"
    if _is(e, "Select"):
        name = "if_then_else" if e.lazy else "select"
        return f"{name}({expr_str(e.cond)}, {expr_str(e.t)}, {expr_str(e.f)})"
    if _is(e, "Call"):
        return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"
    if _is(e, "CallExtern"):
        return f"call_extern({e.name!r}, {', '.join(expr_str(a) for a in e.args)})"
    if _is(e, "CallPacked"):
        return f"call_packed({e.name!r}, {', '.join(expr_str(a) for a in e.args)})"
    if _is(e, "AddressOf"):
        return f"&{expr_str(e.value)}"
    if _is(e, "ElemOffset"):
        return f"elem_offset({expr_str(e.value)})"
    if _is(e, "TensorStride"):
        return f"stride({e.tensor.name}, {e.dim})"
    if _is(e, "TensorRead"):
        return f"{e.tensor.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    if _is(e, "Reduce"):
        axes = ", ".join(f"{iv.var.name}:[{expr_str(iv.dom.min)}, {expr_str(iv.dom.extent)})" for iv in e.axis)
        where = "" if e.condition is None else f", where={expr_str(e.condition)}"
        return f"reduce({e.combiner.name}, {expr_str(e.source)}, axis=[{axes}]{where})"
    if _is(e, "BufferLoad"):
        return f"{e.buffer.name}[{expr_str(e.index)}]"
    if _is(e, "Ramp"):
        return f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})"
    if _is(e, "Broadcast"):
        return f"x{e.lanes}({expr_str(e.value)})"
    return repr(e)  # pragma: no cover


def _lines(s: Any, ind: str, out: list[str]) -> None:
    if _is(s, "Seq"):
        for x in s.stmts:
            _lines(x, ind, out)
    elif _is(s, "For"):
        kind = "" if s.kind == "serial" else f" {s.kind}"
        if s.thread_tag:
            kind += f"({s.thread_tag})"
        out.append(f"{ind}for ({s.var.name}, {expr_str(s.min)}, {expr_str(s.extent)}){kind} {{")
        _lines(s.body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif _is(s, "ProducerStore"):
        out.append(f"{ind}{s.tensor.name}[{', '.join(expr_str(i) for i in s.indices)}] = {expr_str(s.value)}")
    elif _is(s, "BufferStore"):
        out.append(f"{ind}{s.buffer.name}[{expr_str(s.index)}] = {expr_str(s.value)}")
    elif _is(s, "ProducerRealize"):
        rng = ", ".join(f"{expr_str(m)}:{expr_str(e)}" for m, e in s.bounds)
        out.append(f"{ind}realize {s.tensor.name}[{rng}] {s.scope} {{")
        _lines(s.body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif _is(s, "Allocate"):
        shape = ", ".join(expr_str(x) for x in s.buffer.shape)
        out.append(f"{ind}allocate {s.buffer.name}[{s.buffer.dtype} * {shape}] {s.buffer.scope}")
        _lines(s.body, ind, out)
    elif _is(s, "IfThenElse"):
        out.append(f"{ind}if {expr_str(s.cond)} {{")
        _lines(s.then_case, ind + "  ", out)
        if s.else_case is not None:
            out.append(f"{ind}}} else {{")
            _lines(s.else_case, ind + "  ", out)
        out.append(f"{ind}}}")
    elif _is(s, "AttrStmt"):
        out.append(f"{ind}// attr {s.key} = {expr_str(s.value)}")
        _lines(s.body, ind, out)
    elif _is(s, "LetStmt"):
        out.append(f"{ind}let {s.var.name} = {expr_str(s.value)}")
        _lines(s.body, ind, out)
    elif _is(s, "Evaluate"):
        out.append(f"{ind}{expr_str(s.value)}")
    else:  # pragma: no cover
        out.append(f"{ind}{s!r}")


def stmt_str(s: Any) -> str:
    out: list[str] = []
    _lines(s, "", out)
    return "\n".join(out)


def func_str(f: Any) -> str:
    params = []
    for p in f.params:
        if _is(p, "Buffer"):
            params.append(f"{p.name}: {p.dtype}[{', '.join(expr_str(x) for x in p.shape)}]")
        else:
            params.append(f"{p.name}: {p.dtype}")
    out = [f"primfn {f.name}({', '.join(params)}) {{"]
    _lines(f.body, "  ", out)
    out.append("}")
    return "\n".join(out)


def to_str(node: Any) -> str:
    """Readable text of any IR node."""
    if _is(node, "PrimFunc"):
        return func_str(node)
    if _is(node, "Stmt"):
        return stmt_str(node)
    return expr_str(node)
