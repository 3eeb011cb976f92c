"""ConfigSpace / ConfigEntity: the four knob kinds, index <-> knob values, printing, bad knobs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler.autotvm import ConfigSpace, KnobError
from vdla.compiler.autotvm.space import FallbackConfigEntity


def _space() -> ConfigSpace:
    cfg = ConfigSpace()
    cfg.define_split("tile_x", 12, num_outputs=2)
    cfg.define_split("tile_y", 8, num_outputs=3, policy="power2")
    cfg.define_knob("unroll", [0, 1, 4])
    cfg.define_reorder("order", ["a", "b", "c"])
    cfg.define_annotate("ann", ["i", "j"], policy="try_unroll_vec")
    return cfg


@pytest.mark.parametrize("name, expected", [
    ("tile_x", [(12, 1), (6, 2), (4, 3), (3, 4), (2, 6), (1, 12)]),
    ("unroll", [0, 1, 4]),
])
def test_choices(name, expected) -> None:  # type: ignore[no-untyped-def]
    sp = _space().space_map[name]
    got = [e.size if sp.kind == "split" else e.val for e in sp.entities]
    assert got == expected


def test_sizes_and_products() -> None:
    cfg = _space()
    # 8 = a*b*c ordered, all factors powers of two: 10 ways; 3! orders; 3^2 annotations
    assert cfg.dims() == [6, 10, 3, 6, 9]
    assert len(cfg) == 6 * 10 * 3 * 6 * 9
    for e in cfg.space_map["tile_y"].entities:
        assert math.prod(e.size) == 8


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6 * 10 * 3 * 6 * 9 - 1))
def test_index_round_trip(index: int) -> None:
    cfg = _space()
    point = cfg.get(index)
    assert point.index == index
    assert cfg.index_of(point.knobs()) == index
    assert f"index={index}" in repr(point)


def test_first_knob_varies_fastest() -> None:
    cfg = _space()
    assert cfg.get(1)["tile_x"].size == (6, 2) and cfg.get(1)["unroll"].val == 0
    assert cfg.get(6)["tile_x"].size == (12, 1) and cfg.get(6)["tile_y"].size == cfg.space_map["tile_y"].entities[1].size


def test_printable() -> None:
    text = repr(_space())
    assert "ConfigSpace (9720 points)" in text and "tile_x: split, 6 choices" in text


def test_bad_knobs_are_named() -> None:
    cfg = _space()
    with pytest.raises(KnobError, match="'nope' is not defined"):
        cfg["nope"]
    with pytest.raises(KnobError, match="'nope'"):
        cfg.get(0)["nope"]
    with pytest.raises(KnobError, match=r"\['nope'\] are not in this space"):
        cfg.index_of({**cfg.get(0).knobs(), "nope": 1})
    with pytest.raises(KnobError, match="value 7 is not one of its 3 choices"):
        cfg.index_of({**cfg.get(0).knobs(), "unroll": 7})
    with pytest.raises(IndexError, match="outside the space"):
        cfg.get(len(cfg))
    with pytest.raises(ValueError, match="unknown policy"):
        cfg.define_split("z", 4, policy="magic")
    with pytest.raises(ValueError, match="no choices"):
        cfg.define_split("z", 7, filter=lambda e: e.size[-1] == 3)


def test_fallback_gets_index_when_in_space() -> None:
    cfg = _space()
    fb = FallbackConfigEntity(cfg)
    want = cfg.get(1234)
    for k, v in want.knobs().items():
        fb.set(k, v)
    assert fb.index == 1234 and fb.is_fallback and repr(fb).startswith("FallbackConfig(index=1234")


def test_a_knob_added_later_reads_old_records_as_its_absent_value() -> None:
    """A record written before a template grew a knob (no value for it) is the point with the
    knob's ``absent`` value; a knob without one stays required."""
    from vdla.compiler.autotvm.space import ConfigSpace, KnobError

    sp = ConfigSpace()
    sp.define_knob("unroll", [False, True])
    sp.define_knob("rows", [1, 2, 4], absent=1)
    assert sp.get(sp.index_of({"unroll": True})).knobs() == {"unroll": True, "rows": 1}
    assert sp.get(sp.index_of({"unroll": True, "rows": 4})).knobs() == {"unroll": True, "rows": 4}
    with pytest.raises(KnobError, match=r"knob\(s\) \['unroll'\] have no value"):
        sp.index_of({"rows": 2})
