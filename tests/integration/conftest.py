from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster, free_port_layout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One real local cluster (etcd, 3 storage nodes, router) per test module."""
    c = Cluster(Path(tmp_path_factory.mktemp("cluster")), free_port_layout())
    c.start()
    try:
        yield c
    finally:
        if c.process is not None:
            c.stop()
