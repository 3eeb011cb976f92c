"""The DRAM allocator and buffers (vdla.runtime.dram): alignment, reuse, exhaustion, bounds and use
after free."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.runtime import (
    Allocator,
    BufferError_,
    Device,
    OutOfMemoryError,
    Stage,
)

L, G, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


PAGE = 4096


def test_allocator_alignment_and_no_zero_address():
    a = Allocator(1 << 20)
    addrs = [a.alloc(n) for n in (1, 100, 4096, 5000, 3)]
    assert all(x % PAGE == 0 and x != 0 for x in addrs)
    big = a.alloc(10, align=1 << 16)
    assert big % (1 << 16) == 0 and big != 0
    # no overlaps
    spans = sorted([(x, n) for x, n in zip(addrs, (1, 100, 4096, 5000, 3))] + [(big, 10)])
    assert all(s0 + n0 <= s1 for (s0, n0), (s1, _) in zip(spans, spans[1:]))


def test_allocator_alignment_gap_is_reused():
    a = Allocator(1 << 20, align=16)
    x = a.alloc(16)  # 4096
    y = a.alloc(16, align=1 << 14)  # 16384: leaves a gap [4112, 16384)
    z = a.alloc(16)
    assert (x, y, z) == (PAGE, 1 << 14, PAGE + 16)


def test_allocator_exhaust_free_coalesce_reallocate():
    size = 1 << 16
    a = Allocator(size)
    blocks = []
    while True:
        try:
            blocks.append(a.alloc(PAGE))
        except OutOfMemoryError:
            break
    assert len(blocks) == (size - PAGE) // PAGE and 0 not in blocks
    assert a.free_bytes == 0
    rng = np.random.default_rng(0)
    for i in rng.permutation(len(blocks)):
        a.free(blocks[int(i)])
    assert a.free_bytes == size - PAGE and a.largest_free == size - PAGE
    assert a.alloc(size - PAGE) == PAGE  # only possible if every block coalesced
    with pytest.raises(OutOfMemoryError):
        a.alloc(1)


def test_allocator_oom_message():
    a = Allocator(1 << 16)
    a.alloc(3 * PAGE)
    with pytest.raises(OutOfMemoryError) as ei:
        a.alloc(1 << 20)
    msg = str(ei.value)
    assert "1048576 bytes" in msg and f"{(1 << 16) - 4 * PAGE} bytes free" in msg


def test_allocator_double_free_and_bad_args():
    a = Allocator(1 << 16)
    x = a.alloc(10)
    a.free(x)
    with pytest.raises(BufferError_, match="double free"):
        a.free(x)
    with pytest.raises(BufferError_):
        a.free(12345)
    with pytest.raises(ValueError):
        a.alloc(0)
    with pytest.raises(ValueError):
        Allocator(PAGE)


@pytest.mark.parametrize("preset", ["default", "small", "batch2"])
def test_device_buffers_aligned_to_every_element(preset):
    dev = Device("fsim", config=preset, dram_size=1 << 22)
    c = dev.config
    for n in (1, 7, 300, 5000):
        b = dev.alloc(n)
        for eb in (c.inp_elem_bytes, c.wgt_elem_bytes, c.acc_elem_bytes, c.out_elem_bytes, c.uop_elem_bytes,
                   c.acc8_elem_bytes):
            assert b.addr % eb == 0
        assert b.addr != 0


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.float32])
def test_buffer_round_trip(dtype):
    dev = Device("fsim", dram_size=1 << 20)
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((3, 5, 7)) * 100).astype(dtype)
    buf = dev.array(data, "x")
    assert buf.nbytes == data.nbytes
    assert np.array_equal(buf.read(dtype, data.shape), data)
    assert np.array_equal(buf.read(dtype), data.ravel())
    # partial write at an offset, bytes input
    buf.write(b"\x01\x02", offset=4)
    raw = buf.read(np.uint8)
    assert raw[4:6].tolist() == [1, 2] and np.array_equal(raw[:4], data.view(np.uint8).ravel()[:4])
    assert np.array_equal(buf.read(np.uint8, 3, offset=6), data.view(np.uint8).ravel()[6:9])


def test_buffer_access_past_end_and_use_after_free():
    dev = Device("fsim", dram_size=1 << 20)
    buf = dev.alloc(16, "b")
    with pytest.raises(BufferError_, match=r"b: access \[0, 17\) is outside the buffer \(16 bytes\)"):
        buf.write(np.zeros(17, np.uint8))
    with pytest.raises(BufferError_, match="outside"):
        buf.write(b"\x00\x00", offset=15)
    with pytest.raises(BufferError_, match="outside"):
        buf.read(np.int32, 5)
    with pytest.raises(BufferError_, match="outside"):
        buf.read(np.uint8, 1, offset=-1)
    dev.free(buf)
    with pytest.raises(BufferError_, match="b was freed"):
        buf.read()
    with pytest.raises(BufferError_, match="freed"):
        buf.write(b"\x00")
    with pytest.raises(BufferError_, match="already freed"):
        buf.free()


# -- the messages of a bad DRAM size and of data segments a device cannot place -----------------------

DRAM_RANGE = ("dram_size must be an integer number of bytes in (4096, 4294967296] (more than the reserved first "
              "4 KiB page, at most the core's 32-bit address space), got ")


@pytest.mark.parametrize(("size", "shown"), [
    (-1, "-1"), (0, "0"), (PAGE, "4096"), ((1 << 32) + 1, "4294967297"), (1 << 40, "1099511627776"),
    (1.5, "1.5"), (True, "True"), ("1M", "'1M'"), (None, "None"),
])
def test_device_dram_size_names_the_option_value_and_range(size, shown):
    with pytest.raises(ValueError) as e:
        Device("fsim", dram_size=size)
    assert str(e.value) == DRAM_RANGE + shown


@pytest.mark.parametrize("size", [PAGE + 1, np.int64(1 << 20)])
def test_device_dram_size_in_range(size):
    assert Device("fsim", dram_size=size).allocator.size == int(size)


def test_max_dram_is_the_cores_address_space():
    from vdla.hardware.interfaces import ADDR_WIDTH
    from vdla.runtime.dram import MAX_DRAM

    assert MAX_DRAM == 1 << ADDR_WIDTH


MIB = 1 << 20
OUTSIDE = "lies outside the allocatable DRAM [0x1000, 0x100000)"
FIRST_PAGE = "(the first 4 KiB page is never handed out: address 0 is never a buffer's)"


@pytest.mark.parametrize(("segments", "message"), [
    ([(0x100_0000_0000, 4)], "program 'tiny': data segment 0 (4 bytes at 0x10000000000): DRAM range "
                             f"[0x10000000000, 0x10000000004) {OUTSIDE} (dram_size 1048576 bytes)"),
    ([(0, 4)], f"program 'tiny': data segment 0 (4 bytes at 0x0): DRAM range [0x0, 0x4) {OUTSIDE} {FIRST_PAGE}"),
    ([(0xFF0, 32)], f"program 'tiny': data segment 0 (32 bytes at 0xff0): DRAM range [0xff0, 0x1010) {OUTSIDE} "
                    f"{FIRST_PAGE}"),
    ([(MIB - 2, 4)], f"program 'tiny': data segment 0 (4 bytes at 0xffffe): DRAM range [0xffffe, 0x100002) {OUTSIDE} "
                     "(dram_size 1048576 bytes)"),
    # the second segment is the bad one: it says which
    ([(0x8000, 16), (MIB, 1)], f"program 'tiny': data segment 1 (1 bytes at 0x100000): DRAM range [0x100000, "
                               f"0x100001) {OUTSIDE} (dram_size 1048576 bytes)"),
    # a buffer the caller holds: the block it overlaps
    ([(0x1010, 4)], "program 'tiny': data segment 0 (4 bytes at 0x1010): DRAM range [0x1010, 0x1014) is not free: "
                    "it overlaps the allocated block [0x1000, 0x3000)"),
])
def test_data_segment_a_device_cannot_place_names_it(segments, message):
    from dataclasses import replace

    from vdla.runtime import CommandStream

    dev = Device("fsim", dram_size=MIB)
    held = dev.alloc(2 * PAGE, "held")  # at 0x1000, the first address handed out
    assert held.addr == PAGE
    prog = replace(CommandStream(dev.config, "tiny").finish(), data=tuple((a, bytes(n)) for a, n in segments))
    free = dev.allocator.free_bytes
    with pytest.raises(OutOfMemoryError) as e:
        dev.run(prog)
    assert str(e.value) == message
    assert dev.allocator.free_bytes == free  # a segment placed before the bad one is released
    dev.run(replace(prog, data=()))  # and the device still runs programs


def test_vdla_run_of_a_program_file_with_a_data_segment_outside_dram(tmp_path, capsys):
    from dataclasses import replace

    from vdla import cli
    from vdla.runtime import CommandStream

    path = tmp_path / "bad.vdla"
    replace(CommandStream(Device("fsim").config, "bad").finish(), data=((0x100_0000_0000, bytes(4)),)).save(path)
    assert cli.main(["run", str(path)]) == 2
    assert capsys.readouterr().err == (
        "vdla run: error: program 'bad': data segment 0 (4 bytes at 0x10000000000): DRAM range [0x10000000000, "
        "0x10000000004) lies outside the allocatable DRAM [0x1000, 0x10000000) (dram_size 268435456 bytes)\n")
