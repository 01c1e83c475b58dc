"""Generate Python protobuf and gRPC modules from proto/ into partita/_proto.

Run by setup.py at build time and by `make proto`; the output is never committed.
The .proto files live under proto/partita/, so generated imports read
`from partita import storage_pb2`; we rewrite them to `partita._proto` so the
generated code sits inside our namespace package.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def generate(root: Path) -> list[Path]:
    from grpc_tools import protoc

    proto_root = root / "proto"
    out_dir = root / "services" / "partita" / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = sorted(proto_root.glob("partita/*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    staging = out_dir / "_staging"
    staging.mkdir(exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{proto_root}",
        f"-I{include}",
        f"--python_out={staging}",
        f"--pyi_out={staging}",
        f"--grpc_python_out={staging}",
        *[str(s) for s in sources],
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    written = []
    for generated in sorted((staging / "partita").glob("*")):
        text = generated.read_text()
        text = re.sub(r"^from partita import ", "from partita._proto import ", text, flags=re.M)
        target = out_dir / generated.name
        target.write_text(text)
        generated.unlink()
        written.append(target)
    (staging / "partita").rmdir()
    staging.rmdir()
    (out_dir / "__init__.py").write_text('"""Generated from proto/ by partita.common.proto_codegen."""\n')
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[3]
    for path in generate(root):
        print(path)
