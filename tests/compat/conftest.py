"""One real local cluster for the whole compatibility suite, and tables named by schema.

Every compat module is marked `xdist_group("compat")`, so under `--dist loadgroup` the
whole suite runs on one worker and this session fixture starts one cluster for it.
Tables are shared by the tests of the session: tests use fresh random keys, never
assume a table is empty, and create their own table when they need one.

With `PARTITA_COMPAT_ENDPOINT` set (see README.md here), the suite runs against that
endpoint instead (DynamoDB itself, DynamoDB Local), and the tests marked
`partita_only` (behaviour DynamoDB does not share) are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compat import endpoint
from tests.compat.endpoint import RemoteEndpoint
from tests.compat.helpers import create_table
from tests.integration.cluster import Cluster, running


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if endpoint.configured() is None:
        return
    skip = pytest.mark.skip(
        reason=f"Partita-only behaviour; {endpoint.ENDPOINT_VARIABLE} is another endpoint"
    )
    for item in items:
        if "partita_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster | RemoteEndpoint]:
    remote = endpoint.configured()
    if remote is not None:
        yield remote
        return
    with running(Path(tmp_path_factory.mktemp("compat-cluster"))) as c:
        _wait_healthy(c)
        yield c


def _wait_healthy(c: Cluster, timeout: float = 15.0) -> None:
    """Until the router answers its health check (the first test must not race start-up)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            c.health()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="session")
def ddb(cluster: Cluster | RemoteEndpoint) -> Any:
    """A boto3 DynamoDB client for the cluster (no retries: tests see every error)."""
    from botocore.config import Config

    return cluster.client(config=Config(retries={"total_max_attempts": 1}, read_timeout=30))


@pytest.fixture(scope="session")
def table_s(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S")])


@pytest.fixture(scope="session")
def table_n(ddb: Any) -> str:
    return create_table(ddb, [("pk", "N")])


@pytest.fixture(scope="session")
def table_b(ddb: Any) -> str:
    return create_table(ddb, [("pk", "B")])


@pytest.fixture(scope="session")
def table_sn(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S"), ("sk", "N")])


@pytest.fixture(scope="session")
def table_ss(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S"), ("sk", "S")])


@pytest.fixture(scope="session")
def table_sb(ddb: Any) -> str:
    return create_table(ddb, [("pk", "S"), ("sk", "B")])
