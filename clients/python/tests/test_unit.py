"""Parts that need no server: times, the error mapping, endpoints, documents, backoff."""

from __future__ import annotations

import http.client
import socket
from datetime import datetime, timedelta, timezone
from typing import List

import pytest

import chunklock
from chunklock._base import _is_query
from chunklock._discovery import graphql_endpoint
from chunklock._errors import error_from_wire
from chunklock import _transport
from chunklock._transport import Backoff


def test_parse_time() -> None:
    utc = timezone.utc
    assert chunklock.parse_time("2026-11-22T03:54:05.501465123Z") == datetime(2026, 11, 22, 3, 54, 5, 501465, tzinfo=utc)
    assert chunklock.parse_time("2026-11-22T03:54:05Z") == datetime(2026, 11, 22, 3, 54, 5, tzinfo=utc)
    assert chunklock.parse_time("2026-11-22T03:54:05.5Z").microsecond == 500000
    t = chunklock.parse_time("2026-11-22T05:54:05+02:00")
    assert t == datetime(2026, 11, 22, 3, 54, 5, tzinfo=utc) and t.utcoffset() == timedelta(hours=2)
    assert chunklock.parse_time("2026-11-22T03:54:05-01:30").utcoffset() == -timedelta(hours=1, minutes=30)
    with pytest.raises(ValueError):
        chunklock.parse_time("2026-11-22")


def test_errors_by_code() -> None:
    for code, cls in (("NOT_FOUND", chunklock.NotFound), ("ALREADY_EXISTS", chunklock.AlreadyExists),
                      ("INVALID_ARGUMENT", chunklock.InvalidArgument), ("STALE_CLAIM", chunklock.StaleClaim),
                      ("UNAUTHENTICATED", chunklock.Unauthenticated), ("FORBIDDEN", chunklock.Forbidden),
                      ("UNAVAILABLE", chunklock.Unavailable), ("INTERNAL", chunklock.Internal),
                      ("LOCKED", chunklock.Locked)):
        e = error_from_wire({"message": "m", "path": ["a", 0], "extensions": {"code": code}}, {"a": None})
        assert type(e) is cls and isinstance(e, chunklock.Error)
        assert (e.code, e.message, e.path, e.data, str(e)) == (code, "m", ["a", 0], {"a": None}, f"{code}: m")
    odd = error_from_wire({"message": "new", "extensions": {"code": "SOMETHING_NEW"}}, None)
    assert type(odd) is chunklock.Error and odd.code == "SOMETHING_NEW"
    locked = error_from_wire({"message": "m", "extensions": {"code": "LOCKED", "blockers": [
        {"dataset": "d", "dataid": "1", "job": None, "kind": "BACKOFF", "status": "FAILED", "until": "2026-01-01T00:00:00Z"}]}}, None)
    assert isinstance(locked, chunklock.Locked)
    assert locked.blockers == [chunklock.Blocker("d", "1", None, "BACKOFF", "FAILED",
                                                 datetime(2026, 1, 1, tzinfo=timezone.utc), None)]


def test_endpoint_and_documents() -> None:
    assert graphql_endpoint("http://h:1") == "http://h:1/graphql"
    assert graphql_endpoint("http://h:1/") == "http://h:1/graphql"
    assert graphql_endpoint("https://h/chunklock/graphql") == "https://h/chunklock/graphql"
    assert chunklock.Client("http://h:1", executor="me").executor == "me"
    with pytest.raises(ValueError, match="not an http"):
        chunklock.Client("ftp://h")
    assert _is_query("{ datasets { id } }") and _is_query("  # comment\n query Q { jobs { id } }")
    assert not _is_query("mutation { publish(dataset: \"a\", dataid: \"1\") { status } }")
    assert not _is_query("subscription { events { dataid } }")


def test_backoff_grows_to_its_bound_with_jitter() -> None:
    b = Backoff(first=0.2, most=5.0)
    waits = [b.next() for _ in range(12)]
    assert 0.1 <= waits[0] <= 0.2 and 0.2 <= waits[1] <= 0.4
    assert all(2.5 <= w <= 5.0 for w in waits[6:])


def test_request_goes_out_in_one_write() -> None:
    # Headers and body written apart cost a second packet and wake-up on each side.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        conn = _transport.new_connection("http", "127.0.0.1", listener.getsockname()[1], 5.0)
        writes: List[bytes] = []
        conn.connect()
        real = conn.send

        def record(data: bytes) -> None:
            writes.append(bytes(data))
            real(data)

        setattr(conn, "send", record)
        conn.request("POST", "/graphql", body=b'{"query":"{ viewer { name } }"}', headers={"Content-Type": "application/json"})
        conn.close()
    finally:
        listener.close()
    assert len(writes) == 1 and writes[0].endswith(b'{"query":"{ viewer { name } }"}'), writes


def test_https_connections_write_once_too() -> None:
    conn = _transport.new_connection("https", "example.invalid", 443, 5.0)
    assert isinstance(conn, http.client.HTTPSConnection) and isinstance(conn, _transport._OneWrite)
