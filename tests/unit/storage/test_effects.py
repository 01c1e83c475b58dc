"""The WAL payload codec: effects of one write, encoded and decoded exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.storage.effects import Effect, Kind, decode_effects, encode_effects

effects_strategy = st.lists(
    st.builds(
        Effect,
        st.sampled_from(list(Kind)),
        st.binary(max_size=64),
        st.binary(max_size=256),
    ),
    max_size=20,
)


@given(effects_strategy)
def test_decode_inverts_encode_for_any_effects(effects: list[Effect]) -> None:
    assert decode_effects(encode_effects(effects)) == effects


def test_empty_write_encodes_to_empty_bytes_and_back() -> None:
    assert encode_effects([]) == b""
    assert decode_effects(b"") == []


def test_each_kind_keeps_its_key_and_value() -> None:
    effects = [
        Effect(Kind.PUT, b"k1", b"v1"),
        Effect(Kind.DELETE, b"k2"),
        Effect(Kind.DELETE_RANGE, b"a", b"z"),
    ]
    decoded = decode_effects(encode_effects(effects))
    assert [e.kind for e in decoded] == [Kind.PUT, Kind.DELETE, Kind.DELETE_RANGE]
    assert decoded[1].value == b""
    assert decoded[2].key == b"a" and decoded[2].value == b"z"


def test_truncated_record_is_rejected() -> None:
    data = encode_effects([Effect(Kind.PUT, b"key", b"value")])
    with pytest.raises(ValueError, match="truncated"):
        decode_effects(data[:-2])


@pytest.mark.parametrize("cut", [1, 5, 8])
def test_record_cut_inside_its_header_is_rejected_as_truncated(cut: int) -> None:
    data = encode_effects([Effect(Kind.PUT, b"a", b"b"), Effect(Kind.PUT, b"key", b"value")])
    first = len(encode_effects([Effect(Kind.PUT, b"a", b"b")]))
    with pytest.raises(ValueError, match="truncated"):
        decode_effects(data[: first + cut])


def test_unknown_kind_is_rejected() -> None:
    data = bytearray(encode_effects([Effect(Kind.PUT, b"k", b"v")]))
    data[0] = 99
    with pytest.raises(ValueError):
        decode_effects(bytes(data))
