"""P2's parser choice: the hand-written recursive-descent parser against lark (LALR).

Run from the repository root (needs the `bench` extra: pip install -e '.[bench]'):

    .venv/bin/python -m bench.bench_parser_choice [--repeats 7] [--min-time 0.2]

Both parsers build the same trees: the lark grammars below cover DynamoDB's condition
and update languages, and their transformers produce `partita.api.expressions.ast`
nodes. Before anything is timed, every benchmark expression is parsed by every parser
and the trees are asserted equal (tests/unit/bench/test_parser_choice.py does the same).

Timed, per expression, is one cold parse (the parse cache is not involved): the best of
`--repeats` runs of CPU time (time.process_time, garbage collector off as in timeit),
each run looping long enough to last `--min-time` CPU seconds. The "all" row parses
every expression once: expressions / sum of the per-expression best times.

Columns:
- hand-written, full: `parse_condition` / `parse_update`, what the server runs: syntax
  plus DynamoDB's text-only checks (size limit, reserved words, function names, ...).
- hand-written, syntax: the recursive-descent parse alone (`_Parser`), the same work
  as the lark parsers, which make none of those checks.
- lark contextual / basic: LALR, the transformer applied during the parse (no parse
  tree is built, lark's fastest mode), contextual or basic lexer.
- lark tree+transform: LALR, contextual lexer, the usual style: `parse()` builds a
  Tree, then `Transformer.transform()` turns it into the AST.
A lark parser loaded with `cache=True` is checked for equal trees too; the cache only
saves grammar analysis when the Lark object is built, which the second table times.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SERVICES = str(Path(__file__).resolve().parent.parent / "services")
if _SERVICES not in sys.path:
    sys.path.insert(0, _SERVICES)

import lark  # noqa: E402
from lark import Lark, Token, Transformer  # noqa: E402

from partita.api.expressions import ast  # noqa: E402
from partita.api.expressions import parser as handwritten  # noqa: E402

# --- the expressions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Expression:
    label: str
    grammar: str  # "condition" or "update"
    text: str


EXPRESSIONS: tuple[Expression, ...] = (
    Expression("simple equality", "condition", "pk = :pk"),
    Expression("attribute_exists", "condition", "attribute_exists(pk)"),
    Expression("key condition + begins_with", "condition", "pk = :pk AND begins_with(sk, :prefix)"),
    Expression(
        "compound filter, 5 leaves",
        "condition",
        "#s = :s AND age BETWEEN :lo AND :hi AND (contains(tags, :t) OR size(profile.scores) > :n)"
        " AND NOT begins_with(sk, :p)",
    ),
    Expression("BETWEEN", "condition", "sk BETWEEN :lo AND :hi"),
    Expression("IN, 10 values", "condition", "#st IN (" + ", ".join(f":v{i}" for i in range(10)) + ")"),
    Expression("nested path a.b[3].c", "condition", "a.b[3].c = :v"),
    Expression("optimistic lock", "condition", "attribute_not_exists(pk) OR version = :expected"),
    Expression("SET with arithmetic", "update", "SET version = version + :one"),
    Expression(
        "SET + REMOVE + ADD",
        "update",
        "SET #n = :name, updatedAt = :now REMOVE tags[0], legacy ADD visits :one",
    ),
    Expression("if_not_exists", "update", "SET createdAt = if_not_exists(createdAt, :now)"),
    Expression("list_append", "update", "SET events = list_append(if_not_exists(events, :empty), :new)"),
    Expression("DELETE from a set", "update", "DELETE colours :gone"),
)

# --- the lark grammars ------------------------------------------------------------------------

# Terminals shared by both grammars, spelled like partita.api.expressions.lexer. Keywords
# are case-insensitive regexes ending at a word boundary with a priority above NAME, so
# the basic lexer reads `AND` as a keyword and `android` as a name.
_COMMON_TERMINALS = r"""
path: (NAME | NAMEREF) ("." (NAME | NAMEREF) | "[" INDEX "]")*

NAME: /[A-Za-z][A-Za-z0-9_]*/
NAMEREF: /#[A-Za-z0-9_]+/
VALUE: /:[A-Za-z0-9_]+/
INDEX: /[0-9]+/
%ignore /[ \t\r\n]+/
"""

# Precedence as DynamoDB's: OR < AND < NOT < comparison/BETWEEN/IN < operand. A
# parenthesised condition and a parenthesised operand share one rule (`atom`), which
# keeps the grammar LALR(1); the transformer rejects an operand where a condition must be.
CONDITION_GRAMMAR = (
    r"""
?start: or_cond

?or_cond: and_cond
        | or_cond _OR and_cond -> or_
?and_cond: not_cond
         | and_cond _AND not_cond -> and_
?not_cond: predicate
         | _NOT not_cond -> not_
?predicate: atom
          | atom COMPARATOR atom -> compare
          | atom _BETWEEN atom _AND atom -> between
          | atom _IN "(" atom ("," atom)* ")" -> in_
?atom: path
     | VALUE -> value
     | NAME "(" atom ("," atom)* ")" -> function
     | "(" or_cond ")"

COMPARATOR: /<>|<=|>=|=|<|>/
_OR.2: /or\b/i
_AND.2: /and\b/i
_NOT.2: /not\b/i
_BETWEEN.2: /between\b/i
_IN.2: /in\b/i
"""
    + _COMMON_TERMINALS
)

UPDATE_GRAMMAR = (
    r"""
start: clause+

?clause: _SET set_action ("," set_action)* -> set_clause
       | _REMOVE path ("," path)* -> remove_clause
       | _ADD path VALUE ("," path VALUE)* -> add_clause
       | _DELETE path VALUE ("," path VALUE)* -> delete_clause

set_action: path "=" set_value
?set_value: operand
          | operand ARITH operand -> arithmetic
          | "(" operand ARITH operand ")" -> arithmetic
?operand: atom
        | "(" atom ")"
?atom: path
     | VALUE -> value
     | NAME "(" operand ("," operand)* ")" -> function

ARITH: /[+-]/
_SET.2: /set\b/i
_REMOVE.2: /remove\b/i
_ADD.2: /add\b/i
_DELETE.2: /delete\b/i
"""
    + _COMMON_TERMINALS
)


class LarkSyntaxError(ValueError):
    """An operand where the grammar needs a condition (e.g. `a AND b`)."""


_OPERANDS = (ast.Path, ast.ValueRef)


def _condition(node: Any) -> ast.Condition:
    if isinstance(node, _OPERANDS):
        raise LarkSyntaxError(f"not a condition: {node!r}")
    return node  # type: ignore[no-any-return]


class _OperandsToAst(Transformer[Token, Any]):
    """Rules both grammars share."""

    def path(self, children: list[Token]) -> ast.Path:
        return ast.Path(tuple(int(t) if t.type == "INDEX" else t.value for t in children))

    def value(self, children: list[Token]) -> ast.ValueRef:
        return ast.ValueRef(children[0].value)

    def function(self, children: list[Any]) -> ast.FunctionCall:
        return ast.FunctionCall(children[0].value, tuple(children[1:]))


class ConditionToAst(_OperandsToAst):
    def compare(self, children: list[Any]) -> ast.Compare:
        left, op, right = children
        return ast.Compare(op.value, left, right)

    def between(self, children: list[Any]) -> ast.Between:
        operand, low, high = children
        return ast.Between(operand, low, high)

    def in_(self, children: list[Any]) -> ast.In:
        return ast.In(children[0], tuple(children[1:]))

    def and_(self, children: list[Any]) -> ast.And:
        return ast.And(_condition(children[0]), _condition(children[1]))

    def or_(self, children: list[Any]) -> ast.Or:
        return ast.Or(_condition(children[0]), _condition(children[1]))

    def not_(self, children: list[Any]) -> ast.Not:
        return ast.Not(_condition(children[0]))


class UpdateToAst(_OperandsToAst):
    def arithmetic(self, children: list[Any]) -> ast.Arithmetic:
        left, op, right = children
        return ast.Arithmetic(op.value, left, right)

    def set_action(self, children: list[Any]) -> ast.UpdateAction:
        return ast.UpdateAction("SET", children[0], children[1])

    def set_clause(self, children: list[ast.UpdateAction]) -> list[ast.UpdateAction]:
        return children

    def remove_clause(self, children: list[ast.Path]) -> list[ast.UpdateAction]:
        return [ast.UpdateAction("REMOVE", path) for path in children]

    def add_clause(self, children: list[Any]) -> list[ast.UpdateAction]:
        return _pairs("ADD", children)

    def delete_clause(self, children: list[Any]) -> list[ast.UpdateAction]:
        return _pairs("DELETE", children)

    def start(self, children: list[list[ast.UpdateAction]]) -> ast.Update:
        return ast.Update(tuple(action for clause in children for action in clause))


def _pairs(clause: str, children: list[Any]) -> list[ast.UpdateAction]:
    return [
        ast.UpdateAction(clause, children[i], ast.ValueRef(children[i + 1].value))
        for i in range(0, len(children), 2)
    ]


ParseFn = Callable[[str], object]


@dataclass(frozen=True)
class LarkParsers:
    """One lark configuration: a Lark object per grammar, built once."""

    condition: Lark
    update: Lark
    inline_transform: bool  # False: parse() builds a Tree, transformed afterwards

    def parse_condition(self, text: str) -> ast.Condition:
        if self.inline_transform:
            return _condition(self.condition.parse(text))
        return _condition(_CONDITION_TRANSFORMER.transform(self.condition.parse(text)))

    def parse_update(self, text: str) -> ast.Update:
        if self.inline_transform:
            return self.update.parse(text)  # type: ignore[return-value]
        return _UPDATE_TRANSFORMER.transform(self.update.parse(text))  # type: ignore[no-any-return]

    def for_grammar(self, grammar: str) -> ParseFn:
        return self.parse_condition if grammar == "condition" else self.parse_update


_CONDITION_TRANSFORMER = ConditionToAst()
_UPDATE_TRANSFORMER = UpdateToAst()


def build_lark(
    lexer: str = "contextual", inline_transform: bool = True, cache: bool | str = False
) -> LarkParsers:
    """Both grammars as LALR parsers; `cache` is lark's (True, or a file name prefix)."""

    def one(grammar: str, transformer: Transformer[Token, Any], suffix: str) -> Lark:
        cache_arg: bool | str = f"{cache}.{suffix}" if isinstance(cache, str) else cache
        return Lark(
            grammar,
            parser="lalr",
            lexer=lexer,
            transformer=transformer if inline_transform else None,
            cache=cache_arg,
        )

    return LarkParsers(
        condition=one(CONDITION_GRAMMAR, _CONDITION_TRANSFORMER, "condition"),
        update=one(UPDATE_GRAMMAR, _UPDATE_TRANSFORMER, "update"),
        inline_transform=inline_transform,
    )


# --- the hand-written parser ------------------------------------------------------------------


def handwritten_full(grammar: str) -> ParseFn:
    """The public entry points: syntax plus DynamoDB's text-only checks."""
    if grammar == "condition":
        return handwritten.parse_condition
    return handwritten.parse_update


def handwritten_syntax(grammar: str) -> ParseFn:
    """The recursive-descent parse alone, no text-only checks: the work lark does."""
    new = handwritten._Parser
    if grammar == "condition":
        keywords = handwritten._CONDITION_KEYWORDS

        def condition(text: str) -> object:
            return new(text, "ConditionExpression", keywords).condition_expression()

        return condition
    clauses = handwritten._UPDATE_CLAUSES

    def update(text: str) -> object:
        return new(text, "UpdateExpression", clauses).update_expression()

    return update


# --- the comparison ---------------------------------------------------------------------------

Factory = Callable[[str], ParseFn]


def contenders(cache_prefix: str | None = None) -> dict[str, Factory]:
    """Name -> (grammar -> parse function). With `cache_prefix`, adds lark with cache."""
    contextual = build_lark("contextual")
    basic = build_lark("basic")
    tree = build_lark("contextual", inline_transform=False)
    named: dict[str, Factory] = {
        "hand-written, full": handwritten_full,
        "hand-written, syntax": handwritten_syntax,
        "lark contextual": contextual.for_grammar,
        "lark basic": basic.for_grammar,
        "lark tree+transform": tree.for_grammar,
    }
    if cache_prefix is not None:
        build_lark("basic", cache=cache_prefix)  # writes the cache files
        named["lark basic, cache=True"] = build_lark("basic", cache=cache_prefix).for_grammar
    return named


def check_equal(named: dict[str, Factory], expressions: Sequence[Expression] = EXPRESSIONS) -> None:
    """Every contender gives the reference tree (the public hand-written parse) for every text."""
    for expression in expressions:
        expected = handwritten_full(expression.grammar)(expression.text)
        for name, factory in named.items():
            got = factory(expression.grammar)(expression.text)
            if got != expected:
                raise AssertionError(f"{name} parses {expression.text!r} as {got!r}, expected {expected!r}")


def best_seconds_per_call(fn: ParseFn, text: str, repeats: int, min_time: float) -> float:
    """Best of `repeats` runs of CPU seconds per call; each run lasts at least `min_time`."""
    clock = time.process_time
    loops = 1
    while True:  # calibrate
        start = clock()
        for _ in range(loops):
            fn(text)
        if clock() - start >= min_time:
            break
        loops *= 2
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = clock()
            for _ in range(loops):
                fn(text)
            best = min(best, (clock() - start) / loops)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best


def build_seconds(repeats: int, cache_prefix: str) -> dict[str, float]:
    """CPU seconds to build both Lark objects, without and with lark's cache."""

    def best(make: Callable[[], object]) -> float:
        times = []
        for _ in range(repeats):
            start = time.process_time()
            make()
            times.append(time.process_time() - start)
        return min(times)

    build_lark("basic", cache=cache_prefix)  # make sure the cache files exist
    return {
        "lark basic, no cache": best(lambda: build_lark("basic")),
        "lark contextual, no cache": best(lambda: build_lark("contextual")),
        "lark basic, cache=True (loaded)": best(lambda: build_lark("basic", cache=cache_prefix)),
    }


def run(repeats: int, min_time: float) -> str:
    with tempfile.TemporaryDirectory(prefix="partita-lark-cache-") as tmp:
        prefix = str(Path(tmp) / "grammar")
        named = contenders(prefix)
        check_equal(named)
        names = list(named)
        seconds: dict[str, list[float]] = {name: [] for name in names}
        for expression in EXPRESSIONS:
            for name in names:
                fn = named[name](expression.grammar)
                seconds[name].append(best_seconds_per_call(fn, expression.text, repeats, min_time))
        builds = build_seconds(repeats, prefix)

    lark_names = [name for name in names if name.startswith("lark")]
    lines = [
        f"Python {platform.python_version()}, lark {lark.__version__}, {platform.machine()}, "
        f"best of {repeats} runs of >= {min_time} s CPU each; parses per second (higher is better).",
        "",
        "| expression | " + " | ".join(names) + " | syntax vs best lark |",
        "|---|" + "---:|" * len(names) + "---:|",
    ]
    for i, expression in enumerate(EXPRESSIONS):
        per_second = [1.0 / seconds[name][i] for name in names]
        best_lark = min(seconds[name][i] for name in lark_names)
        ratio = best_lark / seconds["hand-written, syntax"][i]
        lines.append(
            f"| {expression.label} | "
            + " | ".join(f"{value:,.0f}" for value in per_second)
            + f" | {ratio:.1f}x |"
        )
    totals = {name: len(EXPRESSIONS) / sum(seconds[name]) for name in names}
    best_lark_total = max(totals[name] for name in lark_names)
    lines.append(
        f"| **all {len(EXPRESSIONS)}, each once** | "
        + " | ".join(f"**{totals[name]:,.0f}**" for name in names)
        + f" | **{totals['hand-written, syntax'] / best_lark_total:.1f}x** |"
    )
    lines += [
        "",
        "Building both Lark objects (once per process), CPU ms, best of "
        f"{repeats}: " + ", ".join(f"{name}: {value * 1000:.1f}" for name, value in builds.items()) + ".",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per case; the best counts")
    parser.add_argument("--min-time", type=float, default=0.2, help="CPU seconds per timed run")
    args = parser.parse_args(argv)
    print(run(args.repeats, args.min_time))
    return 0


if __name__ == "__main__":
    sys.exit(main())
