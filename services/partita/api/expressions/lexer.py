"""Tokens of DynamoDB's expression language, and its syntax-error message.

DynamoDB's lexer is strict: a bare name starts with a letter and continues with
letters, digits and `_`; `#name` and `:name` placeholders take letters, digits and `_`
after the sigil; digits alone are a number (only meaningful as a list index). Any
other character becomes a one-character token the parser will reject, which is how
DynamoDB reports `SET _a = :v` as `token: "_"`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from partita.common import errors

NAME = "name"
NAMEREF = "nameref"
VALREF = "valref"
NUMBER = "number"
OP = "op"
INVALID = "invalid"
EOF = "eof"


class Token(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


_TOKEN_RE = re.compile(
    r"""
    [ \t\r\n]*
    (?:
        (?P<name>[A-Za-z][A-Za-z0-9_]*)
      | (?P<nameref>\#[A-Za-z0-9_]+)
      | (?P<valref>:[A-Za-z0-9_]+)
      | (?P<number>[0-9]+)
      | (?P<op><>|<=|>=|[=<>()\[\],.+\-])
      | (?P<invalid>.)
    )
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(text: str) -> list[Token]:
    """All tokens of `text`, ending with one EOF token."""
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    end = len(text.rstrip(" \t\r\n"))
    match = _TOKEN_RE.match
    while pos < end:
        m = match(text, pos)
        assert m is not None  # the `invalid` branch matches any character
        kind = m.lastgroup
        assert kind is not None
        start, pos = m.span(kind)
        append(Token(kind, text[start:pos], start, pos))
    append(Token(EOF, "<EOF>", len(text), len(text)))
    return tokens


def syntax_error(kind: str, text: str, tokens: list[Token], index: int) -> errors.DynamoError:
    """DynamoDB's syntax error at token `index`.

    DynamoDB quotes the offending token and, as "near", the source text from the start
    of the token before it to the end of the token after it (observed: `a b` gives
    near "a b", `a[-1]` gives token "-" near "[-1", `f(x` gives token <EOF> near "x").
    """
    token = tokens[index]
    first = tokens[index - 1] if index > 0 else token
    if token.kind == EOF:
        near_end = first.end
    elif tokens[index + 1].kind != EOF:
        near_end = tokens[index + 1].end
    else:
        near_end = token.end
    near = text[first.start : near_end]
    return errors.validation(f'Invalid {kind}: Syntax error; token: "{token.text}", near: "{near}"')
