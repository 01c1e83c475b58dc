"""PartiQL tokens: names (keywords are names, matched without regard to case), quoted
names ("..."), strings ('...', a quote doubled inside), numbers, `?` and punctuation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from partita.common import errors
from partita.common.errors import DynamoError

TokenKind = Literal["name", "quoted", "string", "number", "param", "punct", "end"]

_MALFORMED = "Statement wasn't well formed, can't be processed: "
_SPACE = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)+", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# Longest first: `<<` before `<=` before `<`.
_PUNCT = ("<<", ">>", "<=", ">=", "<>", "!=", "||", "(", ")", "[", "]", "{", "}", ",", ".", ":", "*", ";",
          "=", "<", ">", "+", "-", "/")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str  # a name as written; a quoted name or string without its quotes
    at: int  # offset in the statement

    def is_keyword(self, word: str) -> bool:
        return self.kind == "name" and self.text.upper() == word


def malformed(detail: str) -> DynamoError:
    return errors.validation(_MALFORMED + detail)


def tokens(statement: str) -> list[Token]:
    out: list[Token] = []
    at, end = 0, len(statement)
    while True:
        space = _SPACE.match(statement, at)
        if space:
            at = space.end()
        if at >= end:
            out.append(Token("end", "", at))
            return out
        c = statement[at]
        if c in "'\"":
            text, at_after = _quoted(statement, at, c)
            out.append(Token("string" if c == "'" else "quoted", text, at))
            at = at_after
            continue
        if c == "?":
            out.append(Token("param", "?", at))
            at += 1
            continue
        name = _NAME.match(statement, at)
        if name:
            out.append(Token("name", name.group(), at))
            at = name.end()
            continue
        number = _NUMBER.match(statement, at)
        if number:
            out.append(Token("number", number.group(), at))
            at = number.end()
            continue
        punct = next((p for p in _PUNCT if statement.startswith(p, at)), None)
        if punct is None or statement.startswith("/*", at):  # an unclosed comment
            # DynamoDB names no detail for what it cannot read (a `#`, an unclosed `/*`).
            raise malformed("")
        out.append(Token("punct", punct, at))
        at += len(punct)


def _quoted(statement: str, at: int, quote: str) -> tuple[str, int]:
    """The text between `quote`s from `at` (a doubled quote stands for one) and the
    offset after the closing quote."""
    parts = []
    i = at + 1
    while True:
        close = statement.find(quote, i)
        if close < 0:
            raise malformed("")  # DynamoDB's answer to an unterminated literal names nothing
        parts.append(statement[i:close])
        if statement.startswith(quote * 2, close):
            parts.append(quote)
            i = close + 2
            continue
        return "".join(parts), close + 1
