"""What Coral's first two stages (service_model.check_request) cost per request.

Run: .venv/bin/python bench/bench_request_checks.py [cpu-seconds-per-case]

The bodies are YCSB's (bench/ycsb.py): an eventually consistent GetItem of one key, and
a PutItem of a 900-byte item (key "pk" plus field0..field7). For scale, each row also
shows what the same request already costs to decode (orjson) and to validate in its
operation module (api/operations/*.validate). Measured in process with
time.process_time over many repetitions; nothing here talks to a server.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "services"))

import orjson

from partita.api import service_model
from partita.api.operations import get_item, put_item

GET_BODY = orjson.dumps({"TableName": "usertable", "Key": {"pk": {"S": "user1234567890"}}})
PUT_BODY = orjson.dumps(
    {
        "TableName": "usertable",
        "Item": {"pk": {"S": "user1234567890"}, **{f"field{i}": {"S": "x" * 100} for i in range(8)}},
    }
)
GET = orjson.loads(GET_BODY)
PUT = orjson.loads(PUT_BODY)


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    for _ in range(1000):
        fn()
    calls = 0
    start = time.process_time()
    while True:
        for _ in range(1000):
            fn()
        calls += 1000
        spent = time.process_time() - start
        if spent >= seconds:
            return spent / calls * 1e6


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    compiled = service_model.__file__.endswith((".so", ".pyd"))
    print(f"service_model {'compiled (mypyc)' if compiled else 'interpreted'}; {seconds:.1f} CPU s per case")
    cases: list[tuple[str, Callable[[], object]]] = [
        ("GetItem  decode (orjson.loads)", lambda: orjson.loads(GET_BODY)),
        ("GetItem  check_request (stages a+b)", lambda: service_model.check_request("GetItem", GET)),
        ("GetItem  get_item.validate", lambda: get_item.validate(GET)),
        ("PutItem  decode (orjson.loads)", lambda: orjson.loads(PUT_BODY)),
        ("PutItem  check_request (stages a+b)", lambda: service_model.check_request("PutItem", PUT)),
        ("PutItem  put_item.validate", lambda: put_item.validate(PUT)),
    ]
    for name, fn in cases:
        print(f"{name:40s} {per_call_us(fn, seconds):7.2f} µs")


if __name__ == "__main__":
    main()
