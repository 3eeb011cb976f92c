"""The bridge protocol's pure-Python codec and device model (`vdla.hardware.bridge_protocol`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.hardware.bridge_protocol import (
    CMD_HEADER_BYTES,
    SOF_CMD,
    SOF_RSP,
    BridgeModel,
    Command,
    FrameError,
    Op,
    Response,
    ResponseDecoder,
    Status,
    crc16,
    decode_command,
    decode_response,
    encode_command,
    encode_response,
    parse_ping,
)

seqs = st.integers(0, 255)
addrs = st.integers(0, 0xFFFF_FFFF)
blobs = st.binary(max_size=300)


@st.composite
def commands(draw) -> Command:
    op = draw(st.sampled_from(list(Op)))
    seq, addr = draw(seqs), draw(addrs)
    if op == Op.WRITE_MEM:
        return Command.write_mem(seq, addr, draw(blobs))
    if op == Op.WRITE_REG:
        return Command.write_reg(seq, addr, draw(st.integers(0, 0xFFFF_FFFF)))
    return Command(seq, op, addr, draw(st.integers(0, 0xFFFF)))


responses = st.builds(Response, seqs, st.sampled_from(list(Op)), st.sampled_from(list(Status)), blobs)


def test_crc_is_ccitt_false():
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF
    data = b"\x01\x02\x03"
    assert crc16(data + crc16(data).to_bytes(2, "big")) == 0  # the gateware's check


def test_frame_layout():
    frame = encode_command(Command.write_mem(7, 0x12345678, b"\xaa\xbb"))
    assert frame[:CMD_HEADER_BYTES] == bytes([SOF_CMD, 7, Op.WRITE_MEM, 0x78, 0x56, 0x34, 0x12, 2, 0])
    assert frame[9:11] == crc16(frame[:9]).to_bytes(2, "big")
    assert frame[11:13] == b"\xaa\xbb" and frame[13:] == crc16(b"\xaa\xbb").to_bytes(2, "big")
    assert len(encode_command(Command.read_mem(0, 0, 100))) == 11  # reads carry no data
    assert encode_response(Response(7, Op.WRITE_MEM, Status.OK))[:6] == bytes([SOF_RSP, 7, 1, 0, 0, 0])


@given(commands())
def test_command_round_trip(cmd: Command):
    assert decode_command(encode_command(cmd)) == cmd


@given(responses)
def test_response_round_trip(rsp: Response):
    frame = encode_response(rsp)
    assert decode_response(frame) == rsp
    assert ResponseDecoder().feed(frame) == [rsp]


@given(commands(), st.data())
def test_any_corrupted_byte_of_a_command_is_detected(cmd: Command, data):
    frame = bytearray(encode_command(cmd))
    i = data.draw(st.integers(0, len(frame) - 1), label="byte")
    frame[i] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(FrameError):
        decode_command(bytes(frame))


@given(responses, st.data())
def test_any_corrupted_byte_of_a_response_is_detected(rsp: Response, data):
    frame = bytearray(encode_response(rsp))
    i = data.draw(st.integers(0, len(frame) - 1), label="byte")
    frame[i] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(FrameError):
        decode_response(bytes(frame))
    # The stream decoder never turns a damaged frame into a Response.
    assert not any(isinstance(x, Response) for x in ResponseDecoder().feed(bytes(frame)))


@given(st.lists(responses, min_size=1, max_size=5), st.binary(max_size=20), st.integers(1, 7))
def test_decoder_resynchronises_on_a_byte_stream(rsps, noise, chunk):
    """Noise (without SOF) before frames, fed in small chunks: every frame comes out."""
    noise = noise.replace(bytes([SOF_RSP]), b"")
    stream = noise + b"".join(encode_response(r) for r in rsps)
    dec, out = ResponseDecoder(), []
    for i in range(0, len(stream), chunk):
        out += dec.feed(stream[i : i + chunk])
    assert out == rsps and dec.pending() == 0


@settings(max_examples=200)
@given(commands(), st.data())
def test_model_never_executes_a_damaged_frame(cmd: Command, data):
    """Any one corrupted byte: the model sends at most a NAK and leaves memory and registers alone."""
    model = BridgeModel(mem_size=1 << 12, max_block=512)
    model.mem[:] = bytes(range(256)) * 16
    before = bytes(model.mem)
    frame = bytearray(encode_command(cmd))
    i = data.draw(st.integers(0, len(frame) - 1), label="byte")
    frame[i] ^= data.draw(st.integers(1, 255), label="xor")
    out = model.feed(bytes(frame)) + model.idle()
    assert model.executed == [] and bytes(model.mem) == before and model.regs == {}
    rsps = ResponseDecoder().feed(out)
    assert all(isinstance(r, Response) and not r.is_ack for r in rsps) and len(rsps) <= 1


def test_model_executes_and_checks():
    m = BridgeModel(mem_size=64, max_block=16, reg_addr_width=4)
    assert parse_ping(decode_response(m.feed(encode_command(Command.ping(0)))).data).mem_size == 64

    def run(cmd):
        return decode_response(m.feed(encode_command(cmd)) or m.idle())

    assert run(Command.write_mem(1, 60, b"abcd")).status == Status.OK
    assert run(Command.read_mem(2, 60, 4)).data == b"abcd"
    assert run(Command.write_mem(2, 0, b"zz")).status == Status.DUPLICATE  # same SEQ as the read
    assert m.mem[:2] == bytes(2)
    assert run(Command.read_mem(3, 61, 4)).status == Status.BAD_ADDR
    assert run(Command.read_mem(4, 0, 17)).status == Status.BAD_LEN
    assert run(Command.write_reg(5, 12, 99)).status == Status.OK and m.regs == {12: 99}
    assert run(Command.read_reg(6, 16)).status == Status.BAD_ADDR  # 2**reg_addr_width
    rsp = decode_response(m.feed(encode_command(Command.read_mem(7, 0, 4))[:5]) + m.idle())
    assert (rsp.seq, rsp.op, rsp.status) == (0, 0, Status.INCOMPLETE)


def test_command_validation():
    with pytest.raises(ValueError):
        Command(256, Op.PING)
    with pytest.raises(ValueError):
        Command(0, Op.WRITE_MEM, 0, 3, b"ab")
    with pytest.raises(ValueError):
        Command(0, Op.READ_MEM, 0, 2, b"ab")
