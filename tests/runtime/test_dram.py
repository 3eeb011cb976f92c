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
