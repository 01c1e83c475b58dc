"""PartiQL statements for DynamoDB, parsed by recursive descent into `syntax`.

`?` parameters are bound while parsing, in order, to the request's AttributeValues:
what the tree holds is values, as if written as literals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from partita.api.expressions import ast
from partita.api.partiql import syntax as s
from partita.api.partiql.lexer import Token, malformed, tokens
from partita.common import errors
from partita.common.errors import DynamoError

T = TypeVar("T")
PARAMETER_COUNT = "Number of parameters in request and statement don't match."
_COMPARISONS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_CONDITION_FUNCTIONS = (
    "begins_with",
    "contains",
    "attribute_type",
    "attribute_exists",
    "attribute_not_exists",
)
_SET_FUNCTIONS = ("list_append", "set_add", "set_delete")
# `IS <type>`: PartiQL's type names, as the DynamoDB type each matches.
_IS_TYPES = {
    "NULL": "NULL",
    "BOOL": "BOOL",
    "BOOLEAN": "BOOL",
    "STRING": "S",
    "NUMERIC": "N",
    "NUMBER": "N",
    "BLOB": "B",
    "STRUCT": "M",
    "TUPLE": "M",
    "LIST": "L",
}
_RETURNING = {
    ("ALL", "OLD"): "ALL_OLD",
    ("MODIFIED", "OLD"): "UPDATED_OLD",
    ("ALL", "NEW"): "ALL_NEW",
    ("MODIFIED", "NEW"): "UPDATED_NEW",
}


def head(statement: str, parameters: list[dict[str, Any]] | None = None) -> tuple[str, str] | None:
    """What a statement does ("read" or "write") and the table it names, for the
    permissions and admission decided before it runs; None when it does not parse (it
    then fails before any table is touched). A full parse, not a look at its first
    words: an attribute may be named FROM (`SELECT a.from FROM t`)."""
    try:
        parsed = parse(statement, parameters)
    except DynamoError:
        return None
    return ("read" if isinstance(parsed, s.Select) else "write"), parsed.source.table


def parse(statement: str, parameters: list[dict[str, Any]] | None = None) -> s.Statement:
    parser = _Parser(tokens(statement), parameters or [])
    out = parser.statement()
    if parser.bound != len(parser.parameters):
        raise errors.validation(PARAMETER_COUNT)
    return out


class _Parser:
    def __init__(self, toks: list[Token], parameters: list[dict[str, Any]]) -> None:
        self.toks = toks
        self.i = 0
        self.parameters = parameters
        self.bound = 0

    # --- tokens ------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def _advance(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def _at_keyword(self, *words: str) -> bool:
        return any(self.tok.is_keyword(w) for w in words)

    def _at_punct(self, *marks: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text in marks

    def _keyword(self, word: str) -> None:
        if not self.tok.is_keyword(word):
            raise self._unexpected(f"expected {word}")
        self._advance()

    def _punct(self, mark: str) -> None:
        if not self._at_punct(mark):
            raise self._unexpected(f"expected '{mark}'")
        self._advance()

    def _unexpected(self, wanted: str) -> Exception:
        tok = self.tok
        if tok.kind == "end":
            return malformed(f"Unexpected end of statement ({wanted})")
        shown = {"string": f"'{tok.text}'", "quoted": f'"{tok.text}"'}.get(tok.kind, tok.text)
        return malformed(f"Unexpected token {shown} at position {tok.at + 1} ({wanted})")

    # --- statements --------------------------------------------------------------

    def statement(self) -> s.Statement:
        out: s.Statement
        if self._at_keyword("SELECT"):
            out = self._select()
        elif self._at_keyword("INSERT"):
            out = self._insert()
        elif self._at_keyword("UPDATE"):
            out = self._update()
        elif self._at_keyword("DELETE"):
            out = self._delete()
        else:
            raise malformed("Expected data manipulation")
        if self._at_punct(";"):
            self._advance()
        if self.tok.kind != "end":
            raise malformed("Unexpected token after expression")
        return out

    def _select(self) -> s.Select:
        self._keyword("SELECT")
        projection: tuple[ast.Path, ...] | None
        if self._at_punct("*"):
            self._advance()
            projection = None
        else:
            projection = tuple(self._comma_list(self._path))
        self._keyword("FROM")
        source = self._table_ref()
        where = None
        if self._at_keyword("WHERE"):
            self._advance()
            where = self._condition()
        order: list[tuple[ast.Path, bool]] = []
        if self._at_keyword("ORDER"):
            self._advance()
            self._keyword("BY")
            while True:
                key = self._path()
                descending = False
                if self._at_keyword("ASC", "DESC"):
                    descending = self._advance().text.upper() == "DESC"
                order.append((key, descending))
                if not self._at_punct(","):
                    break
                self._advance()
        return s.Select(projection, source, where, tuple(order))

    def _insert(self) -> s.Insert:
        self._keyword("INSERT")
        self._keyword("INTO")
        source = self._table_ref()
        self._keyword("VALUE")
        item = self._attribute_value()
        if "M" not in item:
            raise errors.validation(
                "Unsupported format in item expression. "
                "Please use struct format {...} to express item values for insert statement."
            )
        if self._at_keyword("RETURNING"):
            raise errors.validation("RETURNING is not supported in INSERT")
        return s.Insert(source, item["M"])

    def _update(self) -> s.Update:
        self._keyword("UPDATE")
        source = self._table_ref()
        actions: list[ast.UpdateAction] = []
        while self._at_keyword("SET", "REMOVE"):
            if self._advance().text.upper() == "SET":
                actions.extend(self._comma_list(self._assign))
            else:
                actions.extend(ast.UpdateAction("REMOVE", p) for p in self._comma_list(self._path))
        if not actions:
            raise self._unexpected("expected SET or REMOVE")
        self._keyword("WHERE")
        where = self._condition()
        return s.Update(source, tuple(actions), where, self._returning())

    def _delete(self) -> s.Delete:
        self._keyword("DELETE")
        self._keyword("FROM")
        source = self._table_ref()
        self._keyword("WHERE")
        where = self._condition()
        return s.Delete(source, where, self._returning())

    def _returning(self) -> s.Returning | None:
        if not self._at_keyword("RETURNING"):
            return None
        self._advance()
        which, when = self._advance().text.upper(), self._advance().text.upper()
        returning = _RETURNING.get((which, when))
        if returning is None or not self._at_punct("*"):
            raise errors.validation("Expected '*' after ( MODIFIED | ALL ) ( NEW | OLD ) in RETURNING clause")
        self._advance()
        return returning  # type: ignore[return-value]

    def _table_ref(self) -> s.TableRef:
        table = self._name("a table name")
        index = None
        if self._at_punct("."):
            self._advance()
            index = self._name("an index name")
        return s.TableRef(table, index)

    def _name(self, wanted: str) -> str:
        if self.tok.kind not in ("name", "quoted"):
            raise self._unexpected(f"expected {wanted}")
        return self._advance().text

    # --- SET ---------------------------------------------------------------------

    def _assign(self) -> ast.UpdateAction:
        """`path = value`, `path = a + b`, `list_append(a, b)`; `set_add(path, set)` and
        `set_delete(path, set)` are an UpdateExpression's ADD and DELETE."""
        path = self._path()
        self._punct("=")
        tok = self.tok
        if tok.kind == "name" and tok.text.lower() in _SET_FUNCTIONS and self._next_is("("):
            name = self._advance().text.lower()
            args = self._arguments()
            if len(args) != 2:
                raise malformed(f"{name} takes two arguments")
            if name == "list_append":
                return ast.UpdateAction("SET", path, ast.FunctionCall(name, args))
            return ast.UpdateAction("ADD" if name == "set_add" else "DELETE", path, args[1])
        first = self._operand()
        if self._at_punct("+", "-"):
            op = self._advance().text
            return ast.UpdateAction("SET", path, ast.Arithmetic(op, first, self._operand()))
        return ast.UpdateAction("SET", path, first)

    def _next_is(self, mark: str) -> bool:
        after = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else self.tok
        return after.kind == "punct" and after.text == mark

    def _arguments(self) -> tuple[ast.Operand, ...]:
        self._punct("(")
        args = self._comma_list(self._operand)
        self._punct(")")
        return tuple(args)

    def _comma_list(self, one: Callable[[], T]) -> list[T]:
        """One or more of what `one` parses, separated by commas."""
        out = [one()]
        while self._at_punct(","):
            self._advance()
            out.append(one())
        return out

    # --- conditions --------------------------------------------------------------

    def _condition(self) -> ast.Condition:
        left = self._conjunction()
        while self._at_keyword("OR"):
            self._advance()
            left = ast.Or(left, self._conjunction())
        return left

    def _conjunction(self) -> ast.Condition:
        left = self._negation()
        while self._at_keyword("AND"):
            self._advance()
            left = ast.And(left, self._negation())
        return left

    def _negation(self) -> ast.Condition:
        if self._at_keyword("NOT"):
            self._advance()
            return ast.Not(self._negation())
        return self._predicate()

    def _predicate(self) -> ast.Condition:
        if self._at_punct("("):
            self._advance()
            inner = self._condition()
            self._punct(")")
            return inner
        tok = self.tok
        if tok.kind == "name" and tok.text.lower() in _CONDITION_FUNCTIONS and self._next_is("("):
            name = self._advance().text.lower()
            args = self._arguments()
            wanted = 1 if name.startswith("attribute_") and name != "attribute_type" else 2
            if len(args) != wanted or not isinstance(args[0], ast.Path):
                raise malformed(
                    f"{name} takes a path and {'no other' if wanted == 1 else 'one more'} argument"
                )
            return ast.FunctionCall(name, args)
        subject = self._operand()
        if self._at_keyword("IS"):
            self._advance()
            negated = self._at_keyword("NOT")
            if negated:
                self._advance()
            if self.tok.kind != "name":
                raise self._unexpected("expected MISSING, NULL or a type")
            word = self._advance().text.upper()
            what = "MISSING" if word == "MISSING" else _IS_TYPES.get(word)
            if what is None:
                raise errors.validation(f"Unsupported data type for IS operator: {word}")
            if not isinstance(subject, ast.Path):
                raise malformed(f"IS {word} applies to an attribute")
            return _is(subject, what, negated)
        if self._at_keyword("BETWEEN"):
            self._advance()
            low = self._operand()
            self._keyword("AND")
            return ast.Between(subject, low, self._operand())
        if self._at_keyword("IN"):
            self._advance()
            close = {"[": "]", "(": ")"}.get(self.tok.text) if self.tok.kind == "punct" else None
            if close is None:
                raise self._unexpected("expected a list after IN")
            self._advance()
            options = self._comma_list(self._operand)
            self._punct(close)
            return ast.In(subject, tuple(options))
        if self.tok.kind == "punct" and self.tok.text in _COMPARISONS:
            op = _COMPARISONS[self._advance().text]
            return ast.Compare(op, subject, self._operand())
        raise self._unexpected("expected a comparison")

    def _operand(self) -> ast.Operand:
        tok = self.tok
        if tok.kind == "name" and tok.text.lower() == "size" and self._next_is("("):
            self._advance()
            args = self._arguments()
            if len(args) != 1 or not isinstance(args[0], ast.Path):
                raise malformed("size takes one path")
            return ast.FunctionCall("size", args)
        if tok.kind in ("name", "quoted") and not self._literal_keyword(tok):
            return self._path()
        return self._value()

    @staticmethod
    def _literal_keyword(tok: Token) -> bool:
        return tok.kind == "name" and tok.text.upper() in ("TRUE", "FALSE", "NULL")

    def _path(self) -> ast.Path:
        elements: list[ast.PathElement] = [self._name("an attribute name")]
        while True:
            if self._at_punct("."):
                self._advance()
                elements.append(self._name("an attribute name"))
            elif self._at_punct("["):
                self._advance()
                if self.tok.kind != "number" or not self.tok.text.isdigit():
                    raise self._unexpected("expected a list index")
                elements.append(int(self._advance().text))
                self._punct("]")
            else:
                return ast.Path(tuple(elements))

    # --- values ------------------------------------------------------------------

    def _value(self) -> ast.Literal:
        return ast.Literal(self._attribute_value())

    def _attribute_value(self) -> dict[str, Any]:
        tok = self.tok
        if tok.kind == "param":
            self._advance()
            if self.bound >= len(self.parameters):
                raise errors.validation(PARAMETER_COUNT)
            self.bound += 1
            return self.parameters[self.bound - 1]
        if tok.kind == "string":
            self._advance()
            return {"S": tok.text}
        if tok.kind == "number":
            self._advance()
            return {"N": tok.text}
        if self._at_punct("-", "+") and self._next_kind() == "number":
            sign = self._advance().text
            return {"N": ("-" if sign == "-" else "") + self._advance().text}
        if tok.kind == "name" and tok.text.upper() in ("TRUE", "FALSE"):
            self._advance()
            return {"BOOL": tok.text.upper() == "TRUE"}
        if tok.kind == "name" and tok.text.upper() == "NULL":
            self._advance()
            return {"NULL": True}
        if self._at_punct("{"):
            return self._map()
        if self._at_punct("["):
            return {"L": self._sequence("[", "]")}
        if self._at_punct("<<"):
            return _set_of(self._sequence("<<", ">>"))
        raise self._unexpected("expected a value")

    def _next_kind(self) -> str:
        return self.toks[self.i + 1].kind if self.i + 1 < len(self.toks) else "end"

    def _map(self) -> dict[str, Any]:
        self._punct("{")
        members: dict[str, Any] = {}
        if not self._at_punct("}"):
            while True:
                if self.tok.kind not in ("string", "quoted"):
                    raise self._unexpected("expected an attribute name in single quotes")
                name = self._advance().text
                self._punct(":")
                members[name] = self._attribute_value()
                if not self._at_punct(","):
                    break
                self._advance()
        self._punct("}")
        return {"M": members}

    def _sequence(self, opening: str, closing: str) -> list[dict[str, Any]]:
        self._punct(opening)
        out: list[dict[str, Any]] = []
        if not self._at_punct(closing):
            out = self._comma_list(self._attribute_value)
        self._punct(closing)
        return out


def _is(path: ast.Path, what: str, negated: bool) -> ast.Condition:
    """`IS [NOT] MISSING` as attribute_not_exists (attribute_exists), `IS [NOT] <type>`
    as (NOT) attribute_type."""
    if what == "MISSING":
        return ast.FunctionCall("attribute_exists" if negated else "attribute_not_exists", (path,))
    typed = ast.FunctionCall("attribute_type", (path, ast.Literal({"S": what})))
    return ast.Not(typed) if negated else typed


def _set_of(elements: list[dict[str, Any]]) -> dict[str, Any]:
    """`<<...>>` as a string, number or binary set: its elements all of one of these."""
    kinds = {next(iter(e)) for e in elements}
    if len(kinds) != 1 or not kinds <= {"S", "N", "B"}:
        raise malformed("A set holds strings, numbers or binaries, all of one kind, and at least one")
    (kind,) = kinds
    return {kind + "S": [e[kind] for e in elements]}
