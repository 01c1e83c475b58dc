"""The Doorman resources of the tables' throughput: what the routers lease.

Each PROVISIONED table has two resources, `table/<name>/rcu` and `table/<name>/wcu`,
whose capacity is its provisioned throughput; FAIR_SHARE splits it among the routers
that serve the table. On-demand tables need no entry: each router admits their
allowance (twice the previous peak) itself. The text is rebuilt from the specs on
every reconcile pass and written only when it changed; the Doorman servers reload it
within seconds, and a client sees a changed capacity at its next refresh, so an
UpdateTable takes effect within `TABLE_REFRESH_SECONDS` (plus the reload).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from partita.control.model import TableSpec

# Seconds between a router's lease refreshes on a table resource: how fast an
# UpdateTable or a router joining or leaving moves the shares.
TABLE_REFRESH_SECONDS = 5
# Seconds a table lease lasts: a router cut off from Doorman keeps its share this long.
TABLE_LEASE_SECONDS = 30
# Resources nobody configured (anything but a table's throughput, and a table's before
# its entry is written): the same refresh, so a router's first answer for a new table
# does not leave it waiting a longer interval for the table's own entry.
CATCH_ALL_CAPACITY = 1000.0


def _template(glob: str, capacity: float, refresh: int, lease: int) -> dict[str, Any]:
    return {
        "identifier_glob": glob,
        "capacity": capacity,
        "algorithm": {
            "kind": "FAIR_SHARE",
            "lease_length": lease,
            "refresh_interval": refresh,
            # A new master echoes the leases it hears of for one refresh round.
            "learning_mode_duration": refresh,
        },
    }


def doorman_config(specs: Iterable[TableSpec]) -> str:
    """The resource repository (JSON, Doorman's schema) for these tables."""
    resources = []
    for spec in sorted(specs, key=lambda s: s.name):
        if spec.deleting or spec.billing_mode != "PROVISIONED":
            continue
        for suffix, capacity in (("rcu", spec.read_capacity), ("wcu", spec.write_capacity)):
            resources.append(
                _template(
                    f"table/{spec.name}/{suffix}", float(capacity), TABLE_REFRESH_SECONDS, TABLE_LEASE_SECONDS
                )
            )
    resources.append(_template("*", CATCH_ALL_CAPACITY, TABLE_REFRESH_SECONDS, 60))
    return json.dumps({"resources": resources}, indent=1) + "\n"


class DoormanConfigFile:
    """Writes the configuration to the file the Doorman servers read (`--config`),
    atomically (a reader never sees half a file) and only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: str | None = None

    def publish(self, specs: Iterable[TableSpec]) -> bool:
        text = doorman_config(specs)
        if text == self._written:
            return False
        try:
            if self.path.read_text() == text:
                self._written = text
                return False
        except OSError:
            pass
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)
        self._written = text
        return True
