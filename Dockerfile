# syntax=docker/dockerfile:1
# One image for every Partita component: `partita <sub-command>` selects what it runs
# (the Helm chart passes `operator`, `router` or, through the operator, `storage`).
#
# Build stage: the wheel's build step generates the protobuf/gRPC code from proto/ and
# compiles the router's hot path with mypyc (native-modules.txt), which needs a C
# compiler and, for its type analysis, the dependencies installed (hence --no-isolation).
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py native-modules.txt ./
COPY proto ./proto
COPY services ./services
COPY operator ./operator
RUN pip install --no-cache-dir build setuptools wheel ".[dev]" \
    && PARTITA_COMPILE=1 python -m build --wheel --no-isolation --outdir /dist

# Final stage: the wheel and its dependencies only - no compiler, no headers, no sources.
FROM python:3.11-slim
# A fixed numeric uid/gid, so Kubernetes can verify runAsNonRoot (the chart runs 10001).
RUN groupadd --system --gid 10001 partita \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/partita --no-create-home partita \
    && mkdir -p /var/lib/partita && chown 10001:10001 /var/lib/partita
# The wheel is bind-mounted from the build stage, so it never lands in a layer.
RUN --mount=type=bind,from=build,source=/dist,target=/dist \
    pip install --no-cache-dir /dist/*.whl
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /var/lib/partita
ENTRYPOINT ["partita"]
CMD ["--help"]
