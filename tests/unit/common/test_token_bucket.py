"""The sans-I/O token bucket: admission, charging, refill, burst ceiling, rate changes,
all against an injected time."""

from __future__ import annotations

import pytest

from partita.common.token_bucket import DEFAULT_BURST_SECONDS, TokenBucket

# (description, rate, burst_seconds, steps, expected tokens after the last step)
# A step is ("charge", units, now) | ("refill", now) | ("rate", new_rate, now).
CASES = [
    ("refills at its rate", 10.0, 300.0, [("refill", 2.0)], 20.0),
    ("keeps at most burst_seconds of unused throughput", 10.0, 300.0, [("refill", 1000.0)], 3000.0),
    ("the default burst is DynamoDB's 300 s", 1.0, DEFAULT_BURST_SECONDS, [("refill", 10_000.0)], 300.0),
    ("a charge may go below zero", 10.0, 300.0, [("charge", 25.0, 1.0)], -15.0),
    ("a debt is paid back by the refill", 10.0, 300.0, [("charge", 25.0, 1.0), ("refill", 3.0)], 5.0),
    ("no burst still keeps one second's worth", 10.0, 0.0, [("refill", 50.0)], 10.0),
    ("a lower rate clips the saved burst", 10.0, 300.0, [("refill", 1000.0), ("rate", 1.0, 1000.0)], 300.0),
    (
        "a higher rate keeps what was earned",
        1.0,
        300.0,
        [("refill", 5.0), ("rate", 10.0, 5.0), ("refill", 6.0)],
        15.0,
    ),
    ("time going backwards adds nothing", 10.0, 300.0, [("refill", 5.0), ("refill", 3.0)], 50.0),
]


@pytest.mark.parametrize(
    ("description", "rate", "burst", "steps", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_bucket_steps(
    description: str, rate: float, burst: float, steps: list[tuple], expected: float
) -> None:
    bucket = TokenBucket(rate, 0.0, burst_seconds=burst)
    for step in steps:
        if step[0] == "charge":
            bucket.charge(step[1], step[2])
        elif step[0] == "refill":
            bucket.refill(step[1])
        else:
            bucket.set_rate(step[1], step[2])
        assert bucket.tokens <= bucket.ceiling
    assert bucket.tokens == pytest.approx(expected)


def test_admits_while_not_empty_and_refuses_in_debt() -> None:
    bucket = TokenBucket(10.0, 0.0, tokens=1.0)
    assert bucket.admits(0.0)
    bucket.charge(5.0, 0.0)  # a request bigger than the balance is admitted, then owed
    assert not bucket.admits(0.0)
    assert not bucket.admits(0.4)  # 4 units back: still in debt
    assert bucket.admits(0.41)


def test_take_is_all_or_nothing() -> None:
    bucket = TokenBucket(10.0, 0.0, tokens=3.0)
    assert not bucket.take(4.0, 0.0)
    assert bucket.tokens == 3.0
    assert bucket.take(3.0, 0.0)
    assert bucket.tokens == 0.0


def test_admitted_units_over_a_long_run_are_rate_times_time_plus_burst() -> None:
    """Driven far above its rate (one 1-unit request per millisecond), a bucket that
    saved a full burst admits burst + rate * elapsed, within one request."""
    rate, burst = 5.0, 300.0
    bucket = TokenBucket(rate, 0.0, burst_seconds=burst)
    bucket.refill(burst)  # idle long enough to save the whole burst
    admitted = 0
    now = burst
    for _ in range(60_000):  # 60 s of offered load at 1000/s
        now += 0.001
        if bucket.admits(now):
            bucket.charge(1.0, now)
            admitted += 1
    assert abs(admitted - (rate * burst + rate * 60.0)) <= 1


def test_negative_rate_is_refused() -> None:
    with pytest.raises(ValueError):
        TokenBucket(-1.0, 0.0)
