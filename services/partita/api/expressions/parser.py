"""Recursive-descent parsers for the three expression grammars, with the text-only checks.

`parse_condition` serves ConditionExpression, FilterExpression and
KeyConditionExpression (DynamoDB parses all three with one grammar and rejects what a
key condition cannot use afterwards); `parse_update` and `parse_projection` the other
two. Each returns a raw tree (see `ast`) or raises DynamoDB's ValidationException.

Besides syntax, a parse runs the checks that depend on the text alone, in DynamoDB's
order of precedence (observed by dynalite against DynamoDB): for conditions redundant
parentheses, unknown function names, misused functions, reserved words; for updates
reserved words, unknown function names, repeated sections, misused functions. They run
after the whole text parsed, so a syntax error anywhere wins over them. Checks that
need ExpressionAttributeNames/Values live in `resolve`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from partita.api.expressions import ast
from partita.api.expressions.lexer import (
    EOF,
    NAME,
    NAMEREF,
    NUMBER,
    OP,
    VALREF,
    Token,
    syntax_error,
    tokenize,
)
from partita.api.expressions.reserved_words import RESERVED_WORDS
from partita.common import errors

MAX_EXPRESSION_BYTES = 4096  # per expression, measured on the raw UTF-8 text
MAX_PATH_DEPTH = 32  # names plus indexes in one document path
MAX_IN_OPERANDS = 100
MAX_OPERATORS = 300  # comparators, AND/OR/NOT, BETWEEN, IN, functions, + and -
# Parenthesis nesting, bounded before parsing so that no text within the 4 KB limit can
# drive the recursive descent (or the tree walks after it) into Python's recursion
# limit. DynamoDB accepts `a<b or (a<b or (...))` 149 levels deep (299 operators,
# Alternator's test_deeply_nested_expression_2, recorded against DynamoDB); deeper
# conditions of that kind are refused for their operators first, as DynamoDB does.
MAX_PAREN_DEPTH = 150
# DynamoDB refuses a list index beyond a 32-bit integer ("List index is not within the
# allowable range", Alternator's test_projection_expression_list_index); smaller indexes
# past the end of a list simply match nothing.
MAX_LIST_INDEX = 2**31 - 1

CONDITION_FUNCTIONS = frozenset(
    {"attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains", "size"}
)
UPDATE_FUNCTIONS = frozenset({"if_not_exists", "list_append"})
COMPARATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
_CONDITION_KEYWORDS = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN"})
_UPDATE_CLAUSES = frozenset({"SET", "REMOVE", "ADD", "DELETE"})
# Kinds whose size error carries the size (observed: the others end at the ';').
_SIZE_SUFFIX_KINDS = frozenset({"ConditionExpression", "FilterExpression"})


def check_text(text: str, kind: str) -> None:
    """The checks DynamoDB makes before parsing: present and at most 4 KB."""
    if not text.strip(" \t\r\n"):
        raise errors.validation(f"Invalid {kind}: The expression can not be empty;")
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > MAX_EXPRESSION_BYTES:
        suffix = f" expression size: {size}" if kind in _SIZE_SUFFIX_KINDS else ""
        raise errors.validation(
            f"Invalid {kind}: Expression size has exceeded the maximum allowed size;{suffix}"
        )


def parse_condition(text: str, kind: str = "ConditionExpression", limited: bool = True) -> ast.Condition:
    """`limited=False` for a condition translated from legacy parameters, which DynamoDB
    does not hold to the expression's size or to 100 IN operands (dynalite's suite,
    recorded against DynamoDB, scans with an IN of 27,500 values). The operator and
    nesting limits stay: they bound the recursion of every walk over the tree, and a
    translation reaches them only with well over a hundred legacy conditions."""
    if limited:
        check_text(text, kind)
    parser = _Parser(text, kind, _CONDITION_KEYWORDS, limited)
    tree = parser.condition_expression()
    _check_condition_statics(tree, kind, parser.redundant_parens)
    return tree


def parse_update(text: str, kind: str = "UpdateExpression", limited: bool = True) -> ast.Update:
    if limited:
        check_text(text, kind)
    parser = _Parser(text, kind, _UPDATE_CLAUSES, limited)
    tree = parser.update_expression()
    _check_update_statics(tree, kind, parser.clauses)
    return tree


def parse_projection(text: str, kind: str = "ProjectionExpression", limited: bool = True) -> ast.Projection:
    if limited:
        check_text(text, kind)
    parser = _Parser(text, kind, frozenset(), limited)
    tree = parser.projection_expression()
    _check_reserved(iter(tree.paths), kind)
    return tree


# --- the parser ------------------------------------------------------------------------


class _Parser:
    """One parse of one text; positions index `tokens`."""

    __slots__ = (
        "clauses",
        "groups",
        "keywords",
        "kind",
        "limited",
        "operators",
        "pos",
        "redundant_parens",
        "text",
        "tokens",
    )

    def __init__(self, text: str, kind: str, keywords: frozenset[str], limited: bool = True) -> None:
        self.text = text
        self.kind = kind
        self.keywords = keywords
        self.limited = limited
        self.tokens = tokenize(text)
        _check_paren_depth(self.tokens, kind)
        self.pos = 0
        self.operators = 0
        # (open, close) token positions of every completed parenthesis pair; a pair whose
        # inside is exactly another pair is DynamoDB's "redundant parentheses".
        self.groups: set[tuple[int, int]] = set()
        self.redundant_parens = False
        self.clauses: list[str] = []

    # -- helpers --

    def error(self, index: int | None = None) -> errors.DynamoError:
        return syntax_error(self.kind, self.text, self.tokens, self.pos if index is None else index)

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def at_op(self, text: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == OP and token.text == text

    def expect_op(self, text: str) -> int:
        token = self.tokens[self.pos]
        if token.kind != OP or token.text != text:
            raise self.error()
        self.pos += 1
        return self.pos - 1

    def at_keyword(self, word: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == NAME and len(token.text) == len(word) and token.text.upper() == word

    def count_operator(self) -> None:
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            raise errors.validation(
                f"Invalid {self.kind}: The expression contains too many operators; "
                f"operator count: {self.operators}"
            )

    def list_index(self, digits: str) -> int:
        if len(digits.lstrip("0")) > len(str(MAX_LIST_INDEX)) or int(digits) > MAX_LIST_INDEX:
            raise errors.validation(
                f"Invalid {self.kind}: List index is not within the allowable range; index: [{digits}]"
            )
        return int(digits)

    def close_group(self, open_index: int, close_index: int) -> None:
        if (open_index + 1, close_index - 1) in self.groups:
            self.redundant_parens = True
        self.groups.add((open_index, close_index))

    def finish(self) -> None:
        if self.tokens[self.pos].kind != EOF:
            raise self.error()

    # -- paths --

    def path_name(self) -> str:
        token = self.tokens[self.pos]
        if token.kind == NAMEREF:
            self.pos += 1
            return token.text
        if token.kind == NAME and token.text.upper() not in self.keywords:
            self.pos += 1
            return token.text
        raise self.error()

    def path(self) -> ast.Path:
        return self.path_tail([self.path_name()])

    def path_tail(self, elements: list[ast.PathElement]) -> ast.Path:
        tokens = self.tokens
        while True:
            token = tokens[self.pos]
            if token.kind != OP:
                break
            if token.text == ".":
                self.pos += 1
                elements.append(self.path_name())
            elif token.text == "[":
                self.pos += 1
                number = tokens[self.pos]
                if number.kind != NUMBER:
                    raise self.error()
                self.pos += 1
                self.expect_op("]")
                elements.append(self.list_index(number.text))
            else:
                break
        if len(elements) > MAX_PATH_DEPTH:
            raise errors.validation(
                f"Invalid {self.kind}: The document path has too many nesting levels; "
                f"nesting levels: {len(elements)}"
            )
        return ast.Path(tuple(elements))

    # -- condition grammar --

    def condition_expression(self) -> ast.Condition:
        node = self.or_condition(False)
        self.finish()
        return node  # type: ignore[return-value]  # bare operands only come back when allowed

    # `bare_ok` is true inside parentheses, where the content may turn out to be an
    # operand (as in `(a) = :v`) rather than a condition; such a bare operand is passed
    # back up unchanged for the caller to finish the comparison.

    def or_condition(self, bare_ok: bool) -> ast.Condition | ast.Operand:
        left = self.and_condition(bare_ok)
        if isinstance(left, (ast.Path, ast.ValueRef)):
            return left
        while self.at_keyword("OR"):
            self.count_operator()
            self.pos += 1
            right = self.and_condition(False)
            left = ast.Or(left, right)  # type: ignore[arg-type]
        return left

    def and_condition(self, bare_ok: bool) -> ast.Condition | ast.Operand:
        left = self.not_condition(bare_ok)
        if isinstance(left, (ast.Path, ast.ValueRef)):
            return left
        while self.at_keyword("AND"):
            self.count_operator()
            self.pos += 1
            right = self.not_condition(False)
            left = ast.And(left, right)  # type: ignore[arg-type]
        return left

    def not_condition(self, bare_ok: bool) -> ast.Condition | ast.Operand:
        if self.at_keyword("NOT"):
            self.count_operator()
            self.pos += 1
            return ast.Not(self.not_condition(False))  # type: ignore[arg-type]
        return self.primary_condition(bare_ok)

    def primary_condition(self, bare_ok: bool) -> ast.Condition | ast.Operand:
        if self.at_op("("):
            open_index = self.pos
            self.pos += 1
            inner = self.or_condition(True)
            self.close_group(open_index, self.expect_op(")"))
            if isinstance(inner, (ast.Path, ast.ValueRef, ast.FunctionCall)):
                if isinstance(inner, ast.Path) and (self.at_op(".") or self.at_op("[")):
                    inner = self.path_tail(list(inner.elements))
                return self.condition_rest(inner, bare_ok)
            return inner
        return self.condition_rest(self.condition_operand(), bare_ok)

    def condition_rest(self, left: ast.Operand, bare_ok: bool) -> ast.Condition | ast.Operand:
        token = self.tokens[self.pos]
        if token.kind == OP and token.text in COMPARATORS:
            self.count_operator()
            self.pos += 1
            return ast.Compare(token.text, left, self.condition_operand())
        if self.at_keyword("BETWEEN"):
            self.count_operator()
            self.pos += 1
            low = self.condition_operand()
            if not self.at_keyword("AND"):
                raise self.error()
            self.pos += 1
            return ast.Between(left, low, self.condition_operand())
        if self.at_keyword("IN"):
            self.count_operator()
            self.pos += 1
            self.expect_op("(")
            options = [self.condition_operand()]
            while self.at_op(","):
                self.pos += 1
                options.append(self.condition_operand())
            self.expect_op(")")
            if len(options) > MAX_IN_OPERANDS and self.limited:
                raise errors.validation(
                    f"Invalid {self.kind}: The IN operator is provided with too many operands; "
                    f"number of operands: {len(options)}"
                )
            return ast.In(left, tuple(options))
        if isinstance(left, ast.FunctionCall):
            return left
        if bare_ok and token.kind == OP and token.text == ")":
            return left
        raise self.error()

    def condition_operand(self) -> ast.Operand:
        token = self.tokens[self.pos]
        if token.kind == OP and token.text == "(":
            open_index = self.pos
            self.pos += 1
            inner = self.condition_operand()
            self.close_group(open_index, self.expect_op(")"))
            if isinstance(inner, ast.Path) and (self.at_op(".") or self.at_op("[")):
                # DynamoDB accepts a parenthesised path continued outside the parentheses.
                inner = self.path_tail(list(inner.elements))
            return inner
        if token.kind == VALREF:
            self.pos += 1
            return ast.ValueRef(token.text)
        if (
            token.kind == NAME
            and self.tokens[self.pos + 1].text == "("
            and self.tokens[self.pos + 1].kind == OP
        ):
            return self.function_call(self.condition_operand)
        return self.path()

    def function_call(self, argument: Callable[[], ast.Operand]) -> ast.FunctionCall:
        name = self.tokens[self.pos].text
        self.count_operator()
        self.pos += 2
        args = [argument()]
        while self.at_op(","):
            self.pos += 1
            args.append(argument())
        self.expect_op(")")
        return ast.FunctionCall(name, tuple(args))

    # -- update grammar --

    def update_expression(self) -> ast.Update:
        actions: list[ast.UpdateAction] = []
        while True:
            token = self.tokens[self.pos]
            clause = token.text.upper() if token.kind == NAME else ""
            if clause not in _UPDATE_CLAUSES:
                raise self.error()
            self.pos += 1
            self.clauses.append(clause)
            while True:
                actions.append(self.update_action(clause))
                if not self.at_op(","):
                    break
                self.pos += 1
            if self.tokens[self.pos].kind == EOF:
                return ast.Update(tuple(actions))

    def update_action(self, clause: str) -> ast.UpdateAction:
        path = self.path()
        if clause == "SET":
            self.expect_op("=")
            return ast.UpdateAction(clause, path, self.set_value())
        if clause == "REMOVE":
            return ast.UpdateAction(clause, path)
        token = self.tokens[self.pos]
        if token.kind != VALREF:
            raise self.error()
        self.pos += 1
        return ast.UpdateAction(clause, path, ast.ValueRef(token.text))

    def set_value(self) -> ast.Operand:
        if self.at_op("("):
            # Either `(x + y)` or a parenthesised first operand as in `(x) + y`.
            self.pos += 1
            left = self.update_operand()
            if self.at_op("+") or self.at_op("-"):
                value = self.arithmetic(left)
                self.expect_op(")")
                return value
            self.expect_op(")")
        else:
            left = self.update_operand()
        if self.at_op("+") or self.at_op("-"):
            return self.arithmetic(left)
        return left

    def arithmetic(self, left: ast.Operand) -> ast.Arithmetic:
        op = self.tokens[self.pos].text
        self.count_operator()
        self.pos += 1
        return ast.Arithmetic(op, left, self.update_operand())

    def update_operand(self) -> ast.Operand:
        if self.at_op("("):
            self.pos += 1
            inner = self.update_atom()
            self.expect_op(")")
            return inner
        return self.update_atom()

    def update_atom(self) -> ast.Operand:
        token = self.tokens[self.pos]
        if token.kind == VALREF:
            self.pos += 1
            return ast.ValueRef(token.text)
        if (
            token.kind == NAME
            and self.tokens[self.pos + 1].text == "("
            and self.tokens[self.pos + 1].kind == OP
        ):
            return self.function_call(self.update_operand)
        return self.path()

    # -- projection grammar --

    def projection_expression(self) -> ast.Projection:
        paths = [self.path()]
        while self.at_op(","):
            self.pos += 1
            paths.append(self.path())
        self.finish()
        return ast.Projection(tuple(paths))


# --- text-only checks ------------------------------------------------------------------


def _check_paren_depth(tokens: list[Token], kind: str) -> None:
    if kind not in ("UpdateExpression", "ProjectionExpression"):
        _check_operator_count(tokens, kind)
    depth = 0
    for token in tokens:
        if token.kind == OP:
            if token.text == "(":
                depth += 1
                if depth > MAX_PAREN_DEPTH:
                    raise _fail(
                        kind,
                        "The expression contains too many nested parentheses; "
                        f"maximum nesting depth: {MAX_PAREN_DEPTH}",
                    )
            elif token.text == ")":
                depth -= 1


def _check_operator_count(tokens: list[Token], kind: str) -> None:
    """The operator limit, counted on the text as the parser would count it (the AND of
    a BETWEEN is part of the BETWEEN), so that a condition over the limit gets DynamoDB's
    "too many operators" even when it is also nested deeper than MAX_PAREN_DEPTH."""
    count = 0
    betweens = 0
    for token in tokens:
        if token.kind == OP and token.text in COMPARATORS:
            count += 1
        elif token.kind == NAME:
            word = token.text.upper()
            if word in ("OR", "NOT", "IN"):
                count += 1
            elif word == "BETWEEN":
                count += 1
                betweens += 1
            elif word == "AND":
                if betweens:
                    betweens -= 1
                else:
                    count += 1
    if count > MAX_OPERATORS:
        raise _fail(kind, f"The expression contains too many operators; operator count: {MAX_OPERATORS + 1}")


def _fail(kind: str, message: str) -> errors.DynamoError:
    return errors.validation(f"Invalid {kind}: {message}")


def _misused(kind: str, name: str) -> errors.DynamoError:
    return _fail(kind, f"The function is not allowed to be used this way in an expression; function: {name}")


def walk_functions(node: object) -> Iterator[ast.FunctionCall]:
    """Function calls in completion order: arguments before the call that holds them."""
    if isinstance(node, ast.Update):
        for action in node.actions:
            if action.value is not None:
                yield from walk_functions(action.value)
        return
    for child in ast.children(node):
        yield from walk_functions(child)
    if isinstance(node, ast.FunctionCall):
        yield node


def walk_paths(node: object) -> Iterator[ast.Path]:
    """Document paths in the order they appear in the text."""
    if isinstance(node, ast.Path):
        yield node
    elif isinstance(node, ast.Update):
        for action in node.actions:
            yield action.path
            if action.value is not None:
                yield from walk_paths(action.value)
    else:
        for child in ast.children(node):
            yield from walk_paths(child)


def _check_reserved(paths: Iterator[ast.Path], kind: str) -> None:
    for path in paths:
        for element in path.elements:
            if isinstance(element, str) and element[0] != "#" and element.upper() in RESERVED_WORDS:
                raise _fail(kind, f"Attribute name is a reserved keyword; reserved keyword: {element}")


def _misused_in_condition(node: object) -> Iterator[str]:
    """Names of functions used where DynamoDB does not allow them, in completion order.

    Only size() may be an operand (of a comparison or of another function), and size()
    alone is not a condition.
    """
    if isinstance(node, ast.FunctionCall):
        for arg in node.args:
            yield from _misused_in_condition(arg)
            if isinstance(arg, ast.FunctionCall) and arg.name != "size":
                yield arg.name
    elif isinstance(node, (ast.And, ast.Or)):
        yield from _misused_in_condition(node.left)
        yield from _misused_in_condition(node.right)
        for side in (node.left, node.right):
            if isinstance(side, ast.FunctionCall) and side.name == "size":
                yield "size"
    elif isinstance(node, ast.Not):
        yield from _misused_in_condition(node.operand)
        if isinstance(node.operand, ast.FunctionCall) and node.operand.name == "size":
            yield "size"
    elif isinstance(node, (ast.Compare, ast.Between, ast.In)):
        operands: tuple[ast.Operand, ...]
        if isinstance(node, ast.Compare):
            operands = (node.left, node.right)
        elif isinstance(node, ast.Between):
            operands = (node.operand, node.low, node.high)
        else:
            operands = (node.operand, *node.options)
        for operand in operands:
            yield from _misused_in_condition(operand)
        for operand in operands:
            if isinstance(operand, ast.FunctionCall) and operand.name != "size":
                yield operand.name


def _check_condition_statics(tree: ast.Condition, kind: str, redundant_parens: bool) -> None:
    if redundant_parens:
        raise _fail(kind, "The expression has redundant parentheses;")
    for call in walk_functions(tree):
        if call.name not in CONDITION_FUNCTIONS and call.name not in UPDATE_FUNCTIONS:
            raise _fail(kind, f"Invalid function name; function: {call.name}")
    # if_not_exists() and list_append() are functions DynamoDB knows, so in a condition
    # they are misused rather than unknown (Alternator's test_update_condition_other_funcs
    # and test_filter_expression, recorded against DynamoDB).
    for call in walk_functions(tree):
        if call.name in UPDATE_FUNCTIONS:
            raise _misused(kind, call.name)
    for name in _misused_in_condition(tree):
        raise _misused(kind, name)
    if isinstance(tree, ast.FunctionCall) and tree.name == "size":
        raise _misused(kind, "size")
    _check_reserved(walk_paths(tree), kind)


def _check_update_statics(tree: ast.Update, kind: str, clauses: list[str]) -> None:
    _check_reserved(walk_paths(tree), kind)
    for call in walk_functions(tree):
        if call.name not in UPDATE_FUNCTIONS:
            raise _fail(kind, f"Invalid function name; function: {call.name}")
    seen: set[str] = set()
    for clause in clauses:
        if clause in seen:
            raise _fail(kind, f'The "{clause}" section can only be used once in an update expression;')
        seen.add(clause)
    for call in walk_functions(tree):
        for arg in call.args:
            # DynamoDB refuses list_append as an argument of another function.
            if isinstance(arg, ast.FunctionCall) and arg.name == "list_append":
                raise _misused(kind, "list_append")
