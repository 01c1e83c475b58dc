"""The Doorman resources of the tables' throughput: what the routers lease.

Each table has two resources, `table/<name>/rcu` and `table/<name>/wcu`, and each of its
global indexes two more, `table/<name>/index/<index>/rcu` and `wcu` (an index is
admitted on its own throughput: router/index_capacity.py); FAIR_SHARE
splits their capacity among the routers that serve the table, each wanting what it
measures it needs (partita.doorman.wants). A PROVISIONED table's capacity is its
provisioned throughput. An on-demand (PAY_PER_REQUEST) table's is its allowance
across the cluster (seed 000 section 4.5): the template holds DynamoDB's initial
allowance, and Doorman raises it to the highest sum of the routers' wants over the
last 30 minutes (the `peak_memory_seconds` parameter); each router wants twice its
measured demand (`throughput.ON_DEMAND_HEADROOM`), so that is twice the previous peak.

The text is rebuilt from the specs on every reconcile pass and written only when it
changed; the Doorman servers reload it within seconds (keeping the peaks they saw),
and a client sees a changed capacity at its next refresh, so an UpdateTable takes
effect within `TABLE_REFRESH_SECONDS` (plus the reload).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from partita.common import throughput
from partita.control.model import TableSpec
from partita.doorman.repository import ResourceRepository

# Seconds between a router's lease refreshes on a table resource: how fast an
# UpdateTable or a router joining or leaving moves the shares.
TABLE_REFRESH_SECONDS = 5
# Seconds a table lease lasts: a router cut off from Doorman keeps its share this long.
TABLE_LEASE_SECONDS = 30
# Resources nobody configured (anything but a table's throughput, and a table's before
# its entry is written): the same refresh, so a router's first answer for a new table
# does not leave it waiting a longer interval for the table's own entry.
CATCH_ALL_CAPACITY = 1000.0
# An on-demand table's allowance: the peak of what its routers want (their wants
# already carry the factor 2 of "twice the previous peak").
ON_DEMAND_PEAK_MULTIPLIER = 1.0


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


def _on_demand(template: dict[str, Any], ceiling: float) -> dict[str, Any]:
    template["algorithm"]["parameters"] = [
        {"name": "peak_memory_seconds", "value": f"{throughput.PEAK_MEMORY_SECONDS:g}"},
        {"name": "peak_multiplier", "value": f"{ON_DEMAND_PEAK_MULTIPLIER:g}"},
        # The table's OnDemandThroughput, past which its peaks do not lift it.
        *([{"name": "capacity_ceiling", "value": f"{ceiling:g}"}] if math.isfinite(ceiling) else []),
    ]
    return template


def _rate_resources(
    prefix: str,
    on_demand: bool,
    provisioned: tuple[int, int],
    warm: tuple[int, int],
    maximum: tuple[int, int],
) -> list[dict[str, Any]]:
    """`<prefix>/rcu` and `<prefix>/wcu` of a table, or of one of its global indexes."""
    out = []
    kinds: tuple[tuple[str, throughput.Kind, int], ...] = (
        ("rcu", "read", provisioned[0]),
        ("wcu", "write", provisioned[1]),
    )
    for suffix, kind, units in kinds:
        ceiling = throughput.on_demand_ceiling(maximum, kind)
        capacity = (
            min(throughput.on_demand_allowance(0.0, kind, warm), ceiling) if on_demand else float(units)
        )
        template = _template(f"{prefix}/{suffix}", capacity, TABLE_REFRESH_SECONDS, TABLE_LEASE_SECONDS)
        out.append(_on_demand(template, ceiling) if on_demand else template)
    return out


def doorman_config(specs: Iterable[TableSpec], templates: Sequence[Mapping[str, Any]] = ()) -> str:
    """The resource repository (JSON, Doorman's schema) for these tables, then
    `templates` (an operator's own resources, e.g. the Helm chart's `doorman.config`)
    except any a table's resource already names, with a catch-all `*` last (theirs if
    they have one)."""
    resources = []
    for spec in sorted(specs, key=lambda s: s.name):
        if spec.deleting:
            continue
        on_demand = spec.billing_mode == "PAY_PER_REQUEST"
        table = (spec.read_capacity, spec.write_capacity)
        resources += _rate_resources(
            f"table/{spec.name}", on_demand, table, spec.warm_throughput, spec.on_demand_max
        )
        # A global index is admitted on its own throughput (router/index_capacity.py).
        for index in spec.indexes:
            if index.kind == "GLOBAL":
                prefix = f"table/{spec.name}/index/{index.name}"
                own = (index.read_capacity, index.write_capacity)
                resources += _rate_resources(prefix, on_demand, own, (0, 0), (0, 0))
    named = {r["identifier_glob"] for r in resources}
    extra = [dict(t) for t in templates if t.get("identifier_glob") not in named]
    resources += [t for t in extra if t.get("identifier_glob") != "*"]
    catch_all = [t for t in extra if t.get("identifier_glob") == "*"]
    resources += catch_all or [_template("*", CATCH_ALL_CAPACITY, TABLE_REFRESH_SECONDS, 60)]
    return json.dumps({"resources": resources}, indent=1) + "\n"


def load_templates(path: Path) -> list[dict[str, Any]]:
    """The resources of a Doorman configuration file, which must be valid on its own
    (the Doorman servers load the same file until the operator's key exists)."""
    text = path.read_text()
    ResourceRepository.from_text(text)  # ConfigError if not
    loaded = yaml.safe_load(text)
    return [dict(r) for r in loaded["resources"]]


def _same(specs: Sequence[TableSpec], before: Sequence[TableSpec]) -> bool:
    return len(specs) == len(before) and all(a is b or a == b for a, b in zip(specs, before, strict=True))


class DoormanConfigFile:
    """Writes the configuration to the file the Doorman servers read (`--config`),
    atomically (a reader never sees half a file) and only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: str | None = None
        self._rendered_from: tuple[TableSpec, ...] | None = None

    def publish(self, specs: Sequence[TableSpec]) -> bool:
        # The autoadmin publishes on every pass; rendering a thousand tables every second
        # to find nothing changed cost more than the rest of an idle pass. The store
        # hands back the same spec objects while nothing changed, so this is cheap.
        rendered = tuple(specs)
        if self._rendered_from is not None and _same(rendered, self._rendered_from):
            return False
        written = self._write(doorman_config(rendered))
        self._rendered_from = rendered
        return written

    def _write(self, text: str) -> bool:
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


class DoormanConfigKey:
    """Writes the configuration to an etcd key the Doorman servers read
    (`--config-key`): on Kubernetes, where the servers share no file with the
    operator. Written only when it changed (compared with what the key holds)."""

    def __init__(self, host: str, port: int, key: str, templates: Sequence[Mapping[str, Any]] = ()) -> None:
        self.host, self.port, self.key = host, port, key
        self.templates = templates
        self._written: str | None = None
        self._client: Any = None

    async def publish(self, specs: Iterable[TableSpec]) -> bool:
        import aetcd

        text = doorman_config(specs, self.templates)
        if text == self._written:
            return False
        if self._client is None:
            self._client = aetcd.Client(host=self.host, port=self.port, timeout=5.0)
        held = await self._client.get(self.key.encode())
        changed = held is None or bytes(held.value).decode() != text
        if changed:
            await self._client.put(self.key.encode(), text.encode())
        self._written = text
        return changed

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
