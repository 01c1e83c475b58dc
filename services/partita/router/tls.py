"""TLS on the DynamoDB endpoint: the server's context, and its certificate reloaded when
renewed (cert-manager, or any rotation that replaces the files in place).

DynamoDB's own endpoints are HTTPS only; SDKs speak HTTPS to `https://` endpoint URLs
and verify the router's certificate against their CA bundle (`verify=` in boto3,
`AWS_CA_BUNDLE`). TLS 1.2 at least, HTTP/1.1 by ALPN (the router speaks nothing else).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# How often the files are looked at: a renewed certificate is served within this long.
RELOAD_INTERVAL_S = 30.0


@dataclass(frozen=True)
class TlsFiles:
    cert: Path  # PEM: the certificate, then any intermediates
    key: Path  # PEM: its private key

    def stamp(self) -> tuple[tuple[int, int, int], ...]:
        """What changes when either file is replaced (a Secret's symlink swap included)."""
        out = []
        for path in (self.cert, self.key):
            st = os.stat(path)
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """The endpoint's context; a missing or mismatched file fails here, at start."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    context.load_cert_chain(files.cert, files.key)
    return context


async def reload_when_renewed(
    context: ssl.SSLContext, files: TlsFiles, interval: float = RELOAD_INTERVAL_S
) -> None:
    """Load the files into `context` again whenever they change: new connections get the
    new certificate, open ones keep theirs. A file caught half-written (or a bad one)
    is logged and retried; the certificate in use stays until a good one replaces it."""
    seen = files.stamp()
    while True:
        await asyncio.sleep(interval)
        try:
            stamp = files.stamp()
            if stamp == seen:
                continue
            context.load_cert_chain(files.cert, files.key)
        except (OSError, ssl.SSLError) as exc:
            log.error("TLS certificate not reloaded from %s: %s", files.cert, exc)
            continue
        seen = stamp
        log.info("TLS certificate reloaded from %s", files.cert)
