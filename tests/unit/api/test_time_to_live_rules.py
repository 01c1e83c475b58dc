"""UpdateTimeToLive's request validation and DynamoDB's rules for changing the setting.

The rules are a pure function of the current setting, the request and the time, so the
one-hour cool-down is tested with the clock as an argument.
"""

from __future__ import annotations

from typing import Any

import pytest

from partita.api.operations import describe_time_to_live, update_time_to_live
from partita.api.operations.update_time_to_live import COOL_DOWN_SECONDS, change
from partita.common.errors import DynamoError
from partita.control.model import TimeToLive

T0 = 1_700_000_000.0
OFF = TimeToLive()
ON = TimeToLive("ENABLED", "expires", T0)
COOL_DOWN_MESSAGE = "Time to live has been modified multiple times within a fixed interval"


def _refused(current: TimeToLive, attribute: str, enabled: bool, now: float) -> str:
    with pytest.raises(DynamoError) as err:
        change(current, attribute, enabled, now)
    assert err.value.code == "ValidationException"
    return err.value.message


def test_enabling_a_table_without_ttl_turns_it_on_for_that_attribute() -> None:
    assert change(OFF, "expires", True, T0) == TimeToLive("ENABLED", "expires", T0)


def test_disabling_with_the_attribute_in_use_after_the_cool_down_turns_it_off() -> None:
    assert change(ON, "expires", False, T0 + COOL_DOWN_SECONDS) == TimeToLive(
        "DISABLED", None, T0 + COOL_DOWN_SECONDS
    )


@pytest.mark.parametrize(
    ("current", "attribute", "enabled", "message"),
    [
        (ON, "expires", True, "TimeToLive is already enabled"),
        (
            ON,
            "other",
            True,
            "TimeToLive is active on a different AttributeName: current AttributeName is expires",
        ),
        (
            ON,
            "other",
            False,
            "TimeToLive is active on a different AttributeName: current AttributeName is expires",
        ),
        (OFF, "expires", False, "TimeToLive is already disabled"),
        (TimeToLive("DISABLED", None, T0), "expires", False, "TimeToLive is already disabled"),
        (TimeToLive("ENABLING", "expires", T0), "expires", True, "TimeToLive is already enabled"),
    ],
)
def test_a_change_that_changes_nothing_or_names_another_attribute_is_refused_even_after_the_cool_down(
    current: TimeToLive, attribute: str, enabled: bool, message: str
) -> None:
    assert _refused(current, attribute, enabled, T0 + 10 * COOL_DOWN_SECONDS) == message


def test_content_checks_come_before_the_cool_down() -> None:
    # DynamoDB answers "already enabled", not the cool-down, right after an enable.
    assert _refused(ON, "expires", True, T0 + 1) == "TimeToLive is already enabled"


@pytest.mark.parametrize(
    ("current", "attribute", "enabled"),
    [(ON, "expires", False), (TimeToLive("DISABLED", None, T0), "expires", True)],
)
def test_a_second_change_within_the_cool_down_is_refused_and_one_after_it_is_accepted(
    current: TimeToLive, attribute: str, enabled: bool
) -> None:
    assert _refused(current, attribute, enabled, T0 + 1) == COOL_DOWN_MESSAGE
    assert _refused(current, attribute, enabled, T0 + COOL_DOWN_SECONDS - 0.001) == COOL_DOWN_MESSAGE
    assert change(current, attribute, enabled, T0 + COOL_DOWN_SECONDS).changed_at == T0 + COOL_DOWN_SECONDS


def _validation(body: Any) -> str:
    with pytest.raises(DynamoError) as err:
        update_time_to_live.validate(body)
    assert err.value.code == "ValidationException"
    return err.value.message


def test_a_missing_specification_and_table_name_are_reported_together() -> None:
    assert _validation({}) == (
        "2 validation errors detected: "
        "Value null at 'tableName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null"
    )


def test_missing_members_of_the_specification_are_each_reported() -> None:
    assert _validation({"TableName": "abc", "TimeToLiveSpecification": {"AttributeName": None}}) == (
        "2 validation errors detected: "
        "Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null; "
        "Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null"
    )


@pytest.mark.parametrize(
    ("name", "constraint"),
    [
        ("", "Member must have length greater than or equal to 1"),
        ("x" * 256, "Member must have length less than or equal to 255"),
    ],
)
def test_the_attribute_name_is_1_to_255_characters(name: str, constraint: str) -> None:
    body = {"TableName": "abc", "TimeToLiveSpecification": {"AttributeName": name, "Enabled": True}}
    assert _validation(body) == (
        f"1 validation error detected: Value '{name}' at 'timeToLiveSpecification.attributeName' "
        f"failed to satisfy constraint: {constraint}"
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"AttributeName": "a", "Enabled": "true"},
        {"AttributeName": 3, "Enabled": True},
        {"AttributeName": ["a"], "Enabled": True},
    ],
)
def test_wrongly_typed_members_are_a_serialization_exception(spec: dict[str, Any]) -> None:
    with pytest.raises(DynamoError) as err:
        update_time_to_live.validate({"TableName": "abc", "TimeToLiveSpecification": spec})
    assert err.value.code == "SerializationException"


def test_a_specification_that_is_not_a_structure_is_a_serialization_exception() -> None:
    with pytest.raises(DynamoError) as err:
        update_time_to_live.validate({"TableName": "abc", "TimeToLiveSpecification": "on"})
    assert err.value.code == "SerializationException"


def test_a_valid_request() -> None:
    body = {"TableName": "abc", "TimeToLiveSpecification": {"Enabled": False, "AttributeName": "ttl"}}
    assert update_time_to_live.validate(body) == update_time_to_live.UpdateTimeToLiveRequest(
        "abc", "ttl", False
    )


def test_the_description_names_the_attribute_only_while_ttl_is_on() -> None:
    assert describe_time_to_live.description(ON, "ACTIVE") == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": "expires",
    }
    assert describe_time_to_live.description(OFF, "ACTIVE") == {"TimeToLiveStatus": "DISABLED"}
    assert describe_time_to_live.description(TimeToLive("DISABLED", None, T0), "UPDATING") == {
        "TimeToLiveStatus": "DISABLED"
    }


@pytest.mark.parametrize("status", ["CREATING", "DELETING"])
def test_a_table_being_created_or_deleted_cannot_be_described(status: Any) -> None:
    with pytest.raises(DynamoError) as err:
        describe_time_to_live.description(ON, status)
    assert (err.value.code, err.value.message) == (
        "ValidationException",
        f"Cannot describe time to live while table is in {status} state",
    )
