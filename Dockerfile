# One image for every Partita component: `partita <role>` selects what it runs.
# Build stage: the wheel's build step generates the protobuf/gRPC code from proto/.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml setup.py ./
COPY proto ./proto
COPY services ./services
COPY operator ./operator
RUN pip install --no-cache-dir build && python -m build --wheel --outdir /dist

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home /var/lib/partita partita \
    && mkdir -p /var/lib/partita && chown partita /var/lib/partita
COPY --from=build /dist/*.whl /tmp/
RUN pip install --no-cache-dir /tmp/*.whl && rm /tmp/*.whl
USER partita
WORKDIR /var/lib/partita
ENTRYPOINT ["partita"]
CMD ["--help"]
