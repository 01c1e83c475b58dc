"""The client library stands alone: boto3/botocore and the standard library, nothing of the server."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_sharding_library_loads_no_server_module() -> None:
    probe = (
        "import json, sys\n"
        "import partita.client.sharding\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('partita', 'grpc', 'rocksdict', 'aetcd')))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(out.stdout)
    assert loaded, "the probe imported nothing"
    assert all(m == "partita" or m.startswith("partita.client") for m in loaded), loaded
