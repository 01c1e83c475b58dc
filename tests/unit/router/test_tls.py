"""HTTPS on the DynamoDB endpoint: the server's context, and a renewed certificate served
without a restart (real sockets on 127.0.0.1, certificates from a throwaway CA)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from partita.router import tls
from partita.router.http_server import HttpRequest, HttpResponse, start_http_server
from partita.router.tls import TlsFiles


async def _ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, b"{}")


def issue(ca: trustme.CA, directory: Path) -> TlsFiles:
    cert = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(directory / "tls.crt", directory / "tls.key")
    cert.cert_chain_pems[0].write_to_path(str(files.cert))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(files.cert), append=True)
    cert.private_key_pem.write_to_path(str(files.key))
    return files


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def handshake(port: int, client: ssl.SSLContext) -> str | None:
    """The negotiated protocol after a verified handshake with the server on `port`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="127.0.0.1")
    try:
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        assert (await reader.readline()).startswith(b"HTTP/1.1 ")
        ssl_object = writer.get_extra_info("ssl_object")
        return ssl_object.selected_alpn_protocol() if ssl_object is not None else None
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def serving(files: TlsFiles, *, reloading: bool = False) -> AsyncIterator[int]:
    """An HTTPS server on 127.0.0.1 with `files` (reloaded every 20 ms if `reloading`); its port."""
    context = tls.server_context(files)
    server = await start_http_server(_ok, "127.0.0.1", 0, tls=context)
    reloader = (
        asyncio.create_task(tls.reload_when_renewed(context, files, interval=0.02)) if reloading else None
    )
    try:
        yield server.sockets[0].getsockname()[1]
        assert reloader is None or not reloader.done()  # a bad file never stops it
    finally:
        if reloader is not None:
            reloader.cancel()
        server.close()


async def test_the_endpoint_serves_https_with_the_given_certificate(tmp_path: Path) -> None:
    ca = trustme.CA()
    async with serving(issue(ca, tmp_path)) as port:
        client = trusting(ca)
        client.set_alpn_protocols(["h2", "http/1.1"])
        assert await handshake(port, client) == "http/1.1"  # the router speaks nothing else
        with pytest.raises(ssl.SSLCertVerificationError):
            await handshake(port, trusting(trustme.CA()))


async def test_a_renewed_certificate_is_served_to_new_connections_without_a_restart(tmp_path: Path) -> None:
    first, second = trustme.CA(), trustme.CA()
    files = issue(first, tmp_path)
    async with serving(files, reloading=True) as port:
        await handshake(port, trusting(first))
        assert issue(second, tmp_path) == files  # the same paths, replaced
        for _ in range(250):  # bounded: 5 s at most
            try:
                await handshake(port, trusting(second))
                break
            except ssl.SSLCertVerificationError:
                await asyncio.sleep(0.02)
        else:
            pytest.fail("the renewed certificate was never served")
        with pytest.raises(ssl.SSLCertVerificationError):
            await handshake(port, trusting(first))


async def test_a_broken_renewal_keeps_the_certificate_in_use(tmp_path: Path) -> None:
    ca = trustme.CA()
    files = issue(ca, tmp_path)
    async with serving(files, reloading=True) as port:
        files.key.write_text("not a key\n")  # caught half-written, say
        await asyncio.sleep(0.2)
        await handshake(port, trusting(ca))


def test_a_key_that_does_not_match_the_certificate_fails_at_start(tmp_path: Path) -> None:
    files = issue(trustme.CA(), tmp_path)
    (tmp_path / "other").mkdir()
    other = issue(trustme.CA(), tmp_path / "other")
    with pytest.raises(ssl.SSLError):
        tls.server_context(TlsFiles(files.cert, other.key))
