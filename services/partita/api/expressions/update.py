"""Apply a resolved UpdateExpression to an item, purely: the input is never modified.

DynamoDB's semantics, as observed (mostly through ScyllaDB Alternator's tests):
* every right-hand side is evaluated against the item *before* the update, so
  `SET c = b REMOVE b` copies b and `SET x = :v, y = x` fails when x did not exist;
* list indexes name positions in the item before the update: `REMOVE a[1] SET a[3] = :v`
  changes the element that was at 3, then shifts the list. So SET/ADD/DELETE run first
  and removals run last, highest index first;
* SET beyond the end of a list appends, several appends in index order;
* ADD creates a missing number or set; DELETE of a missing attribute does nothing and a
  set left empty disappears; REMOVE of a missing leaf does nothing, but every step above
  the leaf must exist (except when there is no item at all);
* a path through a missing or mistyped container is "invalid for update".

The returned `UpdateResult` also carries the paths the expression acted on, which is
what ReturnValues UPDATED_OLD / UPDATED_NEW project the old and new items on.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from partita.api.expressions import ast
from partita.api.expressions.paths import ResolvedPath, get_value
from partita.api.expressions.projection import project_paths
from partita.api.values import (
    SET_TYPES,
    AttributeValue,
    Item,
    b64_bytes,
    value_type,
)
from partita.common import errors
from partita.common.numbers import CONTEXT, check_arithmetic_result, check_limits, format_number

_MISSING = "The provided expression refers to an attribute that does not exist in the item"
_BAD_TYPE = "An operand in the update expression has an incorrect data type"
_BAD_PATH = "The document path provided in the update expression is invalid for update"


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """The item after the update and the paths the update acted on."""

    item: Item
    paths: tuple[ResolvedPath, ...]

    def updated_old(self, old_item: Item | None) -> Item:
        """ReturnValues UPDATED_OLD: the acted-on paths as they were."""
        return project_paths(old_item or {}, self.paths)

    def updated_new(self) -> Item:
        """ReturnValues UPDATED_NEW: the acted-on paths as they are now."""
        return project_paths(self.item, self.paths)


def modified_attributes(update: ast.Update) -> frozenset[str]:
    """Top-level attribute names a resolved update may change (for key-attribute checks)."""
    return frozenset(a.path.elements[0] for a in update.actions)  # type: ignore[misc]


def apply_update(update: ast.Update, item: Item | None, exists: bool = True) -> UpdateResult:
    """Apply a resolved update to `item` (None: the item does not exist yet). `exists`
    False: `item` is a new item made of its key alone. REMOVE then has nothing to take
    away and is skipped, a nested path too (DynamoDB accepts `REMOVE x.y` on a missing
    item, though on an item without `x` the path is invalid)."""
    old: Item = item if item is not None else {}
    writes: list[tuple[ast.UpdateAction, AttributeValue | None]] = []
    removals: list[ResolvedPath] = []
    for action in update.actions:
        if action.clause == "SET":
            assert action.value is not None
            writes.append((action, _evaluate(action.value, old)))
        elif action.clause == "REMOVE":
            removals.append(action.path.elements)
        else:
            writes.append((action, None))

    state = _Writer(old)
    appends: list[tuple[ResolvedPath, AttributeValue]] = []
    for action, value in writes:
        path = action.path.elements
        if action.clause == "SET":
            assert value is not None
            new_value: AttributeValue = value
        elif action.clause == "ADD":
            assert isinstance(action.value, ast.Literal)
            new_value = add(get_value(state.item, path), action.value.value)
        else:
            assert isinstance(action.value, ast.Literal)
            current = get_value(state.item, path)
            if current is None:
                state.container(path)  # the parent must still exist
                continue
            remaining = delete(current, action.value.value)
            if remaining is None:
                removals.append(path)
                continue
            new_value = remaining
        if _is_append(state.item, path):
            appends.append((path, new_value))
        else:
            state.put(path, new_value)

    # Removals, then appends: every index in the expression names a position in the
    # list as it was, so a removal must not reach an element appended by this update.
    if item is not None and exists:
        removals.sort(key=_descending_key, reverse=True)
        for path in removals:
            state.remove(path)
    # Several appends land in index order, whatever order they were written in.
    appends.sort(key=lambda entry: entry[0][-1])
    for path, new_value in appends:
        state.put(path, new_value)
    return UpdateResult(state.item, tuple(a.path.elements for a in update.actions))


# --- evaluation of SET values ------------------------------------------------------------


def _evaluate(node: ast.Operand, item: Item) -> AttributeValue:
    if isinstance(node, ast.Literal):
        return node.value
    if isinstance(node, ast.Path):
        value = get_value(item, node.elements)
        if value is None:
            raise errors.validation(_MISSING)
        return value
    if isinstance(node, ast.Arithmetic):
        left = _number(_evaluate(node.left, item))
        right = _number(_evaluate(node.right, item))
        try:
            result = CONTEXT.add(left, right) if node.op == "+" else CONTEXT.subtract(left, right)
        except decimal.InvalidOperation:
            raise errors.validation(_BAD_TYPE) from None
        return {"N": format_number(check_arithmetic_result(result))}
    assert isinstance(node, ast.FunctionCall)
    if node.name == "if_not_exists":
        path = node.args[0]
        assert isinstance(path, ast.Path)
        existing = get_value(item, path.elements)
        return existing if existing is not None else _evaluate(node.args[1], item)
    first = _evaluate(node.args[0], item)
    second = _evaluate(node.args[1], item)
    if "L" not in first or "L" not in second:
        raise errors.validation(_BAD_TYPE)
    return {"L": [*first["L"], *second["L"]]}


def _number(value: AttributeValue) -> Decimal:
    text = value.get("N")
    if text is None:
        raise errors.validation(_BAD_TYPE)
    return Decimal(text)


# --- ADD and DELETE --------------------------------------------------------------------------


def add(current: AttributeValue | None, operand: AttributeValue) -> AttributeValue:
    """ADD: sum of numbers or union of sets; a missing attribute starts from nothing."""
    if current is None:
        return operand
    kind = value_type(current)
    if kind != value_type(operand):
        raise errors.validation(_BAD_TYPE)
    if kind == "N":
        total = CONTEXT.add(Decimal(current["N"]), Decimal(operand["N"]))
        return {"N": format_number(check_limits(total))}
    if kind not in SET_TYPES:
        raise errors.validation(_BAD_TYPE)
    members = list(current[kind])
    seen = {_member_key(kind, m) for m in members}
    for member in operand[kind]:
        key = _member_key(kind, member)
        if key not in seen:
            seen.add(key)
            members.append(member)
    return {kind: members}


def delete(current: AttributeValue, operand: AttributeValue) -> AttributeValue | None:
    """DELETE: set difference; None when nothing is left (the attribute goes away)."""
    kind = value_type(current)
    if kind not in SET_TYPES or kind != value_type(operand):
        raise errors.validation(_BAD_TYPE)
    gone = {_member_key(kind, m) for m in operand[kind]}
    remaining = [m for m in current[kind] if _member_key(kind, m) not in gone]
    return {kind: remaining} if remaining else None


def _member_key(kind: str, member: str) -> Any:
    # Set members are equal by value: 1 and 1.0 are one number, and two base64 texts
    # of the same bytes are one binary.
    if kind == "NS":
        return Decimal(member).normalize(CONTEXT)
    if kind == "BS":
        return b64_bytes(member)
    return member


# --- writing into a copy ---------------------------------------------------------------


class _Writer:
    """The item under update: a copy whose touched containers are copied on first write."""

    __slots__ = ("copied", "item")

    def __init__(self, item: Item) -> None:
        self.item: Item = dict(item)
        self.copied: set[str] = set()

    def container(self, path: ResolvedPath) -> dict[str, Any] | list[Any]:
        """The map entries or list elements holding the last step of `path`."""
        name = path[0]
        assert isinstance(name, str)
        if len(path) == 1:
            return self.item
        value = self.item.get(name)
        if value is None:
            raise errors.validation(_BAD_PATH)
        if name not in self.copied:
            value = self.item[name] = _copy_containers(value)
            self.copied.add(name)
        for element in path[1:-1]:
            value = _step(value, element)
        last = path[-1]
        if isinstance(last, str):
            entries = value.get("M")
            if entries is None:
                raise errors.validation(_BAD_PATH)
            return entries  # type: ignore[no-any-return]
        elements = value.get("L")
        if elements is None:
            raise errors.validation(_BAD_PATH)
        return elements  # type: ignore[no-any-return]

    def put(self, path: ResolvedPath, value: AttributeValue) -> None:
        holder = self.container(path)
        last = path[-1]
        if isinstance(holder, dict) or last < len(holder):  # type: ignore[operator]
            holder[last] = value  # type: ignore[index]
        else:
            holder.append(value)

    def remove(self, path: ResolvedPath) -> None:
        holder = self.container(path)
        last = path[-1]
        if isinstance(holder, dict):
            holder.pop(last, None)  # type: ignore[arg-type]
        elif last < len(holder):  # type: ignore[operator]
            del holder[last]  # type: ignore[arg-type]


def _step(value: AttributeValue, element: ast.PathElement) -> AttributeValue:
    if isinstance(element, str):
        entries = value.get("M")
        child = entries.get(element) if entries is not None else None
    else:
        elements = value.get("L")
        child = elements[element] if elements is not None and element < len(elements) else None
    if child is None:
        raise errors.validation(_BAD_PATH)
    return child  # type: ignore[no-any-return]


def _copy_containers(value: AttributeValue) -> AttributeValue:
    """A copy of a value's maps and lists; scalars and sets are shared (never mutated)."""
    entries = value.get("M")
    if entries is not None:
        return {"M": {k: _copy_containers(v) for k, v in entries.items()}}
    elements = value.get("L")
    if elements is not None:
        return {"L": [_copy_containers(v) for v in elements]}
    return value


def _is_append(item: Item, path: ResolvedPath) -> bool:
    """Whether writing `path` adds past the end of an existing list."""
    last = path[-1]
    if not isinstance(last, int) or len(path) < 2:
        return False
    parent = get_value(item, path[:-1])
    elements = parent.get("L") if parent is not None else None
    return elements is not None and last >= len(elements)


def _descending_key(path: ResolvedPath) -> tuple[tuple[int, int | str], ...]:
    # Sorting removals in reverse order of this key removes later list elements before
    # earlier ones, so every index still names its position before the update.
    return tuple((0, e) if isinstance(e, int) else (1, e) for e in path)
