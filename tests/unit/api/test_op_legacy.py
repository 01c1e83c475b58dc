"""Legacy parameters: validated with their own messages, translated into expressions.

Each translation is checked by evaluating it with the expression engine, so the tests
state what the legacy condition means, not which text it becomes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from partita.api import legacy
from partita.api.expressions import apply_update, evaluate, project, resolve_request
from partita.api.operations import query
from partita.common.errors import DynamoError
from partita.control.model import KeyElement, TableRecord
from tests.unit.records import table_record

ITEM: dict[str, Any] = {
    "pk": {"S": "k"},
    "n": {"N": "5"},
    "s": {"S": "hello"},
    "ss": {"SS": ["a", "b"]},
    "l": {"L": [{"N": "1"}]},
}


def _expected(conditions: dict[str, Any], operator: str | None = None) -> Any:
    ph = legacy.Placeholders()
    text = legacy.expected(conditions, operator, ph)
    assert text is not None
    return resolve_request(condition=text, names=ph.names, values=ph.values or None, legacy=True).condition


def _holds(
    conditions: dict[str, Any], item: dict[str, Any] | None = ITEM, operator: str | None = None
) -> bool:
    return evaluate(_expected(conditions, operator), item)


def _cmp(op: str, *values: Any) -> dict[str, Any]:
    return {"ComparisonOperator": op, "AttributeValueList": list(values)}


@pytest.mark.parametrize(
    ("conditions", "result"),
    [
        ({"n": _cmp("EQ", {"N": "5.0"})}, True),
        ({"n": _cmp("EQ", {"S": "5"})}, False),  # another type: false, not an error
        ({"n": _cmp("NE", {"N": "4"})}, True),
        ({"missing": _cmp("NE", {"N": "4"})}, True),  # NE holds for a missing attribute
        ({"n": _cmp("GT", {"N": "4"})}, True),
        ({"n": _cmp("LE", {"N": "4"})}, False),
        ({"s": _cmp("BEGINS_WITH", {"S": "he"})}, True),
        ({"ss": _cmp("CONTAINS", {"S": "a"})}, True),
        ({"s": _cmp("NOT_CONTAINS", {"S": "xyz"})}, True),
        ({"missing": _cmp("NOT_CONTAINS", {"S": "xyz"})}, False),  # unlike NE, false when missing
        ({"n": _cmp("IN", {"N": "1"}, {"N": "5"})}, True),
        ({"n": _cmp("BETWEEN", {"N": "5"}, {"N": "9"})}, True),
        ({"n": _cmp("NOT_NULL")}, True),
        ({"missing": _cmp("NULL")}, True),
        ({"n": {"Value": {"N": "5"}}}, True),
        ({"n": {"Exists": True, "Value": {"N": "6"}}}, False),
        ({"missing": {"Exists": False}}, True),
        ({"n": {"Exists": False}}, False),
    ],
)
def test_expected_conditions_mean_what_dynamodb_means(conditions: dict[str, Any], result: bool) -> None:
    assert _holds(conditions) is result


def test_expected_conditions_combine_with_and_by_default_and_or_on_request() -> None:
    one_false = {"n": {"Value": {"N": "5"}}, "s": {"Value": {"S": "nope"}}}
    assert _holds(one_false) is False
    assert _holds(one_false, operator="OR") is True


def test_expected_on_a_missing_item_sees_no_attributes() -> None:
    assert _holds({"pk": {"Exists": False}}, item=None) is True
    assert _holds({"pk": _cmp("NOT_NULL")}, item=None) is False


def test_attribute_names_that_are_reserved_words_need_no_care() -> None:
    # Placeholders are generated for every name, so reserved words pass.
    assert _holds({"name": _cmp("NULL")}) is True


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        ({"a": {"Value": {"N": "1"}, "AttributeValueList": [{"N": "1"}]}},
         "Value and AttributeValueList cannot be used together for Attribute: a"),
        ({"a": {"ComparisonOperator": "EQ"}}, "Value or AttributeValueList must be used with ComparisonOperator: EQ for Attribute: a"),
        ({"a": {"AttributeValueList": [{"N": "1"}]}}, "AttributeValueList can only be used with a ComparisonOperator for Attribute: a"),
        ({"a": {}}, "Value must be provided when Exists is null for Attribute: a"),
        ({"a": _cmp("BETWEEN", {"N": "1"})}, "Invalid number of argument(s) for the BETWEEN ComparisonOperator"),
        ({"a": _cmp("NULL", {"N": "1"})}, "Invalid number of argument(s) for the NULL ComparisonOperator"),
        ({"a": _cmp("LT", {"BOOL": True})}, "ComparisonOperator LT is not valid for BOOL AttributeValue type"),
        ({"a": _cmp("IN", {"L": []})}, "ComparisonOperator IN is not valid for L AttributeValue type"),
    ],
)  # fmt: skip
def test_invalid_expected_gets_the_legacy_message(conditions: dict[str, Any], message: str) -> None:
    with pytest.raises(DynamoError) as err:
        legacy.expected(conditions, None, legacy.Placeholders())
    assert err.value.message == "One or more parameter values were invalid: " + message


def test_between_bounds_out_of_order_are_refused() -> None:
    with pytest.raises(DynamoError) as err:
        legacy.expected({"a": _cmp("BETWEEN", {"N": "9"}, {"N": "1"})}, None, legacy.Placeholders())
    assert err.value.message == (
        "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"
    )


def test_an_unknown_comparison_operator_is_a_constraint_violation() -> None:
    with pytest.raises(DynamoError) as err:
        legacy.expected({"a": {"ComparisonOperator": "LIKE"}}, None, legacy.Placeholders())
    assert err.value.message.startswith(
        "1 validation error detected: Value 'LIKE' at 'expected.a.member.comparisonOperator'"
    )


def test_conditional_operator_without_its_map_is_refused() -> None:
    with pytest.raises(DynamoError) as err:
        legacy.conditional_operator({"ConditionalOperator": "OR", "Expected": {}}, "Expected")
    assert "ConditionalOperator" in err.value.message


def _updated(updates: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    ph = legacy.Placeholders()
    text, touched = legacy.attribute_updates(updates, ph)
    assert touched == frozenset(updates)
    assert text is not None
    resolved = resolve_request(update=text, names=ph.names, values=ph.values or None, legacy=True).update
    assert resolved is not None
    return apply_update(resolved, item).item


def test_attribute_updates_put_delete_and_add() -> None:
    out = _updated(
        {
            "n": {"Action": "ADD", "Value": {"N": "2"}},
            "s": {"Action": "DELETE"},
            "ss": {"Action": "DELETE", "Value": {"SS": ["a"]}},
            "l": {"Action": "ADD", "Value": {"L": [{"N": "2"}]}},
            "fresh": {"Value": {"S": "x"}},  # PUT is the default action
            "newlist": {"Action": "ADD", "Value": {"L": [{"S": "y"}]}},
        },
        ITEM,
    )
    assert out == {
        "pk": {"S": "k"},
        "n": {"N": "7"},
        "ss": {"SS": ["b"]},
        "l": {"L": [{"N": "1"}, {"N": "2"}]},
        "fresh": {"S": "x"},
        "newlist": {"L": [{"S": "y"}]},
    }


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"Action": "PUT"}, "Only DELETE action is allowed when no attribute value is specified"),
        (
            {"Action": "DELETE", "Value": {"S": "x"}},
            "DELETE action with value is not supported for the type S",
        ),
        ({"Action": "ADD", "Value": {"BOOL": True}}, "ADD action is not supported for the type BOOL"),
    ],
)
def test_invalid_attribute_updates_get_the_legacy_message(update: dict[str, Any], message: str) -> None:
    with pytest.raises(DynamoError) as err:
        legacy.attribute_updates({"a": update}, legacy.Placeholders())
    assert err.value.message == "One or more parameter values were invalid: " + message


def test_attributes_to_get_become_a_projection() -> None:
    ph = legacy.Placeholders()
    resolved = resolve_request(
        projection=legacy.projection(["s", "missing", "n"], ph), names=ph.names
    ).projection
    assert resolved is not None
    assert project(ITEM, resolved) == {"s": {"S": "hello"}, "n": {"N": "5"}}


def test_key_conditions_hold_one_or_two_conditions() -> None:
    with pytest.raises(DynamoError) as err:
        legacy.key_conditions({}, legacy.Placeholders())
    assert err.value.message == "Conditions can be of length 1 or 2 only"
    assert [legacy.indexable(op) for op in ("EQ", "BETWEEN", "NE", "NULL", "IN")] == [
        True,
        True,
        False,
        False,
        False,
    ]


_HASH_TABLE = table_record(name="hash-table")
_RANGE_TABLE = dataclasses.replace(
    table_record(name="range-table"),
    sort_key=KeyElement("sk", "N"),
    attribute_definitions=(("pk", "S"), ("sk", "N")),
)


def _key_condition_fault(record: TableRecord, conditions: dict[str, Any]) -> str:
    req = query.validate({"TableName": record.name, "KeyConditions": conditions})
    with pytest.raises(DynamoError) as err:
        req.key_condition(record)
    return err.value.message


@pytest.mark.parametrize(
    ("record", "conditions", "message"),
    [
        # The partition key's own condition cannot be indexed.
        (_RANGE_TABLE, {"pk": _cmp("NE", {"S": "x"})}, "Attempted conditional constraint is not an indexable operation"),
        # Neither can the sort key's, once the partition key's is EQ.
        (_RANGE_TABLE, {"pk": _cmp("EQ", {"S": "x"}), "sk": {"ComparisonOperator": "NULL"}},
         "Attempted conditional constraint is not an indexable operation"),
        # A missing partition key is reported first (dynalite's recorded order).
        (_RANGE_TABLE, {"z": {"ComparisonOperator": "NULL"}}, "Query condition missed key schema element: pk"),
        # So is a second condition on a table without a sort key,
        (_HASH_TABLE, {"pk": _cmp("EQ", {"S": "x"}), "z": {"ComparisonOperator": "NULL"}},
         "Query key condition not supported"),
        # and a partition key not read by EQ.
        (_RANGE_TABLE, {"pk": _cmp("BEGINS_WITH", {"S": "x"}), "sk": {"ComparisonOperator": "NULL"}},
         "Query key condition not supported"),
    ],
)  # fmt: skip
def test_a_condition_no_key_can_be_read_by_is_reported_in_dynamodbs_order(
    record: TableRecord, conditions: dict[str, Any], message: str
) -> None:
    assert _key_condition_fault(record, conditions) == message


def test_generated_placeholders_never_reuse_a_request_placeholder() -> None:
    ph = legacy.Placeholders(names={"#l0": "mine"})
    assert ph.name("other") == "#l1"
    assert ph.names == {"#l0": "mine", "#l1": "other"}


def test_a_legacy_in_takes_more_values_than_an_expression_may() -> None:
    many = [{"N": str(i)} for i in range(800)]
    assert _holds({"n": _cmp("IN", *many)}) is True
    ph = legacy.Placeholders()
    text = legacy.expected({"n": _cmp("IN", *many)}, None, ph)
    assert text is not None and len(text) > 4096
    # The same text sent as a ConditionExpression is over its limits.
    with pytest.raises(DynamoError, match="Expression size has exceeded"):
        resolve_request(condition=text, names=ph.names, values=ph.values)
