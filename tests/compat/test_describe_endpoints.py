"""DescribeEndpoints, which SDKs with endpoint discovery call."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.compat.helpers import PYTESTMARK

pytestmark = PYTESTMARK


def test_describe_endpoints_answers_one_endpoint_cached_for_a_day(ddb: Any) -> None:
    endpoints = ddb.describe_endpoints()["Endpoints"]
    assert len(endpoints) == 1
    assert endpoints[0]["CachePeriodInMinutes"] == 1440
    assert isinstance(endpoints[0]["Address"], str) and endpoints[0]["Address"]


@pytest.mark.partita_only
def test_the_address_is_the_routers_own(cluster: Any, ddb: Any) -> None:
    assert ddb.describe_endpoints()["Endpoints"][0]["Address"] == urlsplit(cluster.endpoint).netloc
