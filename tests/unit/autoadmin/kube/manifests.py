"""Checking manifests: built-in kinds against the official schemas (kubernetes-validate,
strict: unknown fields are errors), our kinds against their CRD's openAPIV3Schema."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[4]
CRD_DIR = ROOT / "crds"
# Every Kubernetes minor version the chart and the operator support.
KUBERNETES_VERSIONS = ("1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0")


def example(name: str = "table.yaml") -> dict[str, Any]:
    """A manifest of docs/examples/, as a user would apply it."""
    doc: dict[str, Any] = yaml.safe_load((ROOT / "docs" / "examples" / name).read_text())
    return doc


def load_crds() -> dict[str, dict[str, Any]]:
    """kind -> CRD, for every CRD in crds/."""
    crds = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        crds[crd["spec"]["names"]["kind"]] = crd
    return crds


def custom_schema(kind: str) -> dict[str, Any]:
    crd = load_crds()[kind]
    (version,) = [v for v in crd["spec"]["versions"] if v["storage"]]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def validate(obj: dict[str, Any], versions: Iterable[str] = KUBERNETES_VERSIONS) -> None:
    """Raise if `obj` is not valid (for every version, for built-in kinds)."""
    kinds = load_crds()
    if obj["kind"] in kinds and obj["apiVersion"].startswith(kinds[obj["kind"]]["spec"]["group"] + "/"):
        jsonschema.validate(obj, custom_schema(obj["kind"]), cls=jsonschema.Draft4Validator)
        return
    for version in versions:
        kubernetes_validate.validate(obj, version, strict=True)
