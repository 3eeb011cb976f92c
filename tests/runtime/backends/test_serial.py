"""The host side of the bridge (`vdla.runtime.backends.serial`) against `BridgeModel` behind a fake serial port.

`FakePort` is a byte stream whose far end is the protocol's device model; it can damage
frames in either direction, drop responses, or play dead, to exercise the retries and
timeouts. `SerialBackend` runs a random program on a model board whose "core" is the
golden simulator, and must leave the same DRAM as `Device("fsim")`.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from vdla.config import preset
from vdla.fuzz.randprog import random_program
from vdla.hardware.bridge_protocol import BridgeModel, Status
from vdla.runtime import Device
from vdla.runtime.backends.serial import (
    LinkError,
    LinkTimeout,
    NakError,
    RegisterMap,
    SerialBackend,
    SerialLink,
    open_port,
)
from vdla.runtime.device import DeviceError
from vdla.simulator import ProgramError
from vdla.simulator import run as golden_run


class FakePort:
    """A serial port wired to a `BridgeModel`: each write() is sent whole, then the line goes idle.

    Fault injection, each a list of per-frame actions consumed in order:
    ``cmd_faults`` ("flip": flip a bit of the command, "cut": drop its second half),
    ``rsp_faults`` ("drop": lose the response, "flip": damage it, "late": deliver it only
    after the next command's response). ``dead`` makes it swallow everything.
    """

    def __init__(self, model: BridgeModel) -> None:
        self.model = model
        self.out = bytearray()
        self.cmd_faults: list[str | None] = []
        self.rsp_faults: list[str | None] = []
        self.late = bytearray()
        self.dead = False
        self.writes = 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        frame = bytearray(data)
        fault = self.cmd_faults.pop(0) if self.cmd_faults else None
        if fault == "flip":
            frame[len(frame) // 2] ^= 0x10
        elif fault == "cut":
            del frame[len(frame) // 2 :]
        if self.dead:
            return len(data)
        rsp = bytearray(self.model.feed(bytes(frame)) + self.model.idle())
        fault = self.rsp_faults.pop(0) if self.rsp_faults else None
        if fault == "drop":
            rsp = bytearray()
        elif fault == "flip" and rsp:
            rsp[len(rsp) // 2] ^= 0x01
        if fault == "late":
            self.late += rsp
        else:
            self.out += rsp + self.late
            self.late = bytearray()
        return len(data)

    def read(self, size: int) -> bytes:
        data = bytes(self.out[:size])
        del self.out[:size]
        return data


def link_to(model: BridgeModel, **kw) -> tuple[SerialLink, FakePort]:
    port = FakePort(model)
    return SerialLink(port, timeout=kw.pop("timeout", 0.2), **kw), port


def test_memory_and_registers():
    model = BridgeModel(mem_size=4096, max_block=64)
    link, _ = link_to(model)
    assert (link.info.version, link.info.max_block, link.info.mem_size) == (1, 64, 4096)
    data = bytes(np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8))
    link.write_mem(100, data)  # 16 blocks
    assert bytes(model.mem[100:1100]) == data
    assert link.read_mem(100, 1000) == data
    link.write_mem(0, np.arange(8, dtype=np.uint16))  # numpy arrays go as their bytes
    assert link.read_mem(0, 16) == np.arange(8, dtype="<u2").tobytes()
    link.write_reg(0x10, 0xCAFEF00D)
    assert model.regs == {0x10: 0xCAFEF00D}
    assert link.read_reg(0x10) == 0xCAFEF00D
    assert link.stats["retries"] == 0 and link.stats["frames"] == 1 + 16 + 16 + 1 + 1 + 1 + 1


def test_retry_after_nak_and_damaged_or_lost_responses():
    model = BridgeModel(mem_size=256, max_block=32)
    link, port = link_to(model)
    port.cmd_faults = ["flip", "cut"]  # BAD_HCRC/BAD_DCRC, then INCOMPLETE: two NAKs, third attempt works
    link.write_mem(0, b"hello")
    assert bytes(model.mem[:5]) == b"hello" and link.stats["naks"] == 2 and link.stats["retries"] == 2

    # The write is executed but its ACK is lost or damaged: the retry is ACKed as a duplicate
    # and the register write (a "start") happens once.
    starts: list[int] = []
    model.write_reg = lambda addr, value: starts.append(value)
    port.rsp_faults = ["drop"]
    link.write_reg(0, 1)
    port.rsp_faults = ["flip"]
    link.write_reg(0, 2)
    assert starts == [1, 2]
    assert link.stats["timeouts"] == 1 and link.stats["corrupt"] == 1

    # A late response to an earlier attempt is recognised by its SEQ, not mistaken for the next one.
    port.rsp_faults = ["late"]
    assert link.read_mem(0, 5) == b"hello"
    assert link.read_mem(1, 2) == b"el"
    assert link.stats["stale"] >= 1


def test_bounded_retries_then_clear_errors():
    model = BridgeModel(mem_size=256, max_block=32)
    link, port = link_to(model, retries=2, timeout=0.05)
    port.cmd_faults = ["flip"] * 3
    with pytest.raises(LinkError, match=r"WRITE_MEM 0x10 \(4 bytes\) failed after 3 attempts: NAK BAD_"):
        link.write_mem(0x10, b"abcd")
    assert bytes(model.mem) == bytes(256)

    port.dead = True
    t0 = time.monotonic()
    with pytest.raises(LinkTimeout, match=r"READ_REG 0x4 failed after 3 attempts: no response; no response"):
        link.read_reg(4)
    assert time.monotonic() - t0 < 1.0  # 3 x 0.05 s, never a hang

    port.dead = False
    with pytest.raises(NakError, match="BAD_ADDR") as e:  # not retryable: raised at once
        link.read_mem(250, 10)
    assert e.value.status == Status.BAD_ADDR and port.writes == link.stats["attempts"]


def test_no_bridge_on_the_port():
    port = FakePort(BridgeModel(mem_size=256))
    port.dead = True
    with pytest.raises(LinkTimeout, match="no working bridge"):
        SerialLink(port, timeout=0.02, retries=1)


def test_pyserial_port_names():
    pytest.importorskip("serial")
    with pytest.raises(LinkError, match="cannot open serial port"):
        open_port("/dev/does-not-exist-vdla")
    # pyserial's loop:// echoes our frames back: no response frame ever comes.
    with pytest.raises(LinkError, match="no working bridge on loop://"):
        SerialLink("loop://", timeout=0.05, retries=0)


REGS = RegisterMap(start=0x00, done=0x04, insn_addr=0x08, insn_count=0x0C, cycles=0x10,
                   counters=(("gemm_counter", 0x14),))


class ModelBoard:
    """A board whose core is the golden simulator, behind the bridge model's register port."""

    def __init__(self, config, mem_size: int) -> None:
        self.config = config
        self.model = BridgeModel(mem_size=mem_size, max_block=256, read_reg=self.read, write_reg=self.write)
        self.regs = {REGS.done: 0}
        self.runs = 0

    def write(self, addr: int, value: int) -> None:
        self.regs[addr] = value
        if addr == REGS.start and value == 1:
            self.runs += 1
            dram = np.frombuffer(self.model.mem, dtype=np.uint8)
            rep = golden_run(self.config, dram, self.regs[REGS.insn_addr], self.regs[REGS.insn_count])
            self.regs.update({REGS.done: 1, REGS.cycles: rep.cycles, 0x14: rep.counters["gemm_counter"]})

    def read(self, addr: int) -> int:
        return self.regs.get(addr, 0)


@pytest.mark.parametrize("readback", ["stores", "all"])
def test_serial_backend_runs_programs_like_fsim(readback):
    config, size = preset("small"), 1 << 16
    board = ModelBoard(config, size)
    link, _ = link_to(board.model, timeout=1.0)
    for seed in (3, 4):
        case = random_program(config, seed, dram_size=size // 4)
        ref_out, ref = case.run(Device("fsim", config, dram_size=size))
        dev = Device("fsim", config, dram_size=size)
        dev.dram[:] = np.frombuffer(bytes(range(256)), np.uint8)[np.arange(size) % 256]  # stale data everywhere
        dev.backend = SerialBackend(dev, regs=REGS, link=link, readback=readback)
        out, rep = case.run(dev)
        assert np.array_equal(out, ref_out)
        assert rep.cycles == ref.cycles and rep.counters["gemm_counter"] == ref.counters["gemm_counter"]
        assert bytes(board.model.mem) == dev.dram.tobytes()
    assert board.runs == 2


def test_serial_backend_syncs_only_what_changed():
    config, size = preset("small"), 1 << 14
    board = ModelBoard(config, size)
    link, _ = link_to(board.model)
    dev = Device("fsim", config, dram_size=size)
    backend = SerialBackend(dev, regs=REGS, link=link, assume_zeroed=True)
    assert backend.sync_to_board(dev) == 0
    dev.dram[1000:1010] = 7
    assert backend.sync_to_board(dev) == 256  # one max_block
    assert board.model.mem[1000:1010] == bytes([7] * 10)
    with pytest.raises(Exception, match="outside the board"):
        backend.execute(dev, size - 16, 2)


def test_serial_backend_reports_core_errors_and_hangs():
    config, size = preset("small"), 1 << 14
    board = ModelBoard(config, size)
    link, _ = link_to(board.model)
    dev = Device("fsim", config, dram_size=size)
    regs = RegisterMap(start=0x00, done=0x04, insn_addr=0x08, insn_count=0x0C, cycles=0x10,
                       error=0x04, error_mask=0b10, error_index=0x18)
    backend = SerialBackend(dev, regs=regs, link=link, assume_zeroed=True, run_timeout=0.05)
    board.model.write_reg = lambda addr, value: board.regs.update(
        {addr: value} if addr != 0 else {0x04: 0b11, 0x10: 42, 0x18: 1})
    with pytest.raises(ProgramError, match="error 0x2 at instruction 1 after 42 cycles") as e:
        backend.execute(dev, 0, 2)
    assert e.value.index == 1
    board.model.write_reg = lambda addr, value: board.regs.update({0x04: 0})  # never done
    with pytest.raises(DeviceError, match="did not finish 2 instructions within 0.05 s"):
        backend.execute(dev, 0, 2)


def test_serial_backend_port_argument():
    dev = Device("fsim", "small", dram_size=1 << 13)
    with pytest.raises(DeviceError, match="needs a port"):
        SerialBackend(dev, "", regs=REGS)
    pytest.importorskip("serial")
    with pytest.raises(LinkError, match=r"no working bridge on loop://.*baud rate \(9600\)"):
        SerialBackend(dev, "loop://@9600", regs=REGS, timeout=0.05, retries=0)
