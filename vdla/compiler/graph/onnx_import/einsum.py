"""Einsum (opset 12+) as the graph operators the strategies map: per pair of operands, the
indices summed away by one operand alone become a ``reduce_sum``, each operand is transposed
to ``[batch..., free..., contracted...]`` (the right one ``[batch..., contracted..., free...]``)
and reshaped to one ``[batch..., M, K]`` x ``[batch..., K, N]`` ``matmul`` (a constant right
operand without batch indices: a ``dense`` with its transposed matrix, as MatMul imports), whose
result is reshaped and transposed to the output's order. One operand: a ``reduce_sum`` and a
``transpose``; three or more: contracted pairwise, left to right.

Transformers' exports: ``bhid,bhjd->bhij`` (Q @ Kᵀ), ``bhij,bhjd->bhid`` (P @ V),
``bij,bjk->bik``, ``ij,jk->ik``, ``bi,bi->b``, ``i,j->ij``, ``...ij,...jk->...ik``; the
implicit form (no ``->``: the indices seen once, sorted) and ellipses (broadcast batch
dimensions) too. A repeated index within one operand (a diagonal, a trace) is an error naming
the node and the equation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["EinsumOps", "parse_equation"]


class EinsumError(ValueError):
    """An equation this importer cannot decompose (the message says why)."""


def parse_equation(eq: str, ranks: list[int]) -> tuple[list[str], str]:
    """(each operand's indices, the output's indices), one character per axis: ellipses become
    characters of their own (right-aligned across operands, as numpy broadcasts them)."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise EinsumError(f"{len(terms)} operand(s) in the equation, {len(ranks)} input(s)")
    for t in terms + ([rhs] if arrow else []):
        rest = t.replace("...", "", 1)
        if "." in rest or not all(c.isascii() and c.isalpha() for c in rest):
            raise EinsumError(f"bad term {t!r} (letters and at most one '...')")
    ell_ranks = []
    for t, r in zip(terms, ranks):
        named = len(t.replace("...", ""))
        e = r - named if "..." in t else 0
        if e < 0 or ("..." not in t and named != r):
            raise EinsumError(f"term {t!r} does not fit an input of rank {r}")
        ell_ranks.append(e)
    ell = "".join(chr(0x3B1 + k) for k in range(max(ell_ranks, default=0)))  # α, β, ...: never in an equation
    terms = [t.replace("...", ell[len(ell) - e:] if e else "") for t, e in zip(terms, ell_ranks)]
    for t in terms:
        dup = sorted({c for c in t if t.count(c) > 1})
        if dup:
            raise EinsumError(f"index {dup[0]!r} repeats within one operand (a diagonal or trace is not supported)")
    if arrow:
        if "..." not in rhs and any(ell_ranks):
            raise EinsumError("the output drops the '...' dimensions (sum them with explicit letters)")
        out = rhs.replace("...", ell)
    else:
        seen = "".join(terms)
        out = ell + "".join(sorted(c for c in set(seen) if c not in ell and seen.count(c) == 1))
    dup = sorted({c for c in out if out.count(c) > 1})
    if dup:
        raise EinsumError(f"output index {dup[0]!r} appears twice")
    missing = [c for c in out if not any(c in t for t in terms)]
    if missing:
        raise EinsumError(f"output index {missing[0]!r} is in no operand")
    return terms, out


class EinsumOps:
    def op_Einsum(self, n: Any, i: int) -> None:
        a = self.attrs(n, i, {"equation": None})
        eq = a["equation"]
        if not eq:
            raise self.err(n, i, "attribute equation is required")
        xs = [self.value(v) for v in n.input]
        shapes = [tuple(self.g.type_of(x).shape) for x in xs]
        try:
            terms, out = parse_equation(eq, [len(s) for s in shapes])
            sizes: dict[str, int] = {}
            for t, s in zip(terms, shapes):
                for c, d in zip(t, s):
                    if sizes.get(c, 1) != d and d != 1 and sizes.get(c, 1) != 1:
                        raise EinsumError(f"index {c!r} is {sizes[c]} in one operand and {d} in another")
                    sizes[c] = max(sizes.get(c, 1), d)
            if any(self.g.type_of(x).dtype != "float32" for x in xs):
                raise EinsumError("float32 operands only")
            ops = list(zip(xs, terms))
            while len(ops) > 2:  # contract the first two, keeping the indices read later or output
                later = out + "".join(t for _, t in ops[2:])
                (x, tx), (y, ty) = ops[0], ops[1]
                keep = [c for c in dict.fromkeys(tx + ty) if c in later]
                ops[:2] = [self._einsum_pair(n, i, x, tx, y, ty, keep, f"einsum{len(ops)}", None)]
            if len(ops) == 2:
                (x, tx), (y, ty) = ops
                self._einsum_pair(n, i, x, tx, y, ty, list(out), "einsum", out)
            else:
                self._einsum_one(n, i, *ops[0], out)
        except EinsumError as e:
            raise self.err(n, i, f"equation {eq!r}: {e}") from None

    # -- helpers ---------------------------------------------------------------------------
    def _einsum_sum(self, n: Any, x: str, t: str, drop: list[str], suffix: str) -> tuple[str, str]:
        """``x`` (indices ``t``) summed over the indices ``drop``."""
        if not drop:
            return x, t
        axes = tuple(t.index(c) for c in drop)
        if x in self.g.consts:
            arr = np.sum(self.g.consts[x], axis=axes, dtype=np.float32)
            x = self.g.add_const(f"{x}.{suffix}", np.ascontiguousarray(arr))
        else:
            x = self.helper_node(n, "reduce_sum", [x], suffix, axes=axes, keepdims=0)
        return x, "".join(c for c in t if c not in drop)

    def _einsum_arrange(self, n: Any, x: str, t: str, order: str, shape: tuple[int, ...], suffix: str) -> str:
        """``x`` (indices ``t``) transposed to ``order`` and reshaped to ``shape``."""
        perm = tuple(t.index(c) for c in order)
        same = perm == tuple(range(len(perm)))
        if x in self.g.consts:  # a weight stays a constant
            if same and tuple(self.g.consts[x].shape) == tuple(shape):
                return x
            return self.g.add_const(f"{x}.{suffix}", np.ascontiguousarray(self.g.consts[x].transpose(perm).reshape(shape)))
        if not same:
            x = self.helper_node(n, "transpose", [x], f"{suffix}_t", perm=perm)
        return self.reshape(n, x, shape, f"{suffix}_r")

    def _einsum_tail(self, n: Any, steps: list[tuple[str, list[str], dict[str, Any], str]]) -> None:
        """Add ``steps`` ((op, inputs, attrs, suffix); inputs None: the previous step's value), the
        last one as the node's output."""
        x = None
        for k, (op, ins, at, suffix) in enumerate(steps):
            ins = ins if ins is not None else [x]
            if k == len(steps) - 1:
                self.emit(n, op, ins, **at)
            else:
                x = self.helper_node(n, op, ins, suffix, **at)

    def _einsum_one(self, n: Any, i: int, x: str, t: str, out: str) -> None:
        drop = [c for c in t if c not in out]
        steps: list[tuple[str, list[str] | None, dict[str, Any], str]] = []
        if drop:
            steps.append(("reduce_sum", [x], {"axes": tuple(t.index(c) for c in drop), "keepdims": 0}, "einsum_sum"))
            t = "".join(c for c in t if c in out)
        perm = tuple(t.index(c) for c in out)
        if perm != tuple(range(len(perm))):
            steps.append(("transpose", None if steps else [x], {"perm": perm}, "einsum_t"))
        if not steps:
            self.env[n.output[0]] = x
            return
        self._einsum_tail(n, steps)

    def _einsum_pair(self, n: Any, i: int, x: str, tx: str, y: str, ty: str, keep: list[str],
                     suffix: str, out: str | None) -> tuple[str, str]:
        """Contract ``x`` (indices ``tx``) with ``y`` (``ty``) keeping the indices ``keep``: the
        node's output in the order ``out``, or (an intermediate value, its indices) when None."""
        # an index of one operand alone that is not kept: summed away first
        x, tx = self._einsum_sum(n, x, tx, [c for c in tx if c not in ty and c not in keep], f"{suffix}_sa")
        y, ty = self._einsum_sum(n, y, ty, [c for c in ty if c not in tx and c not in keep], f"{suffix}_sb")
        batch = [c for c in tx if c in ty and c in keep]
        con = [c for c in tx if c in ty and c not in keep]
        fa = [c for c in tx if c not in ty]
        fb = [c for c in ty if c not in tx]
        xs, ys = dict(zip(tx, self.g.type_of(x).shape)), dict(zip(ty, self.g.type_of(y).shape))
        for c in con:
            if xs[c] != ys[c]:
                raise EinsumError(f"summed index {c!r} is {xs[c]} in one operand and {ys[c]} in the other")
        m, k, nn = math.prod(xs[c] for c in fa), math.prod(xs[c] for c in con), math.prod(ys[c] for c in fb)
        res = "".join(batch + fa + fb)
        bshape = tuple(max(xs[c], ys[c]) for c in batch)  # batch dimensions broadcast (1 and B)
        res_shape = bshape + tuple(xs[c] for c in fa) + tuple(ys[c] for c in fb)
        if not batch and y in self.g.consts:
            # a constant matrix on the right: dense with its transpose (the MatMul import's form)
            a2 = self._einsum_arrange(n, x, tx, "".join(fa + con), (m, k), f"{suffix}_a")
            w = self._einsum_arrange(n, y, ty, "".join(fb + con), (nn, k), f"{suffix}_w")
            first = ("dense", [a2, w], {}, f"{suffix}_dense")
        else:
            a2 = self._einsum_arrange(n, x, tx, "".join(batch + fa + con),
                                      tuple(xs[c] for c in batch) + (m, k), f"{suffix}_a")
            b2 = self._einsum_arrange(n, y, ty, "".join(batch + con + fb),
                                      tuple(ys[c] for c in batch) + (k, nn), f"{suffix}_b")
            first = ("matmul", [a2, b2], {}, f"{suffix}_mm")
        steps: list[tuple[str, list[str] | None, dict[str, Any], str]] = [first]
        mm_shape = bshape + (m, nn)
        if mm_shape != res_shape:
            steps.append(("reshape", None, {"shape": res_shape}, f"{suffix}_r"))
        if out is None:
            v = None
            for op, ins, at, sfx in steps:
                v = self.helper_node(n, op, ins if ins is not None else [v], sfx, **at)
            return v, res
        perm = tuple(res.index(c) for c in out)
        if perm != tuple(range(len(perm))):
            steps.append(("transpose", None, {"perm": perm}, f"{suffix}_t"))
        self._einsum_tail(n, steps)
        return n.output[0], out
