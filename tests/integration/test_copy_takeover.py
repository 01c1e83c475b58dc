"""A backup's or a restore's copy outlives its router: SIGKILL the router (real
processes, `partita up` restarts it) right after CreateBackup or RestoreTableFromBackup
answered; the restarted router finds the copy's claim lapsed and finishes the copy."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import create_pk_table, kill_router, running

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster-copy-takeover")]

# The claim (`--copy-claim-seconds`, 6 s here: longer than a restart) must lapse
# before another router takes a copy over, plus a sweep (2 s).
CLAIM_SECONDS = 6
TAKEOVER_SECONDS = 60.0
ITEMS = 200


def until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + TAKEOVER_SECONDS
    while True:
        try:
            found = check()
        except Exception:  # the router restarting
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.5)


def test_a_killed_routers_backup_and_restore_are_finished_by_its_successor(tmp_path: Path) -> None:
    args = ("--replication-factor", "1", "--copy-claim-seconds", str(CLAIM_SECONDS))
    with running(tmp_path / "cluster", *args) as cluster:
        ddb = cluster.client()
        create_pk_table(ddb, "source")
        items = {f"k{i}": {"pk": {"S": f"k{i}"}, "n": {"N": str(i)}} for i in range(ITEMS)}
        for item in items.values():
            ddb.put_item(TableName="source", Item=item)

        arn = ddb.create_backup(TableName="source", BackupName="nightly")["BackupDetails"]["BackupArn"]
        kill_router(cluster)  # the backup's table is not even placed yet
        ddb = cluster.client()
        status = lambda: ddb.describe_backup(BackupArn=arn)["BackupDescription"]["BackupDetails"]  # noqa: E731
        assert status()["BackupStatus"] == "CREATING"  # its router died before copying
        details = until(lambda: status()["BackupStatus"] == "AVAILABLE" and status(), "the backup finished")
        assert details["BackupSizeBytes"] > 0

        ddb.restore_table_from_backup(TargetTableName="restored", BackupArn=arn)
        kill_router(cluster)
        ddb = cluster.client()
        assert (
            ddb.describe_table(TableName="restored")["Table"]["RestoreSummary"]["RestoreInProgress"] is True
        )
        table = until(
            lambda: (t := ddb.describe_table(TableName="restored")["Table"])["TableStatus"] == "ACTIVE" and t,
            "the restore finished",
        )
        assert table["RestoreSummary"]["RestoreInProgress"] is False
        restored = ddb.scan(TableName="restored", ConsistentRead=True)["Items"]
        assert {item["pk"]["S"]: item for item in restored} == items
