"""The sweep's design space: --vary grammar, space files, the product, applying a point."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vdla.config import Config, ConfigError
from vdla.explore.space import SpaceError, apply, expand, label, load_space, parse_vary


@pytest.mark.parametrize("items, expected", [
    (["block_in=8,16"], {"block_in": [8, 16]}),
    (["batch=1,2", "bus_width=32"], {"batch": [1, 2], "bus_width": [32]}),
    (["clock_mhz=40.5,50"], {"clock_mhz": [40.5, 50]}),
    (["timing.gemm_latency=6, 8"], {"timing.gemm_latency": [6, 8]}),
    (["operand_read_register=false,True"], {"operand_read_register": [False, True]}),
])
def test_parse_vary(items, expected):
    assert parse_vary(items) == expected


@pytest.mark.parametrize("items, words", [
    (["block_in"], "expected NAME=V1,V2"),
    (["block_in="], "expected NAME=V1,V2"),
    (["blok_in=8"], "unknown parameter 'blok_in'"),
    (["timing.nope=1"], "unknown parameter 'timing.nope'"),
    (["batch=1", "batch=2"], "batch is varied twice"),
])
def test_parse_vary_errors(items, words):
    with pytest.raises(SpaceError, match=words):
        parse_vary(items)


def test_expand_is_the_product_then_points_without_duplicates():
    pts = expand({"batch": [1, 2], "block_in": [8, 16, 32]}, [{"batch": 1, "block_in": 8}, {"bus_width": 32}])
    assert len(pts) == 2 * 3 + 1
    assert pts[0] == {"batch": 1, "block_in": 8} and pts[-1] == {"bus_width": 32}
    assert expand({}) == [{}]


def test_load_space_json_and_toml(tmp_path):
    j = tmp_path / "s.json"
    j.write_text('{"vary": {"block_out": [8, 16]}, "points": [{"batch": 2}]}')
    t = tmp_path / "s.toml"
    t.write_text('[vary]\nblock_out = [8, 16]\n\n[[points]]\nbatch = 2\n')
    assert load_space(j) == load_space(t) == ({"block_out": [8, 16]}, [{"batch": 2}])


@pytest.mark.parametrize("text, words", [
    ("{not json", "not valid JSON"),
    ('{"vary": {"block_out": []}}', "non-empty list"),
    ('{"points": [{"blk": 1}]}', r"points\[0\]: unknown parameter 'blk'"),
    ('{"other": 1}', "'vary' and/or 'points'"),
])
def test_load_space_errors(tmp_path, text, words):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(SpaceError, match=words):
        load_space(p)


def test_apply_sets_fields_and_timing():
    c = apply(Config(), {"bus_width": 128, "timing.alu_latency": 9})
    assert (c.bus_width, c.timing.alu_latency, c.block_in, c.timing.gemm_latency) == (128, 9, 16, Config().timing.gemm_latency)
    assert c.name == "default+bus_width=128+timing.alu_latency=9"
    assert label({}) == "base" and apply(Config(), {}) == Config()
    with pytest.raises(ConfigError, match="block_in must be a positive power of two"):
        apply(Config(), {"block_in": 3})


# the default run shares two cores between pytest workers: input generation can be slow there
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["batch", "block_in", "block_out", "bus_width", "timing.gemm_latency"]),
                       st.lists(st.integers(1, 512), min_size=1, max_size=4, unique=True), max_size=4))
def test_vary_round_trips_and_expands_to_the_product(vary):
    items = [f"{k}={','.join(map(str, v))}" for k, v in vary.items()]
    assert parse_vary(items) == vary
    pts = expand(vary)
    n = 1
    for v in vary.values():
        n *= len(v)
    assert len(pts) == n and len({label(p) for p in pts}) == n
    assert all(list(p) == list(vary) for p in pts) or not vary
