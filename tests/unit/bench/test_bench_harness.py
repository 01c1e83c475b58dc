"""The pure and local parts of the benchmark harness (bench/): no dynalite, no Partita.

Covered: the workload mix and key distribution, item sizing, percentiles, /proc CPU
accounting of real child processes (live and exited), and the lean client's HTTP framing
and SigV4 against a tiny asyncio server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

# bench/ lives at the repository root, outside the source roots pytest puts on sys.path.
_REPO = Path(__file__).resolve().parents[3]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from bench import peers, proc_cpu, ycsb  # noqa: E402
from bench.lean_client import ClientError, LeanClient, parse_response  # noqa: E402
from partita.common import sigv4  # noqa: E402

pytestmark = pytest.mark.timeout(60)


# --- workload mix ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [("a", 0.50), ("b", 0.95), ("c", 1.00), ("w", 0.00)])
def test_mix_read_ratio_matches_workload(name: str, expected: float) -> None:
    wl = ycsb.WORKLOADS[name]
    assert wl.read_proportion == expected
    mix = ycsb.OpMix(wl.read_proportion, 10_000, seed=3)
    n = 40_000
    reads = sum(mix.next()[0] for _ in range(n))
    # Binomial standard deviation is at most 0.0025 here; allow 4 of them.
    assert abs(reads / n - expected) < 0.01


def test_mix_keys_are_uniform_over_the_record_count() -> None:
    records = 1000
    mix = ycsb.OpMix(0.5, records, seed=11)
    n = 100_000
    counts = Counter(mix.next()[1] for _ in range(n))
    assert min(counts) >= 0 and max(counts) < records
    # Ten buckets of 100 keys each should hold 10% of draws, within a generous 1%.
    buckets = Counter(k // 100 for k in counts.elements())
    for b in range(10):
        assert abs(buckets[b] / n - 0.1) < 0.01, buckets


def test_mix_is_reproducible_from_its_seed() -> None:
    a = ycsb.OpMix(0.95, 500, seed=42)
    b = ycsb.OpMix(0.95, 500, seed=42)
    c = ycsb.OpMix(0.95, 500, seed=43)
    seq_a = [a.next() for _ in range(200)]
    assert seq_a == [b.next() for _ in range(200)]
    assert seq_a != [c.next() for _ in range(200)]


def test_mix_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        ycsb.OpMix(1.5, 10, seed=1)
    with pytest.raises(ValueError):
        ycsb.OpMix(0.5, 0, seed=1)


def test_keys_have_fixed_width() -> None:
    assert ycsb.key_name(123, ycsb.key_width(10_000)) == "user000123"
    assert ycsb.key_width(10) == 6
    assert ycsb.key_width(10_000_000) == 7
    width = ycsb.key_width(10_000)
    assert {len(ycsb.key_name(i, width)) for i in (0, 9, 9999)} == {10}


@pytest.mark.parametrize("size", [200, 900, 901, 4000])
def test_items_have_the_exact_dynamodb_size(size: int) -> None:
    factory = ycsb.ItemFactory(size, key_len=10)
    for variant in range(factory.variant_count + 2):
        item = factory.item("user000123", variant)
        assert item["pk"] == {"S": "user000123"}
        assert ycsb.item_size(item) == size
    # Overwrites must change the stored value, not rewrite identical bytes.
    assert factory.item("user000001", 0) != factory.item("user000001", 1)


def test_item_too_small_is_rejected() -> None:
    with pytest.raises(ValueError):
        ycsb.ItemFactory(40, key_len=10)


# --- percentiles -------------------------------------------------------------------------------


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert ycsb.percentile(values, 50) == 50
    assert ycsb.percentile(values, 99) == 99
    assert ycsb.percentile(values, 99.9) == 100
    assert ycsb.percentile(values, 100) == 100
    assert ycsb.percentile(values, 0.5) == 1
    assert ycsb.percentile([7], 99.9) == 7
    thousand = list(range(1000))
    assert ycsb.percentile(thousand, 99.9) == 998
    assert ycsb.percentile(thousand, 50) == 499
    assert math.isnan(ycsb.percentile([], 50))
    with pytest.raises(ValueError):
        ycsb.percentile(values, 0)


def test_percentile_matches_a_sorted_sample() -> None:
    rng = random.Random(5)
    data = sorted(rng.random() for _ in range(12_345))
    for q in (50, 90, 99, 99.9):
        got = ycsb.percentile(data, q)
        # Nearest rank: at least q% of samples are <= the answer, and fewer are < it.
        assert sum(v <= got for v in data) / len(data) >= q / 100
        assert sum(v < got for v in data) / len(data) < q / 100


def test_latency_summary_in_milliseconds() -> None:
    s = ycsb.latency_summary([1_000_000 * i for i in range(1, 1001)])  # 1..1000 ms
    assert s["count"] == 1000
    assert s["p50_ms"] == pytest.approx(500)
    assert s["p99_ms"] == pytest.approx(990)
    assert s["p99_9_ms"] == pytest.approx(999)
    assert s["max_ms"] == pytest.approx(1000)
    assert ycsb.latency_summary([]) == {"count": 0}


def test_render_table_shows_failed_targets() -> None:
    ok = {
        "load": {"ops_per_s": 1.0},
        "workloads": {
            "b": {
                "workload": "B",
                "ops_per_s": 1234.4,
                "latency": {"p50_ms": 1.0, "p99_ms": 2.0, "p99_9_ms": 3.0},
                "errors": {"ThrottlingException": 2},
                "server_cpu_us_per_op": 150.2,
                "client_cpu_us_per_op": 40.0,
            }
        },
    }
    text = ycsb.render_table({"dynalite": ok, "partita": {"error": "PeerUnavailable: no cli"}}, ["b"])
    assert "| B | dynalite | 1234 | 1.00 | 2.00 | 3.00 | ThrottlingException: 2 | 150 | 40 |" in text
    assert "| B | partita | not run: PeerUnavailable: no cli" in text


def test_render_by_process_lists_the_busiest_process_first_per_operation() -> None:
    run = {
        "workloads": {
            "a": {
                "ops": 2000,
                "server_cpu_by_process": {
                    "python storage storage-a": 0.2,
                    "python storage storage-b": 0.5,
                    "etcd": 0.0,
                },
            }
        }
    }
    lines = ycsb.render_by_process({"partita": run}, ["a"]).splitlines()
    assert lines[2:] == [
        "| A | partita | python storage storage-b | 250 |",
        "| A | partita | python storage storage-a | 100 |",
    ]


def test_provisioned_option_takes_two_positive_integers() -> None:
    cfg, _ = ycsb.parse_args(["--targets", "dynalite", "--provisioned", "100,50"])
    assert cfg.provisioned == (100, 50)
    assert ycsb.parse_args(["--targets", "dynalite"])[0].provisioned is None
    for bad in ("100", "0,5", "a,b", "1,2,3"):
        with pytest.raises(SystemExit):
            ycsb.parse_args(["--targets", "dynalite", "--provisioned", bad])


def test_several_concurrency_levels_are_parsed_sorted_and_the_highest_sizes_the_client() -> None:
    cfg, _ = ycsb.parse_args(["--targets", "dynalite", "--concurrency", "64,16,32"])
    assert cfg.concurrency_levels == (16, 32, 64) and cfg.concurrency == 64 and cfg.conn_count == 64
    one, _ = ycsb.parse_args(["--targets", "dynalite", "--concurrency", "32"])
    assert one.concurrency_levels == () and one.concurrency == 32
    for bad in ("0,16", "a", ""):
        with pytest.raises(SystemExit):
            ycsb.parse_args(["--targets", "dynalite", "--concurrency", bad])


async def test_the_peak_level_is_reported_with_the_whole_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    rates = {16: 900.0, 64: 1500.0, 256: 1200.0}  # a server that peaks at 64 in flight

    async def measured(
        client: Any, cfg: ycsb.Config, workload: Any, root_pid: int, seed: int
    ) -> dict[str, Any]:
        return {
            "ops_per_s": rates[cfg.concurrency],
            "latency": {"p99_ms": cfg.concurrency / 10},
            "server_cpu_us_per_op": 100.0,
            "errors": {},
        }

    monkeypatch.setattr(ycsb, "measure", measured)
    cfg = ycsb.Config(
        targets=["dynalite"], workloads=["a"], concurrency=256, concurrency_levels=(16, 64, 256)
    )
    peak = await ycsb.measure_peak(cast(Any, None), cfg, ycsb.WORKLOADS["a"], 0, 1)
    assert peak["concurrency"] == 64 and peak["ops_per_s"] == 1500.0
    assert [p["concurrency"] for p in peak["by_concurrency"]] == [16, 64, 256]
    assert [p["ops_per_s"] for p in peak["by_concurrency"]] == [900.0, 1500.0, 1200.0]


def test_curves_compare_each_targets_peak_with_dynalites_peak() -> None:
    def run(curve: dict[int, float]) -> dict[str, Any]:
        best = max(curve, key=lambda c: curve[c])
        points = [{"concurrency": c, "ops_per_s": v, "p99_ms": 2.0} for c, v in curve.items()]
        return {"workloads": {"b": {"ops_per_s": curve[best], "concurrency": best, "by_concurrency": points}}}

    text = ycsb.render_curves(
        {"partita": run({16: 500.0, 128: 900.0}), "dynalite": run({16: 1000.0, 128: 800.0})}, ["b"]
    )
    assert "| B | partita | 500 (2.0) | 900 (2.0) | 0.90x |" in text
    assert "| B | dynalite | 1000 (2.0) | 800 (2.0) | 1.00x |" in text
    assert ycsb.render_curves({"partita": {"workloads": {"b": {"ops_per_s": 1.0}}}}, ["b"]) == ""


# --- /proc CPU accounting ----------------------------------------------------------------------


def test_parse_stat_handles_spaces_and_parens_in_comm() -> None:
    # Fields after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime ...
    text = "4242 (my (odd) proc) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 99 0 0\n"
    st = proc_cpu.parse_stat(text)
    assert (st.pid, st.comm, st.state, st.ppid) == (4242, "my (odd) proc", "S", 17)
    assert (st.utime, st.stime, st.cutime, st.cstime) == (250, 50, 7, 3)
    assert st.own_ticks == 300 and st.reaped_children_ticks == 10


@pytest.mark.parametrize(
    ("comm", "argv", "label"),
    [
        (
            "python3",
            ["/v/bin/python", "-m", "partita.cli.main", "storage", "--node-id", "storage-a"],
            "python3 storage storage-a",
        ),
        (
            "python3",
            ["/v/bin/python", "-m", "partita.cli.main", "router", "--port", "8000"],
            "python3 router",
        ),
        ("partita", ["/v/bin/python3", "/v/bin/partita", "up", "--data-dir", "/tmp/x"], "partita up"),
        ("node", ["/usr/bin/node", "/b/.node/node_modules/dynalite/cli.js", "--port", "1"], "node"),
        ("etcd", ["/x/etcd", "--name", "partita-local", "--data-dir", "/d"], "etcd partita-local"),
        ("sleep", ["sleep"], "sleep"),
    ],
)
def test_process_labels_name_roles(comm: str, argv: list[str], label: str) -> None:
    assert proc_cpu.label_from_cmdline(comm, argv) == label


def test_read_stat_of_self_and_of_a_missing_pid() -> None:
    st = proc_cpu.read_stat(os.getpid())
    assert st is not None and st.pid == os.getpid() and st.ppid == os.getppid()
    assert proc_cpu.read_stat(2**22 + 12345) is None  # above pid_max's usual ceiling


_BURN = "import time\nend = time.process_time() + {secs}\nwhile time.process_time() < end: pass\n"


@dataclass
class _Tree:
    proc: subprocess.Popen[bytes]
    ready: Path
    extra: list[int] = field(default_factory=list)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[list[_Tree]]:
    """Start helper processes in their own groups; kill exactly those groups afterwards."""
    started: list[_Tree] = []
    yield started
    for t in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(t.proc.pid, signal.SIGKILL)
        t.proc.wait(timeout=10)


def _start(spawn: list[_Tree], tmp_path: Path, script: str) -> _Tree:
    ready = tmp_path / f"ready-{len(spawn)}"
    code = script.replace("READY", repr(str(ready)))
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    tree = _Tree(proc, ready)
    spawn.append(tree)
    return tree


def _wait_file(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def test_tree_cpu_counts_a_live_grandchild(spawn: list[_Tree], tmp_path: Path) -> None:
    # Parent sleeps; its child burns 0.4 s of CPU then reports and sleeps (stays alive).
    child = _BURN.format(secs=0.4) + "open(READY, 'w').close()\ntime.sleep(60)\n"
    parent = (
        f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {child!r}])\ntime.sleep(60)\n"
    )
    tree = _start(spawn, tmp_path, parent)
    _wait_file(tree.ready)
    pids = {st.pid for st in proc_cpu.process_tree(tree.proc.pid)}
    assert tree.proc.pid in pids and len(pids) == 2
    own = proc_cpu.read_stat(tree.proc.pid)
    assert own is not None
    total = proc_cpu.tree_cpu_seconds(tree.proc.pid)
    # The parent alone used almost nothing; the tree includes the child's burn.
    assert total >= 0.35
    assert total - own.own_ticks / proc_cpu.CLOCK_TICKS >= 0.35
    by_process = proc_cpu.tree_cpu_by_process(tree.proc.pid)
    assert sum(by_process.values()) == pytest.approx(total, abs=0.05)


def test_tree_cpu_keeps_an_exited_and_reaped_child(spawn: list[_Tree], tmp_path: Path) -> None:
    # The child burns and exits; the parent reaps it (subprocess.run waits), so its CPU
    # must show up as the parent's cutime/cstime.
    child = _BURN.format(secs=0.4)
    parent = (
        f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {child!r}])\n"
        "open(READY, 'w').close()\ntime.sleep(60)\n"
    )
    tree = _start(spawn, tmp_path, parent)
    _wait_file(tree.ready)
    assert [st.pid for st in proc_cpu.process_tree(tree.proc.pid)] == [tree.proc.pid]
    st = proc_cpu.read_stat(tree.proc.pid)
    assert st is not None and st.reaped_children_ticks / proc_cpu.CLOCK_TICKS >= 0.35
    assert proc_cpu.tree_cpu_seconds(tree.proc.pid) >= 0.35


def test_tree_of_an_exited_root_is_empty() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=10)
    assert proc_cpu.process_tree(p.pid) == []
    assert proc_cpu.tree_cpu_seconds(p.pid) == 0.0


def test_self_cpu_grows_with_work() -> None:
    before = proc_cpu.self_cpu_seconds()
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    assert proc_cpu.self_cpu_seconds() - before >= 0.04


# --- lean client against a tiny local server ---------------------------------------------------


_CT = "application/x-amz-json-1.0"


@dataclass
class _Seen:
    head: bytes
    headers: dict[str, str]
    body: bytes


@dataclass
class _Server:
    port: int
    requests: list[_Seen] = field(default_factory=list)
    connections: int = 0
    # Each reply: (status, JSON body or raw bytes, extra header lines). Default: 200 {}.
    replies: list[tuple[int, bytes, str]] = field(default_factory=list)
    close_after_next: bool = False


async def _read_request(reader: asyncio.StreamReader) -> _Seen | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers["content-length"]))
    return _Seen(head, headers, body)


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    state = _Server(port=0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        try:
            while (req := await _read_request(reader)) is not None:
                state.requests.append(req)
                if state.close_after_next:
                    state.close_after_next = False
                    break  # drop the connection without answering
                status, body, extra = state.replies.pop(0) if state.replies else (200, b"{}", "")
                reason = {200: "OK", 400: "Bad Request", 500: "Internal Server Error"}[status]
                if "chunked" in extra:
                    payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
                else:
                    payload = body
                    extra += f"Content-Length: {len(body)}\r\n"
                head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {_CT}\r\n{extra}\r\n"
                writer.write(head.encode() + payload)
                await writer.drain()
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = srv.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        srv.close()
        await srv.wait_closed()


def _client(port: int, connections: int = 1) -> LeanClient:
    return LeanClient(
        f"http://127.0.0.1:{port}",
        access_key="AKIDEXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region="us-east-1",
        connections=connections,
        request_timeout=2.0,
    )


async def test_request_framing_and_signature(server: _Server) -> None:
    server.replies.append((200, orjson.dumps({"Item": {"pk": {"S": "user000001"}}}), ""))
    client = _client(server.port)
    await client.start()
    try:
        payload = {"TableName": "usertable", "Key": {"pk": {"S": "user000001"}}, "ConsistentRead": False}
        resp = await client.call("GetItem", payload)
    finally:
        await client.close()
    assert resp.status == 200 and resp.error_type is None
    assert resp.data == {"Item": {"pk": {"S": "user000001"}}}
    (req,) = server.requests
    assert req.head.startswith(b"POST / HTTP/1.1\r\n")
    h = req.headers
    assert h["host"] == f"127.0.0.1:{server.port}"
    assert h["content-type"] == "application/x-amz-json-1.0"
    assert h["x-amz-target"] == "DynamoDB_20120810.GetItem"
    assert int(h["content-length"]) == len(req.body)
    assert orjson.loads(req.body) == payload
    assert "connection" not in h  # HTTP/1.1 is keep-alive by default
    # Verify the signature the way the router does: recompute it with the shared module.
    expected = sigv4.sign_request(
        method="POST",
        host=h["host"],
        path="/",
        query="",
        headers={"content-type": h["content-type"], "x-amz-target": h["x-amz-target"]},
        body=req.body,
        access_key="AKIDEXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region="us-east-1",
        amz_date=h["x-amz-date"],
    )
    assert h["authorization"] == expected["Authorization"]
    assert "SignedHeaders=content-type;host;x-amz-date;x-amz-target" in h["authorization"]


async def test_keep_alive_reuses_one_connection(server: _Server) -> None:
    client = _client(server.port)
    await client.start()
    try:
        for i in range(5):
            resp = await client.call("PutItem", {"TableName": "t", "Item": {"pk": {"S": str(i)}}})
            assert resp.error_type is None
    finally:
        await client.close()
    assert server.connections == 1 and len(server.requests) == 5


async def test_pipelined_responses_are_matched_in_order(server: _Server) -> None:
    for i in range(4):
        server.replies.append((200, orjson.dumps({"n": i}), ""))
    client = _client(server.port, connections=1)
    await client.start()
    try:
        got = await asyncio.gather(*(client.call("GetItem", {"i": i}) for i in range(4)))
    finally:
        await client.close()
    assert [r.data["n"] for r in got] == [0, 1, 2, 3]
    assert [orjson.loads(r.body)["i"] for r in server.requests] == [0, 1, 2, 3]


async def test_errors_are_typed_not_dropped(server: _Server) -> None:
    server.replies += [
        (400, orjson.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"}), ""),
        (500, b"oops", ""),
        (200, orjson.dumps({"Item": {}}), "Transfer-Encoding: chunked\r\n"),
    ]
    client = _client(server.port)
    await client.start()
    try:
        r1 = await client.call("GetItem", {})
        r2 = await client.call("GetItem", {})
        r3 = await client.call("GetItem", {})
    finally:
        await client.close()
    assert (r1.status, r1.error_type) == (400, "ResourceNotFoundException")
    assert (r2.status, r2.error_type) == (500, "HTTP500")
    assert (r3.status, r3.error_type, r3.data) == (200, None, {"Item": {}})


async def test_lost_connection_raises_then_reconnects(server: _Server) -> None:
    client = _client(server.port)
    await client.start()
    try:
        server.close_after_next = True
        with pytest.raises(ClientError) as info:
            await client.call("GetItem", {})
        assert info.value.kind == "ConnectionLost"
        resp = await client.call("GetItem", {})
        assert resp.error_type is None
    finally:
        await client.close()
    assert server.connections == 2


def test_parse_response_variants() -> None:
    assert parse_response(200, b"").error_type is None
    assert parse_response(200, b"not json").error_type == "InvalidJSONResponse"
    assert parse_response(400, b'{"__type":"ValidationException"}').error_type == "ValidationException"
    assert parse_response(413, b"").error_type == "HTTP413"


def test_client_speaks_http_and_https_and_refuses_other_schemes() -> None:
    assert LeanClient("https://127.0.0.1", access_key="a", secret_key="b").port == 443
    assert LeanClient("http://127.0.0.1", access_key="a", secret_key="b").port == 80
    with pytest.raises(ValueError):
        LeanClient("ftp://127.0.0.1:1", access_key="a", secret_key="b")


# --- peers (no processes started) --------------------------------------------------------------


def test_partita_credentials_are_read_with_the_product_parser(tmp_path: Path) -> None:
    from partita.router import credentials

    path = tmp_path / "credentials.json"
    limited = credentials.generate(tables=["Other"])
    full = credentials.generate()
    credentials.save(path, [limited, full])
    assert peers.read_partita_credentials(path, "usertable") == (full.access_key_id, full.secret_access_key)
    credentials.save(path, [limited])
    with pytest.raises(peers.PeerUnavailable):
        peers.read_partita_credentials(path, "usertable")


def test_dynalite_is_pinned_exactly() -> None:
    version = peers.pinned_dynalite_version()
    assert version[0].isdigit() and all(part.isdigit() for part in version.split("."))
    lock = orjson.loads((peers.BENCH_DIR / "package-lock.json").read_bytes())
    assert lock["packages"]["node_modules/dynalite"]["version"] == version
