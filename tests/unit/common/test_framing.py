"""Length-prefixed frames: any split of the byte stream decodes to the same frames."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.common.framing import MAX_FRAME_BYTES, FrameDecoder, FrameError, encode_frame


def test_encode_frame_prefixes_the_big_endian_length() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=30),
)
def test_frames_split_at_any_byte_boundaries_decode_identically(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    decoder = FrameDecoder()
    decoded: list[bytes] = []
    for chunk in chunks:
        decoded.extend(decoder.feed(chunk))
    assert decoded == payloads


@given(st.lists(st.binary(max_size=50), min_size=1, max_size=5))
def test_byte_at_a_time_feeding_yields_each_frame_once_it_is_complete(payloads: list[bytes]) -> None:
    decoder = FrameDecoder()
    stream = b"".join(encode_frame(p) for p in payloads)
    boundaries = set()
    end = 0
    for p in payloads:
        end += 4 + len(p)
        boundaries.add(end)
    decoded: list[bytes] = []
    for i in range(len(stream)):
        out = decoder.feed(stream[i : i + 1])
        if i + 1 in boundaries:
            assert out  # the frame is returned as soon as its last byte arrives
        else:
            assert out == []
        decoded.extend(out)
    assert decoded == payloads


def test_a_partial_header_waits_for_more_bytes() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00\x00") == []
    assert decoder.feed(b"\x00\x02h") == []
    assert decoder.feed(b"i\x00\x00\x00\x00") == [b"hi", b""]


def test_an_oversize_frame_is_rejected_from_its_header_alone() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match="exceeds"):
        decoder.feed(struct.pack(">I", MAX_FRAME_BYTES + 1))


def test_an_oversize_frame_after_good_ones_is_rejected() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        decoder.feed(encode_frame(b"ok") + struct.pack(">I", 2**32 - 1))


def test_a_frame_of_exactly_the_maximum_size_is_accepted() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(struct.pack(">I", MAX_FRAME_BYTES)) == []  # waits for the body
    payload = bytes(MAX_FRAME_BYTES)
    assert decoder.feed(payload) == [payload]
