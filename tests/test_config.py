"""Tests of vdla.config: VTA's defaults, derived quantities, validation, JSON, presets.

Expected values are written out literally from VTA's `vta_config.json` and
`pkg_config.py` (docs: /work/shared/reference/vta.md §2.3, §2.10), not computed with
the code under test.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from vdla.config import PRESETS, Config, ConfigError, Timing, preset

KiB = 1024

#: VTA's `config/vta_config.json` (vta.md §2.10), verbatim.
VTA_DEFAULT_JSON = {
    "TARGET": "sim",
    "HW_VER": "0.0.2",
    "LOG_INP_WIDTH": 3,
    "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0,
    "LOG_BLOCK": 4,
    "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18,
    "LOG_ACC_BUFF_SIZE": 17,
}


# ---------------------------------------------------------------------------------
# Defaults and derived quantities
# ---------------------------------------------------------------------------------

DEFAULT_PARAMS = [
    ("batch", 1),
    ("block_in", 16),
    ("block_out", 16),
    ("inp_width", 8),
    ("wgt_width", 8),
    ("acc_width", 32),
    ("out_width", 8),
    ("uop_buff_size", 32 * KiB),
    ("inp_buff_size", 32 * KiB),
    ("wgt_buff_size", 256 * KiB),
    ("acc_buff_size", 128 * KiB),
]


@pytest.mark.parametrize(("name", "value"), DEFAULT_PARAMS)
def test_default_parameters_are_vtas(name, value):
    assert getattr(Config(), name) == value


# (attribute, default, small, batch2): worked out by hand from the preset parameters.
#   small:  1x4x4,  uop 1 KiB, inp 512 B, wgt 2 KiB, acc 2 KiB
#   batch2: 2x8x8,  uop 8 KiB, inp 16 KiB, wgt 32 KiB, acc 64 KiB
DERIVED = [
    ("uop_elem_bytes", 4, 4, 4),
    ("inp_elem_bytes", 16, 4, 16),
    ("wgt_elem_bytes", 256, 16, 64),
    ("acc_elem_bytes", 64, 16, 64),
    ("out_elem_bytes", 16, 4, 16),
    ("acc8_elem_bytes", 16, 4, 16),
    ("uop_depth", 8192, 256, 2048),
    ("inp_depth", 2048, 128, 1024),
    ("wgt_depth", 1024, 128, 512),
    ("acc_depth", 2048, 128, 1024),
    ("out_depth", 2048, 128, 1024),
    ("out_buff_size", 32 * KiB, 512, 16 * KiB),
    ("log_uop_depth", 13, 8, 11),
    ("log_inp_depth", 11, 7, 10),
    ("log_wgt_depth", 10, 7, 9),
    ("log_acc_depth", 11, 7, 10),
    ("uop_dst_bits", 11, 7, 10),
    ("uop_src_bits", 11, 7, 10),
    ("uop_wgt_bits", 10, 7, 9),
    ("macs_per_cycle", 256, 16, 128),
    ("bus_bytes", 8, 4, 8),
    ("bitstream_name", "1x16_i8w8a32_15_15_18_17", "1x4_i8w8a32_10_9_11_11", "2x8_i8w8a32_13_14_15_16"),
]


@pytest.mark.parametrize(("attr", "default", "small", "batch2"), DERIVED, ids=[d[0] for d in DERIVED])
def test_derived_quantities(attr, default, small, batch2):
    assert getattr(Config(), attr) == default
    assert getattr(PRESETS["default"], attr) == default
    assert getattr(PRESETS["small"], attr) == small
    assert getattr(PRESETS["batch2"], attr) == batch2


def test_out_depth_mirrors_acc_depth():
    for cfg in list(PRESETS.values()) + [Config(acc_buff_size=32 * KiB), Config(batch=4, acc_buff_size=256 * KiB)]:
        assert cfg.out_depth == cfg.acc_depth


@pytest.mark.parametrize(
    ("cfg", "gops"),
    [
        (Config(), 51.2),  # Pynq-Z1, vta.md "At a glance"
        (Config(clock_mhz=200.0), 102.4),  # VDLA in OSDI'18
        (Config(clock_mhz=333.0), 170.496),
        (PRESETS["batch2"], 25.6),
    ],
)
def test_peak_gops(cfg, gops):
    assert cfg.peak_gops == pytest.approx(gops, rel=1e-12)


# ---------------------------------------------------------------------------------
# VTA's JSON
# ---------------------------------------------------------------------------------


def test_from_vta_json_default_equals_defaults():
    cfg = Config.from_vta_json(VTA_DEFAULT_JSON)
    assert cfg.name == "vta"
    assert cfg.replace(name="default") == Config()
    assert cfg.bitstream_name == "1x16_i8w8a32_15_15_18_17"


def test_from_vta_json_name_argument():
    assert Config.from_vta_json(VTA_DEFAULT_JSON, name="pynq").name == "pynq"


def test_from_vta_json_batching_example():
    # The non-default config of VTA PR #3661 (vta.md §2.10).
    data = dict(
        VTA_DEFAULT_JSON, LOG_BATCH=2, LOG_BLOCK=3, LOG_INP_BUFF_SIZE=16, LOG_WGT_BUFF_SIZE=16, LOG_ACC_BUFF_SIZE=18
    )
    cfg = Config.from_vta_json(data)
    assert (cfg.batch, cfg.block_in, cfg.block_out) == (4, 8, 8)
    assert (cfg.inp_buff_size, cfg.wgt_buff_size, cfg.acc_buff_size) == (64 * KiB, 64 * KiB, 256 * KiB)
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes) == (32, 64, 128)
    assert (cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth) == (2048, 1024, 2048)
    assert cfg.bitstream_name == "4x8_i8w8a32_15_16_16_18"


def test_from_vta_json_missing_key():
    data = dict(VTA_DEFAULT_JSON)
    del data["LOG_WGT_BUFF_SIZE"]
    with pytest.raises(ConfigError, match="LOG_WGT_BUFF_SIZE"):
        Config.from_vta_json(data)


def test_from_vta_json_negative_log_is_config_error():
    # A negative LOG_* value currently escapes as a bare ValueError("negative shift count")
    # that does not name the key.
    with pytest.raises(ConfigError, match="LOG_BATCH"):
        Config.from_vta_json(dict(VTA_DEFAULT_JSON, LOG_BATCH=-1))


# ---------------------------------------------------------------------------------
# Frozen, hashable, JSON round trip
# ---------------------------------------------------------------------------------

PRESET_NAMES = sorted(PRESETS)


def test_presets_include_the_documented_ones():
    assert {"default", "small", "batch2"} <= set(PRESETS)
    for name, cfg in PRESETS.items():
        assert cfg.name == name


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_frozen(name):
    cfg = PRESETS[name]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.batch = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.timing.dram_latency = 1


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_hashable(name):
    cfg = PRESETS[name]
    copy = Config.from_dict(json.loads(cfg.to_json()))
    assert copy is not cfg
    assert hash(copy) == hash(cfg)
    assert {cfg: 1}[copy] == 1
    assert len({cfg, copy, cfg.replace(clock_mhz=cfg.clock_mhz * 2)}) == 2


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_json_round_trip(name):
    cfg = PRESETS[name]
    text = cfg.to_json()
    data = json.loads(text)  # valid, plain JSON
    assert data["name"] == name
    assert data["batch"] == cfg.batch
    assert isinstance(data["timing"], dict)
    assert data["timing"]["dram_latency"] == cfg.timing.dram_latency
    assert Config.from_json(text) == cfg
    assert Config.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_save_load(name, tmp_path):
    cfg = PRESETS[name]
    path = tmp_path / f"{name}.json"
    cfg.save(path)
    assert Config.load(path) == cfg
    assert Config.load(str(path)) == cfg


def test_round_trip_non_default_timing_and_clock(tmp_path):
    cfg = Config(name="x", clock_mhz=333.0, timing=Timing(dram_latency=7, dma_tail=4))
    path = tmp_path / "x.json"
    cfg.save(path)
    back = Config.load(path)
    assert back == cfg
    assert back.timing.dram_latency == 7 and back.timing.dma_tail == 4
    assert back.clock_mhz == 333.0


def test_partial_dict_fills_defaults():
    cfg = Config.from_dict({"name": "p", "batch": 2, "timing": {"dram_latency": 5}})
    assert cfg == Config(name="p", batch=2, timing=Timing(dram_latency=5))


@pytest.mark.parametrize("stall, distance", [(1, 2), (0, 1), (3, 4)])
def test_files_with_the_older_alu_raw_stall_read_as_a_distance(stall, distance):
    """Before the ALU's second stage a RAW one iteration apart waited `alu_raw_stall` cycles."""
    cfg = Config.from_dict({"timing": {"alu_raw_stall": stall}})
    assert cfg.timing.alu_raw_distance == distance


def test_older_alu_raw_stall_that_is_not_a_number_is_named():
    with pytest.raises(ConfigError, match="alu_raw_distance"):
        Config.from_dict({"timing": {"alu_raw_stall": "one"}})


def test_replace_validates():
    assert Config().replace(batch=2).batch == 2
    with pytest.raises(ConfigError, match="batch"):
        Config().replace(batch=3)


def test_summary_lists_derived_rows():
    rows = dict(Config().summary())
    assert rows["batch"] == "1"
    assert rows["timing.dram_latency"] == str(Timing().dram_latency)
    assert rows["bitstream name"] == "1x16_i8w8a32_15_15_18_17"
    assert "51.2" in rows["peak"]


# ---------------------------------------------------------------------------------
# Bad parameters: each raises ConfigError naming the parameter
# ---------------------------------------------------------------------------------

BAD = [
    ("block_in_not_pow2", lambda: Config(block_in=12), "block_in"),
    ("block_out_not_pow2", lambda: Config(block_out=3), "block_out"),
    ("batch_zero", lambda: Config(batch=0), "batch"),
    ("batch_negative", lambda: Config(batch=-2), "batch"),
    ("batch_bool", lambda: Config(batch=True), "batch"),
    ("batch_str", lambda: Config(batch="1"), "batch"),
    ("inp_width_4", lambda: Config(inp_width=4), "inp_width"),
    ("wgt_width_7", lambda: Config(wgt_width=7), "wgt_width"),
    ("acc_width_8", lambda: Config(acc_width=8), "acc_width"),
    ("out_width_gt_acc", lambda: Config(acc_width=16, out_width=32), "out_width"),
    ("acc_too_narrow_for_product", lambda: Config(inp_width=16, wgt_width=16, acc_width=16), "acc_width"),
    ("bus_width_48", lambda: Config(bus_width=48), "bus_width"),
    ("acc_buff_size_3000", lambda: Config(acc_buff_size=3000), "acc_buff_size"),
    ("uop_buff_size_tiny", lambda: Config(uop_buff_size=2), "uop_buff_size"),
    ("inp_buff_size_below_elem", lambda: Config(inp_buff_size=8), "inp_buff_size"),
    # 32 MiB / 256 B = 131072 weight elements > 65536
    ("wgt_too_deep", lambda: Config(wgt_buff_size=32 * 1024 * KiB), "wgt_buff_size"),
    # acc 8192 (13) + src 13 + wgt 10 = 36 bits > 32
    ("uop_over_32_bits", lambda: Config(acc_buff_size=512 * KiB, inp_buff_size=128 * KiB), "acc_buff_size"),
    ("dep_queue_depth_zero", lambda: Config(dep_queue_depth=0), "dep_queue_depth"),
    ("cmd_queue_depth_huge", lambda: Config(cmd_queue_depth=1 << 17), "cmd_queue_depth"),
    ("dram_addr_width_8", lambda: Config(dram_addr_width=8), "dram_addr_width"),
    ("dram_addr_width_33", lambda: Config(dram_addr_width=33), "dram_addr_width"),
    ("loop_iter_width_17", lambda: Config(loop_iter_width=17), "loop_iter_width"),
    ("alu_imm_width_1", lambda: Config(alu_imm_width=1), "alu_imm_width"),
    ("clock_negative", lambda: Config(clock_mhz=-1), "clock_mhz"),
    ("clock_zero", lambda: Config(clock_mhz=0), "clock_mhz"),
    ("clock_str", lambda: Config(clock_mhz="100"), "clock_mhz"),
    # NaN fails `clock_mhz <= 0` and is currently accepted.
    ("clock_nan", lambda: Config(clock_mhz=float("nan")), "clock_mhz"),
    ("acc_read_register_int", lambda: Config.from_dict({"acc_read_register": 1}), "acc_read_register"),
    ("operand_read_register_str", lambda: Config.from_dict({"operand_read_register": "yes"}), "operand_read_register"),
    ("timing_not_timing", lambda: Config(timing={"dram_latency": 1}), "timing"),
    ("timing_negative_dram_latency", lambda: Config.from_dict({"timing": {"dram_latency": -1}}), "timing.dram_latency"),
    ("timing_direct", lambda: Timing(dram_latency=-1), "timing.dram_latency"),
    ("timing_zero_burst", lambda: Timing(max_burst_beats=0), "timing.max_burst_beats"),
    ("timing_float", lambda: Timing(insn_overhead=1.5), "timing.insn_overhead"),
    ("timing_not_object", lambda: Config.from_dict({"timing": 3}), "timing"),
    ("unknown_key_from_dict", lambda: Config.from_dict({"blok_in": 16}), "blok_in"),
    ("unknown_key_from_json", lambda: Config.from_json('{"batch": 1, "frobnicate": 2}'), "frobnicate"),
    ("unknown_timing_key", lambda: Config.from_dict({"timing": {"dram_lat": 1}}), "dram_lat"),
    ("bad_value_from_json", lambda: Config.from_json('{"block_out": 12}'), "block_out"),
    ("invalid_json", lambda: Config.from_json("{batch: 1"), "JSON"),
    ("json_not_object", lambda: Config.from_json("[1, 2]"), "object"),
]


@pytest.mark.parametrize(("make", "needle"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_parameters(make, needle):
    with pytest.raises(ConfigError) as exc:
        make()
    assert needle in str(exc.value)


def test_config_error_is_value_error():
    assert issubclass(ConfigError, ValueError)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch": 4, "acc_buff_size": 256 * KiB},
        {
            "block_in": 32,
            "block_out": 32,
            "wgt_buff_size": 1024 * KiB,
            "inp_buff_size": 64 * KiB,
            "acc_buff_size": 256 * KiB,
        },
        {"inp_width": 16, "wgt_width": 16, "acc_width": 32},
        {"acc_width": 16, "out_width": 8, "acc_buff_size": 64 * KiB},
        {"bus_width": 512, "dram_addr_width": 16, "loop_iter_width": 16, "alu_imm_width": 2},
        {"wgt_buff_size": 16 * KiB},  # 64 weight elements
        {"clock_mhz": 12},
    ],
)
def test_good_non_default_parameters(kwargs):
    cfg = Config(**kwargs)
    for k, v in kwargs.items():
        assert getattr(cfg, k) == v


# ---------------------------------------------------------------------------------
# preset()
# ---------------------------------------------------------------------------------


def test_preset_by_name():
    small = preset("small")
    assert small is PRESETS["small"]
    assert (small.block_in, small.block_out) == (4, 4)
    assert preset("default") == Config()


def test_unknown_preset_lists_presets():
    with pytest.raises(ConfigError) as exc:
        preset("nope")
    msg = str(exc.value)
    assert "nope" in msg
    for name in PRESETS:
        assert name in msg


def test_preset_from_json_path(tmp_path):
    cfg = PRESETS["batch2"].replace(name="mine", clock_mhz=150.0)
    path = tmp_path / "mine.json"
    cfg.save(path)
    assert preset(str(path)) == cfg


def test_preset_from_file_without_json_suffix(tmp_path):
    cfg = Config(name="other", clock_mhz=50.0)
    path = tmp_path / "other.cfg"
    path.write_text(cfg.to_json())
    assert preset(str(path)) == cfg
