"""Board tops (`vdla.hardware.boards`) end to end: the runtime drives the simulated UART pins.

`uartsim.UartPort` is a byte stream for `SerialLink` whose far end is a `BoardTop`'s rx/tx pins in
Amaranth's simulator (bit by bit, 8N1): the real bridge protocol, the real arbiter, memory,
register map and core. A GEMM program goes through `Device`'s serial backend and must
leave the memory the golden simulator leaves; a damaged frame must be NAKed and change
nothing. The last test runs Yosys and nextpnr placement on the smallest board so the
FPGA flow cannot rot (full builds: `nox -s bitstreams`).
"""

from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pytest
from support import REPO
from support.uart import UartPort

from vdla.fuzz.randprog import random_program
from vdla.hardware.boards import BOARDS, board, board_config, config_id
from vdla.hardware.boards.soc import COUNTER_BASE, REGISTERS, STATUS_DONE
from vdla.hardware.core import COUNTER_NAMES
from vdla.runtime import Device
from vdla.runtime.backends.serial import BOARD_REGS, LinkError, SerialLink, board_backend
from vdla.runtime.device import DeviceError, backend_factory

ROOT = REPO
DIV = 4  # clock cycles per UART bit in simulation
MEM = 32 << 10


def sim_link(name: str, **kw) -> tuple[SerialLink, UartPort]:
    retries = kw.pop("retries", 2)
    top = board(name).top(simulate=True, divisor=DIV, idle_cycles=20 * 10 * DIV, **kw)
    port = UartPort(top, top.rx, top.tx, div=DIV, chunk=2000, flip_mask=0x20)
    return SerialLink(port, timeout=60.0, retries=retries), port


def _matmul_module():
    spec = importlib.util.spec_from_file_location("blocked_matmul", ROOT / "examples" / "blocked_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_boards_fit_their_parts_on_paper():
    for b in BOARDS.values():
        c = b.config
        assert b.dsp_macs + b.lut_macs == c.macs_per_cycle
        assert b.mem_size >= 16 << 10 or b.memory == "spram"
    assert board_config("ulx3s-85f").macs_per_cycle == 256  # VTA's 1x16x16
    assert backend_factory("serial") is board_backend and BOARD_REGS.config_id == REGISTERS["config_id"]
    with pytest.raises(KeyError, match="boards are"):
        board("de10-nano")


def test_led_signals_are_checked():
    from vdla.hardware.boards.soc import LEDS

    assert all(set(b.leds) <= set(LEDS) for b in BOARDS.values())
    with pytest.raises(ValueError, match=r"unknown LED signals \['blink'\]"):
        board("icebreaker").top(simulate=True, leds=("running", "blink"))


def _matmul_on_fsim_and_board(name: str, link, m: int, n: int, k: int, shift: int, seed: int, high: int = 128):
    """C = clip((A @ W^T) >> shift) with blocked_matmul's program, once on fsim and once on the
    simulated board through `link`. Returns {kind: (C, device, report, c_buf)} and the numpy C."""
    config = board_config(name)
    mm = _matmul_module()
    rng = np.random.default_rng(seed)
    a = rng.integers(-high, high, (m, k), dtype=np.int8)
    w = rng.integers(-high, high, (n, k), dtype=np.int8)
    results = {}
    for kind in ("fsim", "serial"):
        dev = Device("fsim", config, dram_size=MEM)
        if kind == "serial":
            dev.backend = board_backend(dev, link=link, assume_zeroed=True, poll_interval=0)
        a_buf = dev.array(mm.pack(a, config.batch, config.block_in), "A")
        w_buf = dev.array(mm.pack(w, config.block_out, config.block_in), "W")
        c_buf = dev.alloc(m * n, "C")
        prog, _ = mm.matmul_program(config, a_buf, w_buf, c_buf, m, n, k, shift, -128, 127)
        assert len(prog) > 4 * min(config.cmd_queue_depth, 2)  # with one-deep queues, fetch stalls
        report = dev.run(prog)
        got = c_buf.read(np.int8, (m // config.batch, n // config.block_out, config.batch, config.block_out))
        results[kind] = (got.transpose(0, 2, 1, 3).reshape(m, n), dev, report, c_buf)
    ref = np.clip((a.astype(np.int64) @ w.astype(np.int64).T) >> shift, -128, 127).astype(np.int8)
    return results, ref


@pytest.mark.slow  # 76 s of simulation; the iCEBreaker's GEMM over the UART stays in the default run
def test_gemm_program_over_the_uart_matches_the_golden_simulator():
    """Device serial backend -> SerialLink -> UART pins -> bridge -> arbiter/memory -> core, and back."""
    config = board_config("ulx3s-25f")
    link, port = sim_link("ulx3s-25f", mem_size=MEM)
    assert link.info.mem_size == MEM
    assert link.read_reg(REGISTERS["config_id"]) == config_id(config)
    m, n = 8, 8
    results, ref = _matmul_on_fsim_and_board("ulx3s-25f", link, m, n, 16, shift=6, seed=6)
    assert np.array_equal(results["fsim"][0], ref)
    assert np.array_equal(results["serial"][0], ref)
    _, dev, report, c_buf = results["serial"]
    assert report.counters["gemm_counter"] == results["fsim"][2].counters["gemm_counter"] > 0
    assert report.cycles > 0
    # The board's memory is the golden simulator's DRAM, byte for byte, where the program stored.
    board_c = link.read_mem(c_buf.addr, m * n)
    assert board_c == results["fsim"][3].read(np.uint8, (m * n,)).tobytes()
    assert link.read_reg(REGISTERS["status"]) & STATUS_DONE
    assert link.read_reg(COUNTER_BASE + 4 * COUNTER_NAMES.index("gemm_iters")) == report.counters["gemm_counter"]


def test_icebreaker_gemm_over_the_uart_matches_the_golden_simulator():
    """The smallest board end to end: SPRAM memory, one-deep command queues, 16-bit accumulators."""
    link, _ = sim_link("icebreaker")
    # small values: the 16-bit accumulators must not wrap (numpy sums exactly)
    results, ref = _matmul_on_fsim_and_board("icebreaker", link, 4, 4, 8, shift=2, seed=7, high=8)
    assert np.array_equal(results["fsim"][0], ref)
    assert np.array_equal(results["serial"][0], ref)


@pytest.mark.slow  # ~3 min: a random program moves a few KiB through the simulated UART
def test_random_program_over_the_uart_matches_the_golden_simulator():
    config = board_config("ulx3s-25f")
    link, _ = sim_link("ulx3s-25f", mem_size=MEM)
    case = random_program(config, 11, dram_size=MEM // 2)
    ref_out, ref = case.run(Device("fsim", config, dram_size=MEM))
    dev = Device("fsim", config, dram_size=MEM)
    dev.backend = board_backend(dev, link=link, assume_zeroed=True, poll_interval=0)
    out, rep = case.run(dev)
    assert np.array_equal(out, ref_out)
    assert rep.counters["gemm_counter"] == ref.counters["gemm_counter"]
    lo, hi = case.out_range
    assert link.read_mem(lo, hi - lo) == ref_out.tobytes()


@pytest.mark.slow  # 20 s of SoC simulation: the bridge's own tests (test_bridge.py) check NAKs in the default run
def test_corrupted_frames_are_rejected_and_change_nothing():
    link, port = sim_link("ulx3s-25f", mem_size=MEM)
    link.retries = 0
    before = link.read_mem(0x100, 64)
    # A flipped bit in a WRITE_MEM's data: NAK (BAD_DCRC), memory unchanged.
    port.flip = [20]
    with pytest.raises(LinkError, match="NAK BAD_DCRC"):
        link.write_mem(0x100, bytes(range(1, 65)))
    assert link.read_mem(0x100, 64) == before
    # A damaged header: NAK (BAD_HCRC) and nothing executed either.
    port.flip = [4]
    with pytest.raises(LinkError, match="NAK BAD_HCRC"):
        link.write_mem(0x100, bytes(range(1, 65)))
    assert link.read_mem(0x100, 64) == before
    # A damaged START is not executed: the core never runs.
    port.flip = [12]
    with pytest.raises(LinkError, match="NAK BAD_DCRC"):
        link.write_reg(REGISTERS["control"], 1)
    assert link.read_reg(REGISTERS["status"]) == 0 and link.read_reg(REGISTERS["cycles"]) == 0
    # The same frames undamaged go through.
    link.write_mem(0x100, bytes(range(1, 65)))
    assert link.read_mem(0x100, 64) == bytes(range(1, 65))


def test_serial_device_name_opens_the_port():
    """``Device("serial:PORT")`` reaches the port through pyserial (loop:// echoes: no bridge there)."""
    pytest.importorskip("serial")
    with pytest.raises(LinkError, match="no working bridge on loop://"):
        Device("serial:loop://", board_config("ulx3s-25f"), dram_size=MEM)


def test_config_mismatch_is_refused_before_running():
    link, _ = sim_link("ulx3s-25f", mem_size=MEM)
    dev = Device("fsim", board_config("ulx3s-45f"), dram_size=MEM)
    with pytest.raises(DeviceError, match="matches board config 'ulx3s-25f'"):
        board_backend(dev, link=link)


@pytest.mark.slow  # 50 s of simulation; the iCEBreaker's GEMM over the UART (default run) uses its SPRAM too
def test_icebreaker_spram_memory_and_registers():
    """The iCEBreaker top with its SPRAM modelled: both banks, byte writes, the register map."""
    link, _ = sim_link("icebreaker")
    assert link.info.mem_size == 128 << 10
    data = bytes(np.random.default_rng(1).integers(0, 256, 100, dtype=np.uint8))
    for addr in (0x3, 0xFFC0, 0x10000 + 0x200, 0x1FF00):  # bank 0, across the banks, bank 1
        link.write_mem(addr, data)
        assert link.read_mem(addr, 100) == data
    assert link.read_mem(0x3, 100) == data  # bank 1 does not alias bank 0
    assert link.read_mem(0x10000 + 0x200 + 100, 4) == bytes(4)
    assert link.read_reg(REGISTERS["config_id"]) == config_id(board_config("icebreaker"))
    link.write_reg(REGISTERS["insn_addr"], 0x1230)
    assert link.read_reg(REGISTERS["insn_addr"]) == 0x1230
    assert link.read_reg(REGISTERS["mem_size"]) == 128 << 10


def _have_tools() -> bool:
    from vdla.hardware.boards.build import BuildError, tool

    try:
        return all(tool(t) for t in ("yosys", "nextpnr-ice40"))
    except BuildError:
        return False


@pytest.mark.slow  # synthesis and place-and-route (3 minutes): nox -s slow, next to nox -s bitstreams
@pytest.mark.skipif(not _have_tools(), reason="the yowasp tools are not installed (pip install 'vdla[fpga]')")
def test_smallest_board_synthesises_and_places(tmp_path):
    """Yosys + nextpnr placement (no routing) of the iCEBreaker top, the fastest board to
    place (about a minute): the FPGA flow still works. Full builds: `nox -s bitstreams`."""
    pytest.importorskip("amaranth_boards")
    from vdla.hardware.boards.build import synth_and_place

    b = board("icebreaker")
    res = synth_and_place(b, tmp_path / "build", route=False, echo=lambda *_: None)
    util = res["nextpnr"]["utilization"]
    assert 0 < util["ICESTORM_LC"]["used"] <= util["ICESTORM_LC"]["available"]
    # one SB_MAC16 per (16-bit) ALU lane for MUL, and the GEMM's: one per multiplier, or (the
    # products' registers have no reset, so Yosys may) one multiply-add per pair of products
    # with the other product of the pair in LUTs
    alu_lanes = b.config.batch * b.config.block_out
    assert alu_lanes + b.dsp_macs // 2 <= util["ICESTORM_DSP"]["used"] <= alu_lanes + b.dsp_macs
    assert util["ICESTORM_SPRAM"]["used"] == 4 and util["ICESTORM_RAM"]["used"] > 0
    shutil.rmtree(tmp_path / "build", ignore_errors=True)


def test_config_id_tells_a_core_without_the_window_from_one_with_it():
    """gemm_window counts where it is not what the other fields imply (the board ids, from Configs
    where it is implied off, stay what they were before the window existed)."""
    from vdla.config import PRESETS

    c = PRESETS["default"]
    assert config_id(c.replace(gemm_window=False)) != config_id(c)
    assert config_id(c.replace(gemm_window=None)) == config_id(c)
    no_cfg = c.replace(gemm_epilogue=False)
    assert no_cfg.gemm_window is False and config_id(no_cfg) != config_id(c.replace(gemm_window=False))
    assert config_id(board_config("icebreaker")) == 0x32ECC3DE  # as built into its committed bitstream
