"""bench/bench_parser_choice.py compares like with like: its lark grammars build the same
trees as the hand-written parser, for every benchmark expression and lark configuration."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

lark = pytest.importorskip("lark")

# bench/ lives at the repository root, outside the source roots pytest puts on sys.path.
_REPO = Path(__file__).resolve().parents[3]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from bench import bench_parser_choice as bench  # noqa: E402
from partita.api.expressions.parser import parse_condition, parse_update  # noqa: E402

pytestmark = pytest.mark.timeout(60)

CONFIGURATIONS: dict[str, Callable[[], bench.LarkParsers]] = {
    "contextual": lambda: bench.build_lark("contextual"),
    "basic": lambda: bench.build_lark("basic"),
    "tree+transform": lambda: bench.build_lark("contextual", inline_transform=False),
}


@pytest.fixture(scope="module", params=list(CONFIGURATIONS))
def lark_parsers(request: pytest.FixtureRequest) -> bench.LarkParsers:
    return CONFIGURATIONS[request.param]()


@pytest.mark.parametrize("expression", bench.EXPRESSIONS, ids=lambda e: e.label)
def test_lark_and_hand_written_parsers_build_equal_trees(
    lark_parsers: bench.LarkParsers, expression: bench.Expression
) -> None:
    if expression.grammar == "condition":
        assert lark_parsers.parse_condition(expression.text) == parse_condition(expression.text)
    else:
        assert lark_parsers.parse_update(expression.text) == parse_update(expression.text)


def test_the_benchmark_checks_every_contender_including_the_cached_lark(tmp_path: Path) -> None:
    named = bench.contenders(str(tmp_path / "grammar"))
    assert {"hand-written, full", "hand-written, syntax", "lark basic, cache=True"} <= set(named)
    bench.check_equal(named)  # raises AssertionError on any difference


def test_the_check_catches_a_contender_that_parses_differently() -> None:
    def wrong(grammar: str) -> bench.ParseFn:
        return lambda text: None

    with pytest.raises(AssertionError, match="wrong"):
        bench.check_equal({"wrong": wrong})


def test_the_expression_set_covers_both_grammars() -> None:
    grammars = [expression.grammar for expression in bench.EXPRESSIONS]
    assert len(grammars) >= 12
    assert grammars.count("condition") >= 6 and grammars.count("update") >= 4


@pytest.mark.parametrize(
    "text",
    [
        "NOT a = :a AND b = :b OR c = :c",
        "a BeTwEeN :x aNd :y AnD b iN (:z)",
        "(a) = (:v)",
        "(a)between(:l)and(:h)",
        "android = :v AND notice <> :n OR inx = :i",
        "a.#b[3].c[0][1] = :v",
    ],
)
def test_lark_condition_grammar_follows_dynamodb_precedence_and_keywords(
    lark_parsers: bench.LarkParsers, text: str
) -> None:
    assert lark_parsers.parse_condition(text) == parse_condition(text)


@pytest.mark.parametrize(
    "text",
    [
        "remove x set a = :v, b = list_append(b, :l) add n :one delete s :s",
        "SET a = if_not_exists(a, :zero) + :one, b = (c - :d)",
        "  set   b=:val1  ",
    ],
)
def test_lark_update_grammar_matches_too(lark_parsers: bench.LarkParsers, text: str) -> None:
    assert lark_parsers.parse_update(text) == parse_update(text)


@pytest.mark.parametrize("text", ["a AND b", "a", "a = ", "a b", "NOT a"])
def test_lark_rejects_what_is_not_a_condition(lark_parsers: bench.LarkParsers, text: str) -> None:
    with pytest.raises((bench.LarkSyntaxError, lark.exceptions.LarkError)):
        lark_parsers.parse_condition(text)
