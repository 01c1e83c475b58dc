"""Server-side SigV4 verification, with DynamoDB's checks, order and messages.

The order of checks is DynamoDB's as recorded by dynalite (mhart/dynalite index.js),
and it matters because clients see the first failure only:

1. both query-string and header auth -> InvalidSignature; neither, or a header that
   does not start with "AWS4-" -> MissingAuthenticationToken;
2. malformed key=value pairs, then missing Credential/Signature/SignedHeaders and
   date -> IncompleteSignature (all missing parts in one message);
3. date format -> IncompleteSignature; date outside +-15 minutes -> InvalidSignature
   (checked before the access key, so a stale request with a bogus key still reads
   "Signature expired", as ScyllaDB's test against real DynamoDB shows);
4. 'host' not signed -> InvalidSignature; algorithm -> IncompleteSignature;
   credential shape -> IncompleteSignature; credential scope -> InvalidSignature;
5. unknown access key -> UnrecognizedClient; then the signature itself.

Region: AWS rejects a scope naming another region than the endpoint's. A self-hosted
endpoint has no region of its own and clients pick one freely (boto3 demands one),
so by default any non-empty region is accepted; it is still covered by the signature,
so it cannot be altered in flight. Pass `region=` to pin one.
"""

from __future__ import annotations

import calendar
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_tz
from functools import lru_cache
from urllib.parse import unquote

from partita.common import errors, sigv4
from partita.common.errors import DynamoError
from partita.router.credentials import Credential

SERVICE = "dynamodb"
MAX_SKEW_S = 15 * 60  # DynamoDB's window either side of the server's clock
MAX_PRESIGN_EXPIRES_S = 7 * 24 * 3600

SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. "
    "Consult the service documentation for details."
)

_HEADER_PARAMS = ("Credential", "Signature", "SignedHeaders")
_QUERY_PARAMS = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Signature",
    "X-Amz-SignedHeaders",
    "X-Amz-Date",
)
_ISO_BASIC = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True, slots=True)
class _Parsed:
    algorithm: str
    credential: str
    signed_headers: str
    signature: str
    amz_date: str  # the request time in ISO-8601 basic format
    timestamp: int  # the same, as POSIX seconds
    security_token: str | None
    presigned: bool
    expires: int | None


def _fmt(t: float) -> str:
    return time.strftime(_ISO_BASIC, time.gmtime(t))


def _bad_date(value: str) -> DynamoError:
    return errors.incomplete_signature(
        f"Date must be in ISO-8601 'basic format'. Got '{value}'. See http://en.wikipedia.org/wiki/ISO_8601"
    )


def _invalid_security_token() -> DynamoError:
    # DynamoDB words this one without the final period that unrecognized_client() has.
    return DynamoError(
        "UnrecognizedClientException",
        "The security token included in the request is invalid",
        namespace=errors.SERVICE_NS,
    )


@lru_cache(maxsize=256)
def _parse_amz_date(value: str) -> int | None:
    """POSIX seconds for an ISO-8601 basic timestamp ("20150830T123600Z"), else None.

    Cached: every request carries one, and all requests signed in the same second
    carry the same string.
    """
    if len(value) != 16 or value[8] != "T" or value[15] != "Z":
        return None
    digits = value[:8] + value[9:15]
    if not digits.isdigit() or not digits.isascii():
        return None
    try:
        y, mo, d = int(value[0:4]), int(value[4:6]), int(value[6:8])
        h, mi, s = int(value[9:11]), int(value[11:13]), int(value[13:15])
        if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and h < 24 and mi < 60 and s < 61):
            return None
        return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except (ValueError, OverflowError):
        return None


def _parse_http_date(value: str) -> int | None:
    parsed = parsedate_tz(value)
    if parsed is None:
        return None
    offset = parsed[9] or 0
    try:
        return calendar.timegm((*parsed[:6], 0, 0, 0)) - offset
    except (ValueError, OverflowError):
        return None


def _parse_query(query: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in query.split("&"):
        if part:
            key, _, value = part.partition("=")
            params.setdefault(unquote(key), unquote(value))
    return params


def _request_time(value: str) -> tuple[str, int]:
    ts = _parse_amz_date(value)
    if ts is None:
        raise _bad_date(value)
    return value, ts


def _from_header(auth: str, headers: Mapping[str, str]) -> _Parsed:
    tokens = auth.replace(",", " ").split()
    algorithm = tokens[0] if tokens else ""
    params: dict[str, str] = {}
    for token in tokens[1:]:
        key, eq, value = token.partition("=")
        if not eq:
            raise errors.incomplete_signature(
                f"'{token}' not a valid key=value pair (missing equal-sign) "
                f"in Authorization header: '{auth}'."
            )
        params[key] = value
    amz_date = headers.get("x-amz-date")
    http_date = headers.get("date") if amz_date is None else None
    msg = "".join(
        f"Authorization header requires '{p}' parameter. " for p in _HEADER_PARAMS if not params.get(p)
    )
    if amz_date is None and http_date is None:
        msg += "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. "
    if msg:
        raise errors.incomplete_signature(msg + "Authorization=" + auth)
    if amz_date is not None:
        amz_date, ts = _request_time(amz_date)
    else:
        assert http_date is not None
        parsed_ts = _parse_http_date(http_date)
        if parsed_ts is None:
            raise _bad_date(http_date)
        amz_date, ts = _fmt(parsed_ts), parsed_ts
    return _Parsed(
        algorithm=algorithm,
        credential=params["Credential"],
        signed_headers=params["SignedHeaders"],
        signature=params["Signature"],
        amz_date=amz_date,
        timestamp=ts,
        security_token=headers.get("x-amz-security-token"),
        presigned=False,
        expires=None,
    )


def _from_query(params: dict[str, str]) -> _Parsed:
    msg = "".join(
        f"AWS query-string parameters must include '{p}'. " for p in _QUERY_PARAMS if not params.get(p)
    )
    if msg:
        raise errors.incomplete_signature(msg + "Re-examine the query-string parameters.")
    amz_date, ts = _request_time(params["X-Amz-Date"])
    expires: int | None = None
    raw_expires = params.get("X-Amz-Expires")
    if raw_expires is not None:
        # Partita's wording: DynamoDB's own for these is not on record.
        if not raw_expires.isdigit() or not raw_expires.isascii():
            raise errors.incomplete_signature(
                "X-Amz-Expires must be a non-negative integer number of seconds"
            )
        expires = int(raw_expires)
        if expires > MAX_PRESIGN_EXPIRES_S:
            raise errors.incomplete_signature(
                f"X-Amz-Expires must be less than a week (in seconds) that is {MAX_PRESIGN_EXPIRES_S}"
            )
    return _Parsed(
        algorithm=params["X-Amz-Algorithm"],
        credential=params["X-Amz-Credential"],
        signed_headers=params["X-Amz-SignedHeaders"],
        signature=params["X-Amz-Signature"],
        amz_date=amz_date,
        timestamp=ts,
        security_token=params.get("X-Amz-Security-Token"),
        presigned=True,
        expires=expires,
    )


def _check_time(p: _Parsed, now: float) -> None:
    # A presigned URL may ask for a shorter life than the skew window, never a longer one.
    past = MAX_SKEW_S if p.expires is None else min(MAX_SKEW_S, p.expires)
    if p.timestamp < now - past:
        window = "15 min." if past == MAX_SKEW_S else f"{past} sec."
        raise errors.invalid_signature(
            f"Signature expired: {p.amz_date} is now earlier than {_fmt(now - past)} ({_fmt(now)} - {window})"
        )
    if p.timestamp > now + MAX_SKEW_S:
        raise errors.invalid_signature(
            f"Signature not yet current: {p.amz_date} is still later than "
            f"{_fmt(now + MAX_SKEW_S)} ({_fmt(now)} + 15 min.)"
        )


def _check_scope(scope: list[str], amz_date: str, region: str | None) -> None:
    _, date, scope_region, service, terminator = scope
    problems: list[str] = []
    if not scope_region or (region is not None and scope_region != region):
        problems.append(f"Credential should be scoped to a valid region, not '{scope_region}'.")
    if service != SERVICE:
        problems.append(f"Credential should be scoped to correct service: '{SERVICE}'.")
    if terminator != sigv4.TERMINATOR:
        problems.append(
            f"Credential should be scoped with a valid terminator: '{sigv4.TERMINATOR}', not '{terminator}'."
        )
    if date != amz_date[:8]:
        problems.append(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{date}' != '{amz_date[:8]}', from '{amz_date}'."
        )
    if problems:
        raise errors.invalid_signature(" ".join(problems))


@dataclass(frozen=True, slots=True)
class _StaticPart:
    """What an Authorization header says besides its signature, parsed and checked."""

    access_key: str
    date: str
    region: str
    scope: str
    names: tuple[str, ...]  # signed header names, sorted
    signed_headers: str


@lru_cache(maxsize=1024)
def _static_part(prefix: str) -> _StaticPart | None:
    """Parse the part of a well-formed header before "Signature="; None if unusual.

    A client sends the same prefix on every request of a day, so the parse and the
    scope checks are done once; anything unusual goes to the full path, which owns
    DynamoDB's exact error messages.
    """
    tokens = prefix.replace(",", " ").split()
    if len(tokens) != 3 or tokens[0] != sigv4.ALGORITHM:
        return None
    params = {}
    for token in tokens[1:]:
        key, eq, value = token.partition("=")
        if not eq or not value:
            return None
        params[key] = value
    credential, signed = params.get("Credential"), params.get("SignedHeaders")
    if credential is None or signed is None:
        return None
    scope = credential.split("/")
    if len(scope) != 5 or not scope[2] or scope[3] != SERVICE or scope[4] != sigv4.TERMINATOR:
        return None
    names = sorted(signed.lower().split(";"))
    if "host" not in names:
        return None
    return _StaticPart(scope[0], scope[1], scope[2], "/".join(scope[1:]), tuple(names), ";".join(names))


def _verify_common_case(
    *,
    auth: str,
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    lookup: Callable[[str], Credential | None],
    region: str | None,
) -> Credential | None:
    """The credential if this is a valid header-signed request in the common shape.

    None means "not shown valid here" (unusual shape, or invalid): the caller then runs
    the full verification, which accepts it or raises the exact error. It never accepts
    a request the full path would refuse: every check of the full path is made here too.
    """
    at = auth.find("Signature=")
    if at < 0:
        return None
    static = _static_part(auth[:at])
    amz_date = headers.get("x-amz-date")
    if static is None or amz_date is None or amz_date[:8] != static.date:
        return None
    ts = _parse_amz_date(amz_date)
    if ts is None or ts < now - MAX_SKEW_S or ts > now + MAX_SKEW_S:
        return None
    if region is not None and static.region != region:
        return None
    cred = lookup(static.access_key)
    if cred is None or cred.session_token is not None:
        return None
    body_hash = sigv4.sha256_hex(body)
    claimed = headers.get("x-amz-content-sha256")
    if claimed is not None and claimed != body_hash:
        return None
    lines = []
    for name in static.names:
        value = headers.get(name)
        if value is None:
            return None
        lines.append(f"{name}:{' '.join(value.split())}\n")
    creq = f"{method}\n{sigv4.canonical_uri(path)}\n\n{''.join(lines)}\n{static.signed_headers}\n{body_hash}"
    try:
        sts = sigv4.string_to_sign(amz_date, static.scope, creq)
        key = sigv4.signing_key(cred.secret_access_key, static.date, static.region, SERVICE)
        expected = sigv4.signature(key, sts)
    except UnicodeError:
        return None
    return cred if hmac.compare_digest(expected, auth[at + 10 :]) else None


def authenticate(
    *,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    lookup: Callable[[str], Credential | None],
    region: str | None = None,
) -> Credential:
    """Verify a request's SigV4 signature; return the credential that signed it.

    `headers` have lower-case names, repeated headers joined with ","; `path` and
    `query` are as on the wire (query without the '?'); `now` is POSIX seconds.
    Decode header bytes as UTF-8 with errors="surrogateescape": the signature covers
    the bytes the client sent, and that decoding is the one that gives them back.
    Raises a `DynamoError` from `partita.common.errors` on any failure.
    """
    auth = headers.get("authorization")
    if auth is not None and not query:
        fast = _verify_common_case(
            auth=auth,
            method=method,
            path=path,
            headers=headers,
            body=body,
            now=now,
            lookup=lookup,
            region=region,
        )
        if fast is not None:
            return fast
    qparams = _parse_query(query) if query and "X-Amz-Algorithm" in query else None
    if qparams is not None and "X-Amz-Algorithm" not in qparams:
        qparams = None
    if auth is not None and qparams is not None:
        raise errors.invalid_signature(
            "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header."
        )
    if qparams is not None:
        p = _from_query(qparams)
    elif auth is None or not auth.strip().startswith("AWS4-"):
        raise errors.missing_authentication_token()
    else:
        p = _from_header(auth, headers)

    _check_time(p, now)

    names = p.signed_headers.lower().split(";")
    if "host" not in names:
        raise errors.invalid_signature("'Host' must be a 'SignedHeader' in the AWS Authorization.")
    if p.algorithm != sigv4.ALGORITHM:
        raise errors.incomplete_signature(
            f"Unsupported AWS 'algorithm': '{p.algorithm}' (only {sigv4.ALGORITHM} for now). "
        )
    scope = p.credential.rstrip("/").split("/")
    if len(scope) != 5:
        raise errors.incomplete_signature(
            "Credential must have exactly 5 slash-delimited elements, "
            f"e.g. keyid/date/region/service/term, got '{p.credential}'"
        )
    _check_scope(scope, p.amz_date, region)

    cred = lookup(scope[0])
    if cred is None:
        raise errors.unrecognized_client()
    if cred.session_token is not None and (
        p.security_token is None
        or not hmac.compare_digest(p.security_token.encode("utf-8", "replace"), cred.session_token.encode())
    ):
        raise _invalid_security_token()

    body_hash = sigv4.sha256_hex(body)
    claimed = headers.get("x-amz-content-sha256")
    # A claimed payload hash is what gets signed, so it must be the body's: otherwise a
    # captured request could be replayed with another body. UNSIGNED-PAYLOAD is S3's
    # and would leave the body unprotected, so it is refused too.
    if claimed is not None and claimed != body_hash:
        raise errors.invalid_signature(SIGNATURE_MISMATCH)

    pairs = sigv4.signed_header_pairs(names, headers)
    if pairs is None:
        raise errors.invalid_signature(SIGNATURE_MISMATCH)
    try:
        creq, _ = sigv4.canonical_request(
            method,
            path,
            query,
            pairs,
            body_hash,
            drop_query="X-Amz-Signature" if p.presigned else None,
        )
        sts = sigv4.string_to_sign(p.amz_date, "/".join(scope[1:]), creq)
        expected = sigv4.signature(
            sigv4.signing_key(cred.secret_access_key, scope[1], scope[2], scope[3]), sts
        )
    except UnicodeError:
        # Undecodable text (say, a lone surrogate in the scope) cannot have been signed.
        raise errors.invalid_signature(SIGNATURE_MISMATCH) from None
    if not hmac.compare_digest(expected.encode(), p.signature.encode("utf-8", "replace")):
        raise errors.invalid_signature(SIGNATURE_MISMATCH)
    return cred
