"""Expression engine throughput: parse + resolve + evaluate, cold and through the cache.

Run: .venv/bin/python bench/bench_expressions.py [cpu-seconds-per-case]

"cold" clears the parse cache before every operation, so it measures the parser;
"cached" is the steady state of a server seeing the same expression texts again.
Each operation is what one request costs the engine: resolve the request's expressions
against its names/values, then evaluate (or apply) against one item.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

from partita.api.expressions import (
    apply_update,
    evaluate,
    project,
    resolve_request,
)
from partita.api.expressions import cache as expression_cache

ITEM = {
    "pk": {"S": "user#42"},
    "sk": {"N": "17"},
    "status": {"S": "active"},
    "age": {"N": "31"},
    "tags": {"SS": ["a", "b", "c"]},
    "profile": {"M": {"name": {"S": "Ada"}, "scores": {"L": [{"N": "1"}, {"N": "2"}, {"N": "3"}]}}},
    "version": {"N": "7"},
}


def simple_condition() -> None:
    r = resolve_request(condition="attribute_exists(pk)")
    assert r.condition is not None
    evaluate(r.condition, ITEM)


def comparison_condition() -> None:
    r = resolve_request(condition="version = :v", values={":v": {"N": "7"}})
    assert r.condition is not None
    evaluate(r.condition, ITEM)


def compound_filter() -> None:
    r = resolve_request(
        filter="#s = :s AND age BETWEEN :lo AND :hi AND (contains(tags, :t) OR size(profile.scores) > :n)",
        names={"#s": "status"},
        values={
            ":s": {"S": "active"},
            ":lo": {"N": "18"},
            ":hi": {"N": "65"},
            ":t": {"S": "b"},
            ":n": {"N": "2"},
        },
    )
    assert r.filter is not None
    evaluate(r.filter, ITEM)


def update_with_condition() -> None:
    r = resolve_request(
        update="SET version = version + :one, profile.#n = :name REMOVE tags ADD visits :one",
        condition="version = :expected",
        names={"#n": "name"},
        values={":one": {"N": "1"}, ":name": {"S": "Grace"}, ":expected": {"N": "7"}},
    )
    assert r.update is not None and r.condition is not None
    if evaluate(r.condition, ITEM):
        apply_update(r.update, ITEM)


def projection() -> None:
    r = resolve_request(projection="pk, profile.scores[1], #s", names={"#s": "status"})
    assert r.projection is not None
    project(ITEM, r.projection)


CASES: list[tuple[str, Callable[[], None]]] = [
    ("attribute_exists(pk)", simple_condition),
    ("version = :v", comparison_condition),
    ("compound filter (5 leaves)", compound_filter),
    ("update + condition", update_with_condition),
    ("projection (3 paths)", projection),
]


def rate(operation: Callable[[], None], seconds: float, cold: bool) -> float:
    """Operations per second of CPU time, which other load on the machine disturbs less."""
    done = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(100):
            if cold:
                expression_cache.CACHE.clear()
            operation()
        done += 100
        now = time.process_time()
        if now >= deadline:
            return done / (now - start)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    print(f"{'expression':<28} {'cold ops/s':>12} {'cached ops/s':>13}   (per CPU second)")
    print("-" * 74)
    for name, operation in CASES:
        operation()  # fail fast if a case is broken
        cold = rate(operation, seconds, cold=True)
        cached = rate(operation, seconds, cold=False)
        print(f"{name:<28} {cold:>12,.0f} {cached:>13,.0f}")


if __name__ == "__main__":
    main()
