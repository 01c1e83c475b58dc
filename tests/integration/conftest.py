from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster, running


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One real local cluster (etcd, 3 storage nodes, router) per test module."""
    with running(Path(tmp_path_factory.mktemp("cluster"))) as c:
        yield c
