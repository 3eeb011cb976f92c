"""Configuration spaces (AutoTVM's ``ConfigSpace``): the knobs a template defines and the points in them.

A template calls ``cfg.define_split / define_knob / define_reorder / define_annotate`` on the
:class:`ConfigSpace` while the space is being built (``autotvm.task.create``), and reads
``cfg["name"]`` on a :class:`ConfigEntity` (one point) while it is instantiated for a
measurement. A point's index is mixed-radix over the knobs in definition order: the first
knob varies fastest. :class:`FallbackConfigEntity` is the point used untuned: the template
fills it with its hand-picked choice (so it prints and has an index where the space has it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ConfigSpace", "ConfigEntity", "FallbackConfigEntity", "SplitEntity", "OtherOptionEntity", "ReorderEntity",
    "AnnotateEntity", "KnobError",
]


class KnobError(KeyError):
    """A knob that the space does not define (or a value it does not allow)."""

    def __str__(self) -> str:
        return str(self.args[0])


# ---------------------------------------------------------------------------- entities (one knob's value)


@dataclass(frozen=True)
class SplitEntity:
    """Factors of one split, outermost first (their product is the extent)."""

    size: tuple[int, ...]
    kind = "split"

    @property
    def val(self) -> list[int]:
        return list(self.size)

    def apply(self, s: Any, stage: Any, axis: Any) -> list[Any]:
        """Split ``axis`` of ``stage`` (``s[op]`` or a Stage) by the inner factors; returns the loops outer->inner."""
        st = s[stage] if not hasattr(stage, "split") else stage
        loops = []
        for f in reversed(self.size[1:]):
            axis, inner = st.split(axis, factor=f)
            loops.append(inner)
        loops.append(axis)
        return loops[::-1]

    def to_json(self) -> Any:
        return list(self.size)


@dataclass(frozen=True)
class OtherOptionEntity:
    """One value of a ``define_knob`` list."""

    val: Any
    kind = "knob"

    def to_json(self) -> Any:
        return self.val


@dataclass(frozen=True)
class ReorderEntity:
    """A permutation of a stage's axes."""

    perm: tuple[int, ...]
    kind = "reorder"

    @property
    def val(self) -> list[int]:
        return list(self.perm)

    def apply(self, s: Any, stage: Any, axes: Sequence[Any]) -> list[Any]:
        st = s[stage] if not hasattr(stage, "reorder") else stage
        ordered = [axes[i] for i in self.perm]
        st.reorder(*ordered)
        return ordered

    def to_json(self) -> Any:
        return list(self.perm)


@dataclass(frozen=True)
class AnnotateEntity:
    """One annotation per axis: ``none``, ``unroll``, ``vec`` (vectorize) or ``parallel``."""

    anns: tuple[str, ...]
    kind = "annotate"

    @property
    def val(self) -> list[str]:
        return list(self.anns)

    def apply(self, s: Any, stage: Any, axes: Sequence[Any]) -> None:
        st = s[stage] if not hasattr(stage, "unroll") else stage
        for ax, ann in zip(axes, self.anns):
            if ann == "unroll":
                st.unroll(ax)
            elif ann == "vec":
                st.vectorize(ax)
            elif ann == "parallel":
                st.parallel(ax)

    def to_json(self) -> Any:
        return list(self.anns)


_ENTITY = {"split": lambda v: SplitEntity(tuple(int(x) for x in v)), "knob": OtherOptionEntity,
           "reorder": lambda v: ReorderEntity(tuple(int(x) for x in v)),
           "annotate": lambda v: AnnotateEntity(tuple(str(x) for x in v))}


def entity_from_json(kind: str, value: Any) -> Any:
    """The entity of a knob of ``kind`` (split, knob, reorder, annotate) from its JSON value."""
    if kind not in _ENTITY:
        raise ValueError(f"unknown knob kind {kind!r} (split, knob, reorder, annotate)")
    return _ENTITY[kind](value)


# ---------------------------------------------------------------------------- spaces (one knob's choices)


def _factorizations(n: int, parts: int, allowed: Callable[[int], bool]) -> list[tuple[int, ...]]:
    """Every way of writing ``n`` as an ordered product of ``parts`` factors (inner ones ``allowed``)."""
    if parts == 1:
        return [(n,)]
    out = []
    for d in range(1, n + 1):
        if n % d == 0 and allowed(d):
            out += [rest + (d,) for rest in _factorizations(n // d, parts - 1, allowed)]
    return out


@dataclass
class _Space:
    name: str
    kind: str
    entities: list[Any]
    #: the entity a record written before this knob existed was measured with (None: required)
    absent: Any = None

    def __len__(self) -> int:
        return len(self.entities)


# ---------------------------------------------------------------------------- the space and its points


class ConfigSpace:
    """The knobs of one task and the product of their choices."""

    is_fallback = False

    def __init__(self) -> None:
        self.space_map: dict[str, _Space] = {}
        self.flop = 0.0
        self.workload: Any = None  # the key the template's schedule consults records with

    # -- definitions (called by the template while the space is built)
    def _add(self, name: str, kind: str, entities: list[Any]) -> None:
        if not entities:
            raise ValueError(f"knob {name!r}: no choices (check the extent and the filter)")
        if name in self.space_map and self.space_map[name].entities != entities:
            raise ValueError(f"knob {name!r} defined twice with different choices")
        self.space_map[name] = _Space(name, kind, entities)

    def define_split(self, name: str, axis: Any, num_outputs: int = 2, policy: str = "factors",
                     max_factor: int | None = None, filter: Callable[[SplitEntity], bool] | None = None,  # noqa: A002
                     candidate: Sequence[Sequence[int]] | None = None) -> None:
        """Split an axis (an IterVar or an extent) into ``num_outputs`` factors: ``policy`` is
        ``factors`` (every divisor), ``power2`` (inner factors powers of two) or ``candidate``."""
        n = _extent(axis)
        if policy == "candidate":
            if not candidate:
                raise ValueError(f"define_split {name!r}: policy 'candidate' needs candidate=[...]")
            ents = [SplitEntity(tuple(int(v) for v in c)) for c in candidate]
            bad = [e.size for e in ents if math.prod(e.size) != n or len(e.size) != num_outputs]
            if bad:
                raise ValueError(f"define_split {name!r}: candidates {bad} are not {num_outputs} factors of {n}")
        elif policy in ("factors", "power2"):
            def ok(d: int) -> bool:
                return (max_factor is None or d <= max_factor) and (policy == "factors" or d & (d - 1) == 0)
            ents = [SplitEntity(f) for f in _factorizations(n, num_outputs, ok)]
        else:
            raise ValueError(f"define_split {name!r}: unknown policy {policy!r} (factors, power2, candidate)")
        if filter is not None:
            ents = [e for e in ents if filter(e)]
        self._add(name, "split", ents)

    def define_knob(self, name: str, candidate: Sequence[Any], absent: Any = None) -> None:
        """A knob taking one of the values in ``candidate``. ``absent``: a knob added to a template
        after logs were written: their records, which lack it, were measured with this value."""
        self._add(name, "knob", [OtherOptionEntity(v) for v in candidate])
        if absent is not None:
            self.space_map[name].absent = OtherOptionEntity(absent)

    def define_reorder(self, name: str, axes: Sequence[Any], policy: str = "all",
                       candidate: Sequence[Sequence[int]] | None = None) -> None:
        """Orders of ``axes``: ``all`` permutations, or the ``candidate`` permutations."""
        if policy == "all":
            perms = list(itertools.permutations(range(len(axes))))
        elif policy == "candidate" and candidate:
            perms = [tuple(p) for p in candidate]
        else:
            raise ValueError(f"define_reorder {name!r}: policy must be 'all' or 'candidate' with candidate=[...]")
        self._add(name, "reorder", [ReorderEntity(p) for p in perms])

    def define_annotate(self, name: str, axes: Sequence[Any], policy: str = "try_unroll",
                        candidate: Sequence[Sequence[str]] | None = None) -> None:
        """Annotations of ``axes``: ``try_unroll`` / ``try_vec`` / ``try_unroll_vec`` (each axis
        none or that), or the ``candidate`` lists."""
        opts = {"try_unroll": ["none", "unroll"], "try_vec": ["none", "vec"],
                "try_unroll_vec": ["none", "unroll", "vec"]}
        if policy in opts:
            combos = list(itertools.product(opts[policy], repeat=len(axes)))
        elif policy == "candidate" and candidate:
            combos = [tuple(c) for c in candidate]
        else:
            raise ValueError(f"define_annotate {name!r}: unknown policy {policy!r}")
        self._add(name, "annotate", [AnnotateEntity(tuple(c)) for c in combos])

    def add_flop(self, flop: float) -> None:
        self.flop += flop

    # -- the points
    def __len__(self) -> int:
        return math.prod(len(s) for s in self.space_map.values())

    def knob_names(self) -> list[str]:
        return list(self.space_map)

    def dims(self) -> list[int]:
        return [len(s) for s in self.space_map.values()]

    def get(self, index: int) -> ConfigEntity:
        """The point with this index (0 <= index < len(space))."""
        n = len(self)
        if not 0 <= index < n:
            raise IndexError(f"config index {index} is outside the space of {n} points")
        ents = {}
        t = index
        for name, sp in self.space_map.items():
            ents[name] = sp.entities[t % len(sp)]
            t //= len(sp)
        return ConfigEntity(index, ents, self)

    def __iter__(self) -> Iterator[ConfigEntity]:
        for i in range(len(self)):
            yield self.get(i)

    def index_of(self, knobs: dict[str, Any]) -> int:
        """The index of the point with these knob values (JSON values or entities)."""
        missing = [k for k, sp in self.space_map.items() if k not in knobs and sp.absent is None]
        extra = [k for k in knobs if k not in self.space_map]
        if extra:
            raise KnobError(f"knob(s) {extra} are not in this space (knobs: {self.knob_names()})")
        if missing:
            raise KnobError(f"knob(s) {missing} have no value")
        idx, mul = 0, 1
        for name, sp in self.space_map.items():
            v = knobs[name] if name in knobs else sp.absent
            ent = v if not isinstance(v, list | tuple | int | float | str | bool | type(None)) else \
                entity_from_json(sp.kind, v)
            if ent not in sp.entities:
                raise KnobError(f"knob {name!r}: value {ent.to_json()!r} is not one of its {len(sp)} choices")
            idx += sp.entities.index(ent) * mul
            mul *= len(sp)
        return idx

    def __getitem__(self, name: str) -> Any:
        # while the space is being built, a template reads the first choice (as AutoTVM does)
        if name not in self.space_map:
            raise KnobError(f"knob {name!r} is not defined (knobs: {self.knob_names()})")
        return self.space_map[name].entities[0]

    def __repr__(self) -> str:
        lines = [f"ConfigSpace ({len(self)} points)"]
        for i, (name, sp) in enumerate(self.space_map.items()):
            shown = ", ".join(repr(e.to_json()) for e in sp.entities[:6]) + (", ..." if len(sp) > 6 else "")
            lines.append(f"  {i:2d} {name}: {sp.kind}, {len(sp)} choices [{shown}]")
        return "\n".join(lines)


def _extent(axis: Any) -> int:
    if isinstance(axis, int):
        return axis
    dom = getattr(axis, "dom", None)
    ext = getattr(dom, "extent", None) if dom is not None else None
    if ext is None:
        raise ValueError(f"define_split: {axis!r} is neither an int extent nor an IterVar with a domain")
    return int(getattr(ext, "value", ext))


class ConfigEntity:
    """One point: its index in the space and the value of every knob."""

    is_fallback = False

    def __init__(self, index: int | None, entity_map: dict[str, Any], space: ConfigSpace | None = None) -> None:
        self.index = index
        self.entity_map = dict(entity_map)
        self.space = space
        self.flop = space.flop if space is not None else 0.0
        self.workload = space.workload if space is not None else None

    # defining knobs on a point is a no-op (the template runs the same code for space and point),
    # but a knob the point does not have is an error
    def define_split(self, name: str, *a: Any, **kw: Any) -> None:
        self._need(name)

    define_knob = define_reorder = define_annotate = define_split

    def add_flop(self, flop: float) -> None:
        if self.space is None:
            self.flop += flop

    def _need(self, name: str) -> None:
        if name not in self.entity_map:
            raise KnobError(f"knob {name!r} is not in this config (knobs: {list(self.entity_map)})")

    def __getitem__(self, name: str) -> Any:
        self._need(name)
        return self.entity_map[name]

    def knobs(self) -> dict[str, Any]:
        """Knob name -> JSON value."""
        return {k: e.to_json() for k, e in self.entity_map.items()}

    def kinds(self) -> dict[str, str]:
        return {k: e.kind for k, e in self.entity_map.items()}

    def get_flatten_feature(self) -> list[float]:
        """The knob values as numbers (split factors as log2, other knobs as their choice index)."""
        out: list[float] = []
        for name, e in self.entity_map.items():
            if e.kind == "split":
                out += [math.log2(f) for f in e.size]
            elif e.kind == "knob":
                sp = self.space.space_map[name] if self.space is not None else None
                v = e.val
                out.append(float(v) if isinstance(v, int | float) else
                           float(sp.entities.index(e)) if sp is not None else 0.0)
            elif e.kind == "reorder":
                out += [float(p) for p in e.perm]
            else:
                out += [float(["none", "unroll", "vec", "parallel"].index(a)) for a in e.anns]
        return out

    def to_json_dict(self) -> dict[str, Any]:
        return {"index": self.index, "knobs": self.knobs(), "kinds": self.kinds()}

    @classmethod
    def from_json_dict(cls, d: dict[str, Any], space: ConfigSpace | None = None) -> ConfigEntity:
        knobs, kinds = d["knobs"], d.get("kinds", {})
        if space is not None:
            idx = space.index_of(knobs)
            return space.get(idx)
        return cls(d.get("index"), {k: entity_from_json(kinds.get(k, "knob"), v) for k, v in knobs.items()})

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k}={v!r}" for k, v in self.knobs().items())
        tag = "FallbackConfig" if self.is_fallback else "Config"
        return f"{tag}(index={self.index}, {knobs})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigEntity) and self.knobs() == other.knobs()

    def __hash__(self) -> int:
        return hash(repr(sorted(self.knobs().items())))


class FallbackConfigEntity(ConfigEntity):
    """The untuned point: the template records its hand-picked choice here (:meth:`set`)."""

    is_fallback = True

    def __init__(self, space: ConfigSpace | None = None) -> None:
        super().__init__(None, {}, space)

    def define_split(self, name: str, *a: Any, **kw: Any) -> None:  # knobs are whatever the template sets
        pass

    define_knob = define_reorder = define_annotate = define_split

    def set(self, name: str, value: Any) -> None:
        """Record the hand-picked value of a knob (a JSON value of that knob's kind)."""
        kind = self.space.space_map[name].kind if self.space is not None and name in self.space.space_map else "knob"
        self.entity_map[name] = entity_from_json(kind, value)
        if self.space is not None and set(self.entity_map) == set(self.space.space_map):
            try:
                self.index = self.space.index_of(self.knobs())
            except KnobError:
                self.index = None  # the hand pick lies outside the space
