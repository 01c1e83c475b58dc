"""`partita storage --replication-listen/--replication-advertise`: a fixed replication
port and the address registered for peers (Kubernetes: the pod's DNS name); both
optional (a free port, as `partita up` runs), both refused at parse time unless
host:port."""

from __future__ import annotations

import pytest

from partita.cli.main import build_parser

BASE = ["storage", "--node-id", "s", "--zone", "a", "--port", "1", "--data-port", "2", "--data-dir", "d"]


def test_both_flags_are_optional_and_default_to_a_free_port() -> None:
    args = build_parser().parse_args(BASE)
    assert (args.replication_listen, args.replication_advertise) == (None, None)


def test_a_fixed_port_and_an_advertised_pod_name_are_taken_as_given() -> None:
    args = build_parser().parse_args(
        [*BASE, "--replication-listen=0.0.0.0:7400", "--replication-advertise=pod-0.svc.ns.svc:7400"]
    )
    assert (args.replication_listen, args.replication_advertise) == ("0.0.0.0:7400", "pod-0.svc.ns.svc:7400")


@pytest.mark.parametrize("value", ["7400", ":7400", "host:", "host:0", "host:65536", "host:port"])
@pytest.mark.parametrize("flag", ["--replication-listen", "--replication-advertise"])
def test_anything_but_host_and_port_is_refused(flag: str, value: str) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*BASE, f"{flag}={value}"])
