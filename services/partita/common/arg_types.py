"""Argument types shared by every process's command line, so a value one process would
refuse at start-up (and the supervisor would restart it over and over) is refused where
it is typed."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from partita.common import config


def _number(text: str, accept: Callable[[float], bool], what: str) -> float:
    value = float(text)
    if not accept(value):  # NaN too: it compares false with everything
        raise argparse.ArgumentTypeError(f"must be {what}: {text}")
    return value


def positive_seconds(text: str) -> float:
    return _number(text, lambda v: v > 0, "a positive number of seconds")


def at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def at_least_zero(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


def port(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text}")
    return value


def host_port(text: str) -> str:
    """host:port, both parts given (an address a peer dials, or a listener's)."""
    if not config.is_host_port(text):
        raise argparse.ArgumentTypeError(f"want host:port: {text}")
    return text


def add_split_flags(parser: argparse.ArgumentParser) -> None:
    """The autoadmin's split thresholds, declared once for `partita up` (which passes them
    on) and `partita autoadmin` (which uses them)."""
    from partita.common import config

    parser.add_argument(
        "--split-size-bytes",
        type=at_least_one,
        default=config.DEFAULT_SPLIT_SIZE_BYTES,
        help="split a partition whose items pass this many bytes, at its data's median key hash "
        "(%(default)s: DynamoDB's 10 GB)",
    )
    parser.add_argument(
        "--split-hot-seconds",
        type=positive_seconds,
        default=config.DEFAULT_SPLIT_HOT_SECONDS,
        help="split a partition that has consumed at least 80%% of its allocated throughput for "
        "this long, at its load's median key hash (%(default)s)",
    )
    parser.add_argument(
        "--split-replicated-groups",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="split replicated partitions at a log index (a SPLIT entry in the parent's log; "
        "the storage nodes must run replication); with --no-split-replicated-groups they are "
        "kept whole (%(default)s)",
    )


def fraction(text: str) -> float:
    return _number(text, lambda v: 0.0 < v <= 1.0, "a share in (0, 1]")


def positive_units(text: str) -> float:
    return _number(text, lambda v: v > 0, "a positive number of units a second")


def zero_or_more_seconds(text: str) -> float:
    return _number(text, lambda v: v >= 0, "0 or more seconds")


def add_capacity_flags(parser: argparse.ArgumentParser, prefix: str, whose: str) -> None:
    """`--<prefix>-read-units` and `--<prefix>-write-units`: a storage node's capacity
    (`partita storage` and `partita up`: node; the operator, for its pods: storage)."""
    parser.add_argument(
        f"--{prefix}-read-units",
        type=positive_units,
        default=config.DEFAULT_NODE_READ_UNITS,
        help=f"{whose}'s read capacity, RCU a second: its node bucket's rate (with admission) "
        "and what its load reports are measured against (%(default)s)",
    )
    parser.add_argument(
        f"--{prefix}-write-units",
        type=positive_units,
        default=config.DEFAULT_NODE_WRITE_UNITS,
        help=f"{whose}'s write capacity, WCU a second (%(default)s)",
    )


def add_copy_flags(parser: argparse.ArgumentParser) -> None:
    """How long a router holds a backup's, restore's or import's copy between renewals:
    a dead router's copies wait this long for another router to take them over."""
    parser.add_argument(
        "--copy-claim-seconds",
        type=positive_seconds,
        default=config.DEFAULT_COPY_CLAIM_SECONDS,
        help="seconds a router's claim on a backup, restore or import copy holds (%(default)s)",
    )


def add_tls_flags(parser: argparse.ArgumentParser) -> None:
    """HTTPS on the DynamoDB endpoint, for `partita up`, `partita router` and a router
    beside a storage node."""
    parser.add_argument(
        "--tls-cert", help="serve the DynamoDB endpoint over HTTPS with this PEM certificate (chain)"
    )
    parser.add_argument("--tls-key", help="the PEM private key of --tls-cert")


def add_node_load_flags(parser: argparse.ArgumentParser) -> None:
    """A storage node's capacity and load reports, declared once for `partita up`
    (which passes them to every storage node) and `partita storage`."""
    add_capacity_flags(parser, "node", "a storage node")
    parser.add_argument(
        "--load-report-interval",
        type=zero_or_more_seconds,
        default=config.DEFAULT_LOAD_REPORT_SECONDS,
        help="seconds between a storage node's load reports to the control store, each "
        "replica's consumption over the interval, for migration (0: none; %(default)s)",
    )


def add_migration_flags(parser: argparse.ArgumentParser) -> None:
    """The autoadmin's load-based migration, declared once for `partita up` (which
    passes them on) and `partita autoadmin` (which uses them)."""
    parser.add_argument(
        "--migration",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="move a replica off a storage node whose load passes --migrate-above of its "
        "capacity, to a node of its zone with room (%(default)s)",
    )
    parser.add_argument(
        "--migrate-above",
        type=fraction,
        default=config.DEFAULT_MIGRATE_ABOVE,
        help="share of a storage node's capacity (reads or writes) past which one of its "
        "replicas moves (%(default)s)",
    )
    parser.add_argument(
        "--migrate-room-below",
        type=fraction,
        default=config.DEFAULT_MIGRATE_ROOM_BELOW,
        help="share of its capacity a node may reach with a replica moved to it (%(default)s)",
    )


def add_shard_flags(parser: argparse.ArgumentParser) -> None:
    """The autoadmin's shuffle-shard placement, declared once for `partita up` (which
    passes them on), `partita autoadmin` and `partita operator` (which use them)."""
    parser.add_argument(
        "--shuffle-shard",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="place each new table on a shard of the storage nodes (a node per replica of "
        "each partition) holding as few replicas of other tables' partitions as the fleet "
        "allows; --no-shuffle-shard: round-robin over every node (%(default)s)",
    )
    add_shard_bound_flag(parser)


def add_shard_bound_flag(parser: argparse.ArgumentParser) -> None:
    """The shuffle-shard bound, which `partita storage` also takes: a member its repair
    adds outside the table's shard keeps to it where it can."""
    parser.add_argument(
        "--shard-max-shared",
        type=at_least_zero,
        default=config.DEFAULT_SHARD_MAX_SHARED,
        help="replicas of any other table's partition a table's shard may hold, where the "
        "fleet allows: new tables' shards, and members added outside them (%(default)s)",
    )
