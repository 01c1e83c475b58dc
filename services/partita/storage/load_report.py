"""A storage node's load reports, for load-based migration (DESIGN.md section 6,
`operator/partita/autoadmin/migration.py`): every interval, what each replica's
requests consumed on this node since the last report, in units a second, against the
node's own capacity.

The figures are the data plane's meters (`metrics.meters`: reads this node served and
writes it led, every request metered, as the node buckets charge them), so a report
costs one pass over the node's meters and one control-store write, whatever the
request rate; an idle node writes its empty report only every
`IDLE_LOAD_REPORT_INTERVALS` (each write moves etcd's revision, which makes every
process read its listings again). `LoadWindow` is sans-I/O: the caller passes the counters and the time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from partita.common import config
from partita.control.model import NodeLoad, ReplicaLoad
from partita.control.store import NodeMembership
from partita.storage import metrics

log = logging.getLogger(__name__)

# Counters: (table id, partition id) -> (read units, write units) consumed so far.
Counters = Mapping[tuple[int, str], tuple[float, float]]


class LoadWindow:
    """Rates over the time between two looks at the node's cumulative counters."""

    def __init__(self, node_id: str, read_capacity: float, write_capacity: float) -> None:
        self.node_id = node_id
        self.read_capacity = read_capacity
        self.write_capacity = write_capacity
        self._last: dict[tuple[int, str], tuple[float, float]] | None = None
        self._last_at = 0.0

    def report(self, counters: Counters, now: float, wall: float) -> NodeLoad | None:
        """The load since the previous call (`now`: a monotonic clock; `wall`: the
        report's time for its readers), or None on the first call, which only starts
        the window."""
        previous, since = self._last, self._last_at
        self._last, self._last_at = dict(counters), now
        if previous is None or now <= since:
            return None
        elapsed = now - since
        replicas = []
        for key, (read, write) in sorted(counters.items()):
            before_read, before_write = previous.get(key, (0.0, 0.0))
            read_rate = _consumed(read, before_read) / elapsed
            write_rate = _consumed(write, before_write) / elapsed
            if read_rate > 0 or write_rate > 0:
                replicas.append(ReplicaLoad(key[0], key[1], read_rate, write_rate))
        return NodeLoad(self.node_id, wall, elapsed, self.read_capacity, self.write_capacity, tuple(replicas))


def _consumed(now: float, before: float) -> float:
    """A counter's growth since `before`; a meter made again (its table dropped and
    hosted anew) counts from zero."""
    return now - before if now >= before else now


def meter_counters() -> dict[tuple[int, str], tuple[float, float]]:
    """The node's consumption so far, by replica, from the data plane's meters."""
    return {key: (meter.read.value, meter.write.value) for key, meter in metrics.meters.items()}


async def report_load(
    window: LoadWindow,
    store: NodeMembership,
    interval: float,
    counters: Callable[[], Counters] = meter_counters,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
) -> None:
    """Publish a report every `interval` seconds, until cancelled. A store that cannot
    be reached loses that report only (the next covers its own interval). An interval of
    0 or less means no reports (`--load-report-interval 0`): returns at once rather than
    write to the store in a tight loop."""
    if interval <= 0:
        return
    ttl = max(1, round(config.LOAD_REPORT_LIFETIME_INTERVALS * interval))
    window.report(counters(), clock(), wall_clock())
    idle_since_put: int | None = None  # intervals since an empty report was written
    while True:
        await asyncio.sleep(interval)
        load = window.report(counters(), clock(), wall_clock())
        if load is None:
            continue
        if (
            not load.replicas
            and idle_since_put is not None
            and idle_since_put < config.IDLE_LOAD_REPORT_INTERVALS
        ):
            idle_since_put += 1  # still idle, and the empty report written is current
            continue
        try:
            await store.put_node_load(load, ttl)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("load report not published: %s", exc)
            idle_since_put = None
            continue
        idle_since_put = 1 if not load.replicas else None
