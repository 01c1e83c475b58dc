"""Deserialization checks driven by DynamoDB's service model, as Coral makes them.

DynamoDB's service framework (Coral) reads a request into the operation's input shape
before anything else looks at it; a member of the wrong JSON type, however deeply
nested (an `Expected.<attr>.Exists`, an `ExclusiveStartKey.<attr>`, each
AttributeValue), fails there with a SerializationException in the framework's own
words, and the first one found decides the answer. The shapes are the public service
model botocore ships (`botocore/data/dynamodb/.../service-2.json`): it is loaded once,
at import, and compiled into one tree of checkers per operation, so a request costs a
walk over its own JSON and nothing more.

JSON `null` anywhere means "absent", as in Coral; what is required is decided by the
next stage (constraint validation), not here. Nesting is bounded explicitly
(`MAX_NESTING`): no request, however deep, reaches Python's recursion limit.
"""

from __future__ import annotations

from typing import Any

from partita.common import errors
from partita.common.errors import DynamoError

# JSON containers a request may nest: a document of DynamoDB's 32 levels is two
# containers per level (AttributeValue + its M or L) under at most a handful of request
# levels (RequestItems, a list, a PutRequest, Item). Deeper is refused with DynamoDB's
# nesting error before any recursion could get near the interpreter's limit.
MAX_NESTING = 80
_TOO_DEEP = "Nesting Levels have exceeded supported limits"

_LIST_START = "Start of list found where not expected"
_MAP_START = "Start of structure or map found where not expected."


def _token(value: object) -> str:
    """Coral's name for the JSON token it found (Jackson's token names)."""
    if value is True:
        return "TRUE_VALUE"
    if value is False:
        return "FALSE_VALUE"
    if isinstance(value, str):
        return "STRING_VALUE"
    return "NUMBER_VALUE"


def _container_error(value: object) -> DynamoError | None:
    if isinstance(value, list):
        return errors.serialization(_LIST_START)
    if isinstance(value, dict):
        return errors.serialization(_MAP_START)
    return None


def _scalar_mismatch(value: object, type_name: str) -> DynamoError:
    container = _container_error(value)
    if container is not None:
        return container
    return errors.serialization(f"{_token(value)} cannot be converted to {type_name}")


class Check:
    """Checks one JSON value (never None: null is absent) against one shape."""

    def check(self, value: object, depth: int) -> None:
        raise NotImplementedError


class StringCheck(Check):
    def __init__(self, type_name: str) -> None:
        self.type_name = type_name  # "String", or "Blob" for base64 text

    def check(self, value: object, depth: int) -> None:
        if not isinstance(value, str):
            raise _scalar_mismatch(value, self.type_name)


class BooleanCheck(Check):
    def check(self, value: object, depth: int) -> None:
        if not isinstance(value, bool):
            raise _scalar_mismatch(value, "Boolean")


class NumberCheck(Check):
    """integer, long, double: a JSON number (a fraction is the next stages' concern)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def check(self, value: object, depth: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _scalar_mismatch(value, self.type_name)


class TimestampCheck(Check):
    """Epoch seconds as a number, or a date string: Coral accepts both."""

    def check(self, value: object, depth: int) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise _scalar_mismatch(value, "Date")


class StructureCheck(Check):
    def __init__(self) -> None:
        self.members: dict[str, Check] = {}  # filled after creation: shapes may recurse

    def check(self, value: object, depth: int) -> None:
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise errors.serialization(_LIST_START)
            raise errors.serialization("Expected null")
        if depth > MAX_NESTING:
            raise errors.validation(_TOO_DEEP)
        members = self.members
        for name, member in value.items():
            if member is not None:
                checker = members.get(name)
                # Members the model does not know are ignored, as Coral ignores them.
                if checker is not None:
                    checker.check(member, depth + 1)


class ListCheck(Check):
    def __init__(self) -> None:
        self.member: Check = Check()

    def check(self, value: object, depth: int) -> None:
        if not isinstance(value, list):
            if isinstance(value, dict):
                raise errors.serialization(_MAP_START)
            raise errors.serialization("Expected list or null")
        if depth > MAX_NESTING:
            raise errors.validation(_TOO_DEEP)
        member = self.member
        for element in value:
            if element is not None:
                member.check(element, depth + 1)


class MapCheck(Check):
    def __init__(self) -> None:
        self.value: Check = Check()

    def check(self, value: object, depth: int) -> None:
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise errors.serialization(_LIST_START)
            raise errors.serialization("Expected map or null")
        if depth > MAX_NESTING:
            raise errors.validation(_TOO_DEEP)
        checker = self.value
        for element in value.values():
            if element is not None:
                checker.check(element, depth + 1)


_SCALAR_TYPE_NAMES = {"integer": "Integer", "long": "Long", "double": "Double", "float": "Float"}


class _Compiler:
    """One checker per shape name, shared by every operation that uses the shape."""

    def __init__(self, shapes: dict[str, Any]) -> None:
        self.shapes = shapes
        self.done: dict[str, Check] = {}

    def compile(self, name: str) -> Check:
        found = self.done.get(name)
        if found is not None:
            return found
        shape = self.shapes[name]
        kind = shape["type"]
        if kind == "structure":
            structure = StructureCheck()
            self.done[name] = structure  # before the members: AttributeValue contains itself
            for member_name, member in shape.get("members", {}).items():
                structure.members[member_name] = self.compile(member["shape"])
            return structure
        if kind == "list":
            listing = ListCheck()
            self.done[name] = listing
            listing.member = self.compile(shape["member"]["shape"])
            return listing
        if kind == "map":
            mapping = MapCheck()
            self.done[name] = mapping
            mapping.value = self.compile(shape["value"]["shape"])
            return mapping
        checker: Check
        if kind == "string":
            checker = StringCheck("String")
        elif kind == "blob":
            checker = StringCheck("Blob")
        elif kind == "boolean":
            checker = BooleanCheck()
        elif kind == "timestamp":
            checker = TimestampCheck()
        elif kind in _SCALAR_TYPE_NAMES:
            checker = NumberCheck(_SCALAR_TYPE_NAMES[kind])
        else:
            raise ValueError(f"shape {name}: unknown type {kind!r}")
        self.done[name] = checker
        return checker


def compile_model(model: dict[str, Any]) -> dict[str, StructureCheck]:
    """Each operation's input checker, by operation name."""
    compiler = _Compiler(model["shapes"])
    plans: dict[str, StructureCheck] = {}
    for name, operation in model["operations"].items():
        input_shape = operation.get("input")
        checker = compiler.compile(input_shape["shape"]) if input_shape else StructureCheck()
        if isinstance(checker, StructureCheck):
            plans[name] = checker
    return plans


def load_model() -> dict[str, Any]:
    """DynamoDB's service model as the installed botocore ships it."""
    from botocore.loaders import Loader  # type: ignore[import-untyped]

    model: dict[str, Any] = Loader().load_service_model("dynamodb", "service-2")
    return model


_MODEL = load_model()
_PLANS: dict[str, StructureCheck] = compile_model(_MODEL)
_NO_MEMBERS = StructureCheck()


def check_request(operation: str, body: dict[str, Any]) -> None:
    """Coral's deserialization stage for `operation`: the first wrongly typed member
    raises its SerializationException. An operation the model does not describe (none
    Partita serves today) is checked as a structure without members."""
    _PLANS.get(operation, _NO_MEMBERS).check(body, 1)


def input_members(operation: str) -> list[str]:
    """The members of an operation's input shape, in the model's order."""
    spec = _MODEL["operations"][operation].get("input")
    return list(_MODEL["shapes"][spec["shape"]].get("members", {})) if spec else []
