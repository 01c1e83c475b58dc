"""Resource configuration: templates matched by glob, validated on load.

The configuration is a `ResourceRepository` message (the proto's own schema), written
as YAML or JSON with the proto's field names, for example:

    resources:
      - identifier_glob: table/Music/wcu
        capacity: 100
        algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 16}
      - identifier_glob: "*"
        capacity: 1000
        safe_capacity: 10
        algorithm: {kind: PROPORTIONAL_SHARE, lease_length: 60, refresh_interval: 16}

A resource takes the template whose glob equals its identifier, else the first whose
glob matches (fnmatch: `*` also matches `/`, so the catch-all `*` catches
`table/Music/wcu`). The `*` template must be last and must exist, so every identifier
has a template.
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format

from partita._proto import doorman_pb2 as pb


class ConfigError(ValueError):
    """The repository is malformed; the server keeps its previous configuration."""


def validate(repo: pb.ResourceRepository) -> None:
    if not repo.resources:
        raise ConfigError('the resource repository must contain at least an entry for "*"')
    seen: set[str] = set()
    for i, template in enumerate(repo.resources):
        glob = template.identifier_glob
        if not glob:
            raise ConfigError(f"template {i}: identifier_glob must not be empty")
        if glob in seen:
            raise ConfigError(f"template {i}: identifier_glob {glob!r} appears twice")
        seen.add(glob)
        if template.capacity < 0:
            raise ConfigError(f"template {glob!r}: capacity must not be negative")
        if template.HasField("safe_capacity") and template.safe_capacity < 0:
            raise ConfigError(f"template {glob!r}: safe_capacity must not be negative")
        if not template.HasField("algorithm"):
            raise ConfigError(f"template {glob!r}: must specify an algorithm")
        _validate_algorithm(glob, template.algorithm)
        if glob == "*" and i != len(repo.resources) - 1:
            raise ConfigError('the entry for "*" must be the last one')
    if repo.resources[-1].identifier_glob != "*":
        raise ConfigError('the resource repository must contain at least an entry for "*"')


# Parameters of a capacity that follows demand (partita.doorman.resource), and their least values.
_AT_LEAST = {"peak_memory_seconds": 1.0, "peak_multiplier": 1.0, "capacity_ceiling": 1.0}


def _validate_algorithm(glob: str, algo: pb.Algorithm) -> None:
    if algo.kind not in pb.Algorithm.Kind.values():
        raise ConfigError(f"template {glob!r}: unknown algorithm kind {algo.kind}")
    if algo.refresh_interval < 1:
        raise ConfigError(f"template {glob!r}: refresh_interval must be at least 1 second")
    if algo.lease_length < algo.refresh_interval:
        raise ConfigError(f"template {glob!r}: lease_length must be at least refresh_interval")
    if algo.HasField("learning_mode_duration") and algo.learning_mode_duration < 0:
        raise ConfigError(f"template {glob!r}: learning_mode_duration must not be negative")
    for param in algo.parameters:
        if param.name == "decay_factor":
            try:
                factor = float(param.value)
            except ValueError:
                factor = -1.0
            if not 0 < factor <= 1:
                raise ConfigError(f"template {glob!r}: decay_factor must be in (0, 1]")
        elif param.name in _AT_LEAST:
            try:
                value = float(param.value)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value >= _AT_LEAST[param.name]):
                raise ConfigError(
                    f"template {glob!r}: {param.name} must be a number of at least {_AT_LEAST[param.name]:g}"
                )


class ResourceRepository:
    """A validated repository and the template lookup."""

    def __init__(self, message: pb.ResourceRepository) -> None:
        validate(message)
        self.message = message

    def find(self, resource_id: str) -> pb.ResourceTemplate:
        for template in self.message.resources:
            if template.identifier_glob == resource_id:
                return template
        for template in self.message.resources:
            if fnmatch.fnmatchcase(resource_id, template.identifier_glob):
                return template
        raise AssertionError("validate() guarantees a '*' template")  # pragma: no cover

    @classmethod
    def from_dict(cls, data: Any) -> ResourceRepository:
        if not isinstance(data, dict):
            raise ConfigError("the configuration must be a mapping with a 'resources' list")
        try:
            message = json_format.ParseDict(data, pb.ResourceRepository())
        except json_format.ParseError as exc:
            raise ConfigError(str(exc)) from exc
        return cls(message)

    @classmethod
    def from_text(cls, text: str) -> ResourceRepository:
        """YAML or JSON (JSON is YAML, but its error messages are better)."""
        try:
            data = json.loads(text)
        except ValueError:
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ConfigError(f"not YAML or JSON: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_file(cls, path: Path) -> ResourceRepository:
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        return cls.from_text(text)


DEFAULT_CONFIG = """\
# Doorman resources of the local cluster (reloaded when this file changes).
# Templates match resource ids in order (an exact id first); "*" must come last.
resources:
  - identifier_glob: "*"
    capacity: 1000
    description: everything not configured above
    algorithm:
      kind: FAIR_SHARE
      lease_length: 60       # seconds a grant lasts
      refresh_interval: 16   # seconds between a client's refreshes
      learning_mode_duration: 20  # a new master echoes leases this long
"""


def write_default_config(path: Path) -> None:
    """Writes DEFAULT_CONFIG unless the operator already has a configuration there."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DEFAULT_CONFIG)


def template(
    glob: str,
    capacity: float,
    kind: int = pb.Algorithm.FAIR_SHARE,
    *,
    lease_length: int = 60,
    refresh_interval: int = 16,
    safe_capacity: float | None = None,
    learning_mode_duration: int | None = None,
) -> pb.ResourceTemplate:
    """A template with the seed's default lease (60 s) and refresh interval (16 s)."""
    algo = pb.Algorithm(kind=kind, lease_length=lease_length, refresh_interval=refresh_interval)  # type: ignore[arg-type]
    if learning_mode_duration is not None:
        algo.learning_mode_duration = learning_mode_duration
    out = pb.ResourceTemplate(identifier_glob=glob, capacity=capacity, algorithm=algo)
    if safe_capacity is not None:
        out.safe_capacity = safe_capacity
    return out


def decay_factor(algo: pb.Algorithm) -> float:
    """How much shorter each level of the tree makes the refresh interval (seed: 0.5)."""
    for param in algo.parameters:
        if param.name == "decay_factor":
            return float(param.value)
    return DEFAULT_DECAY_FACTOR


DEFAULT_DECAY_FACTOR = 0.5
