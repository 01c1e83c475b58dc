"""What HTTPS costs on the DynamoDB endpoint: the same YCSB run against `partita up`
with and without `--tls-cert/--tls-key`, alternating, with one client.

    .venv/bin/python -m bench.tls_endpoint                   # YCSB B and C, 15 s each, 2 rounds
    .venv/bin/python -m bench.tls_endpoint --duration 5 --rounds 1

Both clusters run at replication factor 1 (TLS is the router's alone; a replicated
write's cost would only add noise) with the lean client's keep-alive connections, one
per worker, as SDKs keep theirs: what is measured is the steady state (a record's
encryption and decryption on both sides), not handshakes, which a client pays once per
connection. The certificate comes from a throwaway CA (trustme). Reported per mode and
workload: ops/s, p50/p99 latency, server CPU µs/op (the cluster's whole process tree)
and client CPU µs/op (TLS costs the client too: on this 2-core machine they share it).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import trustme

from bench import peers, ycsb


def issue_certificate(workdir: Path) -> tuple[Path, Path, Path]:
    """(certificate, key, the issuing CA's certificate) for 127.0.0.1, from a throwaway CA."""
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, bundle = workdir / "tls.crt", workdir / "tls.key", workdir / "ca.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(bundle))
    return cert, key, bundle


def run_mode(tls: bool, cfg: ycsb.Config) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    try:
        extra: tuple[str, ...] = ()
        bundle = ""
        if tls:
            cert, key, ca = issue_certificate(workdir)
            extra, bundle = ("--tls-cert", str(cert), "--tls-key", str(key)), str(ca)
        peer = peers.start_partita(workdir=workdir, table=cfg.table, replication_factor=1, extra_args=extra)
        try:
            endpoint = peer.endpoint.replace("http://", "https://") if tls else peer.endpoint
            run = ycsb.Config(**{**cfg.__dict__, "ca_bundle": bundle})
            result: dict[str, Any] = ycsb._run_loop(
                ycsb.bench_target(endpoint, peer.access_key, peer.secret_key, peer.region, peer.root_pid, run)
            )
            return result
        finally:
            peer.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="b,c")
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--records", type=int, default=5_000)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args(argv)
    cfg = ycsb.Config(
        targets=["external"],
        workloads=a.workloads.lower().split(","),
        records=a.records,
        concurrency=a.concurrency,
        duration_s=a.duration,
    )
    runs: dict[str, list[dict[str, Any]]] = {"http": [], "https": []}
    for _ in range(a.rounds):
        for mode in ("http", "https"):
            print(f"[{mode}]", flush=True)
            runs[mode].append(run_mode(mode == "https", cfg))
    print(
        f"\n{'mode':6} {'workload':8} {'ops/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'server µs/op':>12} {'client µs/op':>12}"
    )
    for workload in cfg.workloads:
        for mode, results in runs.items():
            measured = [r["workloads"][workload] for r in results]

            def median(field: str, measured: list[dict[str, Any]] = measured) -> float:
                return statistics.median(m[field] or 0.0 for m in measured)

            p50 = statistics.median(m["latency"]["p50_ms"] for m in measured)
            p99 = statistics.median(m["latency"]["p99_ms"] for m in measured)
            print(
                f"{mode:6} {workload:8} {median('ops_per_s'):8.0f} {p50:7.2f} {p99:7.2f} "
                f"{median('server_cpu_us_per_op'):12.0f} {median('client_cpu_us_per_op'):12.0f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
