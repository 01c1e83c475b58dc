"""The Table CRD's spec.streamSpecification: a view type exactly when the stream is on
(the rule evaluated with a real CEL engine, as the API server does)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.autoadmin.kube.manifests import example, validate
from tests.unit.autoadmin.kube.test_cel_rules_indexes import violations

RULE = "streamViewType is required when streamEnabled is true, and must not be given when it is false"


@pytest.mark.parametrize(
    ("stream", "broken"),
    [
        ({"streamEnabled": True, "streamViewType": "NEW_IMAGE"}, []),
        ({"streamEnabled": False}, []),
        ({"streamEnabled": True}, [RULE]),
        ({"streamEnabled": False, "streamViewType": "KEYS_ONLY"}, [RULE]),
    ],
)
def test_a_view_type_is_given_exactly_when_the_stream_is_on(
    stream: dict[str, Any], broken: list[str]
) -> None:
    table = example()
    table["spec"]["streamSpecification"] = stream
    validate(table)  # the schema itself
    assert violations(table) == broken
