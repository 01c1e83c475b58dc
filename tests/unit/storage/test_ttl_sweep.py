"""Time to Live's pure core: which items are expired, the conditional delete that agrees
with it, and the pacer's bound on the sweeper's share of the node's time."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from partita._proto import storage_pb2 as pb
from partita.common.errors import DynamoError
from partita.storage.effects import Effect, Kind
from partita.storage.engine import Engine
from partita.storage.operations import plan_delete
from partita.storage.ttl_sweep import (
    DEFAULT_SHARE,
    MAX_PAST_SECONDS,
    SweepPacer,
    expiry_of,
    is_expired,
    still_expired_condition,
)

NOW = 1_763_900_000.25
YEAR = 365 * 24 * 3600


def _with(ttl: dict[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"pk": {"S": "k"}}
    if ttl is not None:
        item["expires"] = ttl
    return item


# (case, TTL attribute value or None, expired at NOW?)
CASES = [
    ("a minute ago", {"N": str(int(NOW) - 60)}, True),
    ("fractional seconds ago", {"N": str(NOW - 0.5)}, True),
    ("exponent notation, in the past", {"N": f"{(int(NOW) - 60) // 10}e1"}, True),
    ("four years ago", {"N": str(int(NOW) - 4 * YEAR)}, True),
    ("exactly now (not less than now)", {"N": str(NOW)}, False),
    ("a minute ahead", {"N": str(int(NOW) + 60)}, False),
    ("more than five years ago", {"N": str(int(NOW) - MAX_PAST_SECONDS - 1)}, False),
    ("milliseconds instead of seconds (far future)", {"N": str(int(NOW) * 1000)}, False),
    ("a string", {"S": str(int(NOW) - 60)}, False),
    ("a number set", {"NS": [str(int(NOW) - 60)]}, False),
    ("a map holding a number", {"M": {"expires": {"N": str(int(NOW) - 60)}}}, False),
    ("NULL", {"NULL": True}, False),
    ("no attribute", None, False),
]


@pytest.mark.parametrize(("case", "ttl", "expired"), CASES, ids=[c[0] for c in CASES])
def test_expiry_follows_dynamodbs_documented_rule(
    case: str, ttl: dict[str, Any] | None, expired: bool
) -> None:
    assert is_expired(_with(ttl), "expires", NOW) is expired


def test_only_a_top_level_number_has_an_expiry() -> None:
    assert expiry_of(_with({"N": "12.5"}), "expires") is not None
    assert expiry_of(_with({"S": "12.5"}), "expires") is None
    assert expiry_of(_with({"N": "12.5"}), "other") is None


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    e = Engine.open(tmp_path / "node", sync=False)
    yield e
    await e.close()


@pytest.mark.parametrize(("case", "ttl", "expired"), CASES, ids=[c[0] for c in CASES])
async def test_the_conditional_delete_deletes_exactly_what_the_rule_calls_expired(
    engine: Engine, case: str, ttl: dict[str, Any] | None, expired: bool
) -> None:
    """The sweeper picks candidates with `is_expired` and deletes them under the
    condition; the two must agree, or items would be skipped or wrongly deleted."""
    await engine.commit([Effect(Kind.PUT, b"item", orjson.dumps(_with(ttl)))])
    body = orjson.dumps({**still_expired_condition("expires", NOW), "service": True})
    request = pb.Request(op=pb.DELETE, key=b"item", body=body)
    if expired:
        assert plan_delete(engine, request).effects == [Effect(Kind.SERVICE_DELETE, b"item")]
    else:
        with pytest.raises(DynamoError) as err:
            plan_delete(engine, request)
        assert err.value.code == "ConditionalCheckFailedException"


def test_after_every_chunk_the_work_so_far_is_at_most_the_share_of_the_elapsed_time() -> None:
    rng = random.Random(7)
    pacer = SweepPacer(interval=1.0)
    now = 100.0
    pacer.pass_started(now)
    for _ in range(500):
        pacer.chunk_started(now)
        now += rng.choice([0.0, 1e-4, 0.003, 0.05, 0.4])  # a chunk's work: CPU, reads, an fsync
        now += pacer.chunk_finished(now)
        elapsed = now - 100.0
        assert pacer.work_seconds <= DEFAULT_SHARE * elapsed + 1e-9
    assert pacer.work_seconds > 0
    # The rests are exactly what keeps the share: work / (work + rest) == share.
    assert pacer.work_seconds / (pacer.work_seconds + pacer.rest_seconds) == pytest.approx(DEFAULT_SHARE)


def test_the_rest_after_a_chunk_scales_with_its_work_and_the_share() -> None:
    pacer = SweepPacer(interval=1.0, share=0.25)
    pacer.chunk_started(10.0)
    assert pacer.chunk_finished(10.2) == pytest.approx(0.6)  # 0.2 s work at 25% -> 0.6 s rest
    pacer.chunk_started(20.0)
    assert pacer.chunk_finished(20.0) == 0.0


def test_passes_start_an_interval_apart_or_back_to_back_when_a_pass_ran_longer() -> None:
    pacer = SweepPacer(interval=5.0)
    assert pacer.until_next_pass(0.0) == 0.0  # no pass yet
    pacer.pass_started(100.0)
    assert pacer.until_next_pass(101.5) == pytest.approx(3.5)
    assert pacer.until_next_pass(107.0) == 0.0


def test_a_share_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ValueError):
        SweepPacer(interval=1.0, share=0.0)
    with pytest.raises(ValueError):
        SweepPacer(interval=1.0, share=1.5)
