"""The checker on known histories: it must accept every linearizable one and reject the
classic violations (stale read, value flipping back, impossible CAS)."""

from __future__ import annotations

import math
import random

import pytest

from tests.sim.replication.linearizability import (
    CAS,
    READ,
    WRITE,
    CheckBudgetExceeded,
    Operation,
    check_history,
    check_single,
    explain,
)

INF = math.inf


def op(
    kind: str, value: object, output: object, call: float, ret: float, client: int = 0, key: str = "k"
) -> Operation:
    return Operation(client, key, kind, value, output, call, ret)


CASES = [
    # (name, history, linearizable)
    ("read of the initial value", [op(READ, None, None, 0, 1)], True),
    ("write then read sees it", [op(WRITE, 1, None, 0, 1), op(READ, None, 1, 2, 3)], True),
    ("stale read after a completed write", [op(WRITE, 1, None, 0, 1), op(READ, None, None, 2, 3)], False),
    (
        "read concurrent with a write may see the old value",
        [op(WRITE, 1, None, 0, 3), op(READ, None, None, 1, 2, client=1)],
        True,
    ),
    (
        "read concurrent with a write may see the new value",
        [op(WRITE, 1, None, 0, 3), op(READ, None, 1, 1, 2, client=1)],
        True,
    ),
    ("read of a value never written", [op(WRITE, 1, None, 0, 1), op(READ, None, 2, 2, 3)], False),
    (
        "value cannot flip back once both writes completed",
        [
            op(WRITE, 1, None, 0, 2),
            op(WRITE, 2, None, 0, 2, client=1),
            op(READ, None, 1, 3, 4, client=2),
            op(READ, None, 2, 5, 6, client=2),
            op(READ, None, 1, 7, 8, client=2),
        ],
        False,
    ),
    (
        "either order of two concurrent writes",
        [op(WRITE, 1, None, 0, 2), op(WRITE, 2, None, 0, 2, client=1), op(READ, None, 1, 3, 4, client=2)],
        True,
    ),
    (
        "successful CAS from the current value",
        [op(WRITE, 1, None, 0, 1), op(CAS, (1, 2), True, 2, 3), op(READ, None, 2, 4, 5)],
        True,
    ),
    (
        "CAS cannot succeed from a value that is not there",
        [op(WRITE, 1, None, 0, 1), op(CAS, (5, 2), True, 2, 3)],
        False,
    ),
    (
        "failed CAS leaves the value",
        [op(WRITE, 1, None, 0, 1), op(CAS, (5, 2), False, 2, 3), op(READ, None, 1, 4, 5)],
        True,
    ),
    (
        "CAS cannot fail when the expected value is there",
        [op(WRITE, 1, None, 0, 1), op(CAS, (1, 2), False, 2, 3)],
        False,
    ),
    (
        "two concurrent CAS from the same value cannot both succeed",
        [op(WRITE, 0, None, 0, 1), op(CAS, (0, 1), True, 2, 4), op(CAS, (0, 2), True, 2, 4, client=1)],
        False,
    ),
    (
        "a timed-out write may take effect later",
        [op(WRITE, 5, None, 0, INF), op(READ, None, None, 1, 2, client=1), op(READ, None, 5, 3, 4, client=1)],
        True,
    ),
    (
        "a timed-out write may never take effect",
        [op(WRITE, 5, None, 0, INF), op(READ, None, None, 1, 2, client=1)],
        True,
    ),
    (
        "a timed-out write cannot be undone once seen",
        [op(WRITE, 5, None, 0, INF), op(READ, None, 5, 1, 2, client=1), op(READ, None, None, 3, 4, client=1)],
        False,
    ),
    (
        "a timed-out CAS applies only if its expected value is there",
        [op(WRITE, 1, None, 0, 1), op(CAS, (9, 3), None, 2, INF), op(READ, None, 3, 5, 6, client=1)],
        False,
    ),
]


@pytest.mark.parametrize(("name", "history", "linearizable"), CASES, ids=[c[0] for c in CASES])
def test_known_histories(name: str, history: list[Operation], linearizable: bool) -> None:
    assert check_single(history) is linearizable, name


def test_history_is_checked_per_key_and_names_the_bad_key() -> None:
    good = [op(WRITE, 1, None, 0, 1, key="a"), op(READ, None, 1, 2, 3, key="a")]
    bad = [op(WRITE, 1, None, 0, 1, key="b"), op(READ, None, None, 2, 3, key="b")]
    assert check_history(good) == []
    assert check_history(good + bad) == ["b"]


def _random_linearizable_history(rng: random.Random, n: int) -> list[Operation]:
    """Run ops one at a time on a register (each at a linearization point), then widen
    every op's interval around its point: the result is linearizable by construction."""
    state = None
    ops = []
    for i in range(n):
        point = float(i)
        call = point - rng.random() * 3
        ret = point + rng.random() * 3
        choice = rng.random()
        if choice < 0.4:
            ops.append(op(WRITE, i, None, call, ret, client=i))
            state = i
        elif choice < 0.7:
            expected = state if rng.random() < 0.5 else -1
            ok = state == expected
            ops.append(op(CAS, (expected, i), ok, call, ret, client=i))
            if ok:
                state = i
        else:
            ops.append(op(READ, None, state, call, ret, client=i))
    return ops


@pytest.mark.parametrize("seed", range(20))
def test_widened_sequential_histories_are_linearizable(seed: int) -> None:
    rng = random.Random(seed)
    assert check_single(_random_linearizable_history(rng, 40))


@pytest.mark.parametrize("seed", range(20))
def test_a_read_of_a_value_never_written_is_caught_in_a_busy_history(seed: int) -> None:
    rng = random.Random(seed)
    ops = _random_linearizable_history(rng, 40)
    reads = [i for i, o in enumerate(ops) if o.kind == READ]
    if not reads:
        ops.append(op(READ, None, None, 100, 101))
        reads = [len(ops) - 1]
    victim = ops[reads[rng.randrange(len(reads))]]
    ops[ops.index(victim)] = op(READ, None, "never", victim.call, victim.ret, client=victim.client)
    assert not check_single(ops)


def test_search_is_bounded() -> None:
    # Many fully concurrent writes and a read no order satisfies: the search must give up
    # within its budget rather than run unbounded.
    ops = [op(WRITE, i, None, 0, 10, client=i) for i in range(18)] + [op(READ, None, "x", 0, 10, client=99)]
    with pytest.raises(CheckBudgetExceeded):
        check_single(ops, max_steps=1_000)


def test_explain_names_the_operation_no_order_can_place() -> None:
    history = [
        op(WRITE, 1, None, 0, 1),
        op(WRITE, 2, None, 2, 3, client=1),
        op(READ, None, 1, 4, 5, client=2),  # stale: 2 was written before it began
        op(READ, None, 2, 6, 7, client=2),
    ]
    text = explain(history)
    assert text.startswith("cannot place client 2 read(None) -> 1 [4.000, 5.000]")
    assert explain(history[:2]) == "linearizable"
