"""UpdateTimeToLive and DescribeTimeToLive: serialization, validation, DynamoDB's rules
for changing the setting, and reads of expired items (boto3 against a real cluster)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.compat.helpers import PYTESTMARK, create_table, error, error_type, key, raw_call, validation

pytestmark = PYTESTMARK

COOL_DOWN = "Time to live has been modified multiple times within a fixed interval"


def _table(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")], prefix="ttl")


def _spec(attribute: str, enabled: bool) -> dict[str, Any]:
    return {"AttributeName": attribute, "Enabled": enabled}


# --- serialization ------------------------------------------------------------------------


def test_enabled_that_is_not_a_boolean_is_a_serialization_exception(cluster: Any, table_s: str) -> None:
    body = {"TableName": table_s, "TimeToLiveSpecification": {"AttributeName": "a", "Enabled": "yes"}}
    status, out = raw_call(cluster, "UpdateTimeToLive", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


def test_a_specification_that_is_not_a_structure_is_a_serialization_exception(
    cluster: Any, table_s: str
) -> None:
    body = {"TableName": table_s, "TimeToLiveSpecification": ["a", True]}
    status, out = raw_call(cluster, "UpdateTimeToLive", json.dumps(body).encode())
    assert (status, error_type(out)) == (400, "SerializationException")


# --- validation ------------------------------------------------------------------------------


def test_a_missing_specification_member_is_reported_by_its_path(cluster: Any, table_s: str) -> None:
    body = {"TableName": table_s, "TimeToLiveSpecification": {"AttributeName": "a"}}
    status, out = raw_call(cluster, "UpdateTimeToLive", json.dumps(body).encode())
    assert (status, error_type(out), out["message"]) == (
        400,
        "ValidationException",
        "1 validation error detected: Value null at 'timeToLiveSpecification.enabled' "
        "failed to satisfy constraint: Member must not be null",
    )


def test_an_attribute_name_over_255_characters_is_refused(ddb: Any, table_s: str) -> None:
    name = "x" * 256
    assert validation(
        ddb.update_time_to_live, TableName=table_s, TimeToLiveSpecification=_spec(name, True)
    ) == (
        f"1 validation error detected: Value '{name}' at 'timeToLiveSpecification.attributeName' "
        "failed to satisfy constraint: Member must have length less than or equal to 255"
    )


def test_an_invalid_table_name_is_refused_before_the_table_is_looked_up(ddb: Any) -> None:
    assert validation(ddb.describe_time_to_live, TableName="a;") == (
        "2 validation errors detected: Value 'a;' at 'tableName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; Value 'a;' at 'tableName' "
        "failed to satisfy constraint: Member must have length greater than or equal to 3"
    )


def test_a_missing_table_is_not_found(ddb: Any) -> None:
    name = f"ttl-missing-{key()[:8]}"
    expected = ("ResourceNotFoundException", f"Requested resource not found: Table: {name} not found")
    assert error(ddb.describe_time_to_live, TableName=name) == expected
    assert (
        error(ddb.update_time_to_live, TableName=name, TimeToLiveSpecification=_spec("a", True)) == expected
    )


# --- the rules of a change ---------------------------------------------------------------------


def test_a_new_table_has_ttl_disabled_and_no_attribute_name(ddb: Any, table_s: str) -> None:
    assert ddb.describe_time_to_live(TableName=table_s)["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "DISABLED"
    }


def test_disabling_ttl_that_is_not_on_is_refused(ddb: Any, table_s: str) -> None:
    message = validation(
        ddb.update_time_to_live, TableName=table_s, TimeToLiveSpecification=_spec("expires", False)
    )
    assert message == "TimeToLive is already disabled"


def test_enabling_echoes_the_specification_and_describe_shows_it_enabled(ddb: Any) -> None:
    name = _table(ddb)
    out = ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=_spec("expires", True))
    assert out["TimeToLiveSpecification"] == _spec("expires", True)
    assert ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": "expires",
    }


def test_one_ttl_attribute_per_table_and_a_cool_down_after_each_change(ddb: Any) -> None:
    name = _table(ddb)
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=_spec("expires", True))
    update = ddb.update_time_to_live
    # Content checks come first: they are answered even within the cool-down.
    assert validation(update, TableName=name, TimeToLiveSpecification=_spec("expires", True)) == (
        "TimeToLive is already enabled"
    )
    different = "TimeToLive is active on a different AttributeName: current AttributeName is expires"
    assert validation(update, TableName=name, TimeToLiveSpecification=_spec("other", True)) == different
    assert validation(update, TableName=name, TimeToLiveSpecification=_spec("other", False)) == different
    # A valid change right after the last one waits out the cool-down.
    assert validation(update, TableName=name, TimeToLiveSpecification=_spec("expires", False)) == COOL_DOWN
    assert ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"


def test_describe_table_does_not_show_time_to_live(ddb: Any) -> None:
    """DynamoDB's TableDescription has no TTL member; DescribeTimeToLive is the way."""
    name = _table(ddb)
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=_spec("expires", True))
    table = ddb.describe_table(TableName=name)["Table"]
    assert not [k for k in table if "TimeToLive" in k]


def test_an_expired_item_is_still_read_until_it_is_deleted(ddb: Any) -> None:
    """DynamoDB deletes expired items in the background; reads do not hide them."""
    name = _table(ddb)
    ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=_spec("expires", True))
    pk = key()
    item = {"pk": {"S": pk}, "expires": {"N": str(int(time.time()) - 3600)}}
    ddb.put_item(TableName=name, Item=item)
    assert ddb.get_item(TableName=name, Key={"pk": {"S": pk}}, ConsistentRead=True)["Item"] == item


# --- fuzzing ----------------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
_specs = (
    st.fixed_dictionaries(
        {},
        optional={
            "AttributeName": st.text(max_size=300) | _json,
            "Enabled": st.booleans() | _json,
            "Other": _json,
        },
    )
    | _json
)


@pytest.fixture(scope="module")
def fuzz_ttl_table(ddb: Any) -> str:
    """Its own table: a random request may turn TTL on, which must not touch shared ones."""
    return create_table(ddb, [("pk", "S")], prefix="ttl-fuzz")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_time_to_live_requests_get_a_dynamodb_answer_never_a_500(
    cluster: Any, fuzz_ttl_table: str, data: st.DataObject
) -> None:
    operation = data.draw(st.sampled_from(["UpdateTimeToLive", "DescribeTimeToLive"]))
    body: dict[str, Any] = {
        "TableName": data.draw(st.sampled_from([fuzz_ttl_table, "no-such-ttl-table"]) | _json)
    }
    if data.draw(st.booleans()):
        body["TimeToLiveSpecification"] = data.draw(_specs)
    status, answer = raw_call(cluster, operation, json.dumps(body).encode())
    assert status in (200, 400), (status, answer)
    if status == 400:
        assert error_type(answer) in (
            "ValidationException",
            "SerializationException",
            "ResourceNotFoundException",
        ), answer
