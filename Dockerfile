# One image for every Partita component: `partita <role>` selects what it runs.
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

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home /var/lib/partita partita \
    && mkdir -p /var/lib/partita && chown partita /var/lib/partita
COPY --from=build /dist/*.whl /tmp/
RUN pip install --no-cache-dir /tmp/*.whl && rm /tmp/*.whl
USER partita
WORKDIR /var/lib/partita
ENTRYPOINT ["partita"]
CMD ["--help"]
