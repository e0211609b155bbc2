"""Lost answers and unreachable servers: what is retried (idempotent calls) and what is not."""

from __future__ import annotations

import socket
import time
from typing import Iterator

import pytest

import chunklock
from conftest import Server, eventually, make_pipeline, output_history
from proxy import Proxy


@pytest.fixture
def proxy(server: Server) -> Iterator[Proxy]:
    p = Proxy(server.url)
    yield p
    p.close()


def test_complete_whose_answer_was_lost_is_retried_and_ready_once(proxy: Proxy, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=5)
    via = chunklock.Client(proxy.url, retry_for=10)
    claim = via.find_next(p.job)
    assert claim is not None
    proxy.drop_response(lambda body: b"complete(" in body)
    claim.complete()  # the server completed it; the answer was lost; the retry learns the truth
    assert len(proxy.bodies("complete(")) == 2, "the complete was sent twice"
    assert claim.ended == "completed"
    assert client.chunk(p.out, "1").status == "READY"
    assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->READY"]


def test_claim_whose_answer_was_lost_is_not_retried(proxy: Proxy, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=1)
    via = chunklock.Client(proxy.url, retry_for=10)
    proxy.drop_response(lambda body: b"findNext(" in body)
    with pytest.raises(chunklock.Unavailable, match="Not retried"):
        via.find_next(p.job)
    assert len(proxy.bodies("findNext(")) == 1, "a claim is never sent twice by the client"
    # The server did claim it: nobody holds it, and it comes back after its lease.
    assert client.chunk(p.out, "1").status == "RUNNING"
    eventually("the orphan claim to expire", lambda: client.chunk(p.out, "1").status == "FAILED")
    again = via.find_next(p.job)
    assert again is not None and again.attempt == 2
    again.complete()


def test_heartbeat_fail_and_release_answers_lost_are_retried(proxy: Proxy, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 2, lease=5)
    via = chunklock.Client(proxy.url, retry_for=10)
    a = via.claim(p.job, "1")
    proxy.drop_response(lambda body: b"heartbeat(" in body)
    assert a.heartbeat() > a.lease_expires_at.replace(year=2000)
    assert len(proxy.bodies("heartbeat(")) == 2
    proxy.drop_response(lambda body: b"fail(" in body)
    a.fail("bad input")
    assert len(proxy.bodies("fail(")) == 2
    b = via.claim(p.job, "2")
    proxy.drop_response(lambda body: b"release(" in body)
    b.release()
    assert len(proxy.bodies("release(")) == 2
    assert client.chunk(p.out, "1").status == "FAILED" and client.chunk(p.out, "2").status == "NONE"


def test_connections_are_kept_alive(proxy: Proxy, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 20, lease=5)
    via = chunklock.Client(proxy.url)
    for _ in range(20):
        claim = via.find_next(p.job)
        assert claim is not None
        claim.complete()
    assert len(proxy.requests) == 40
    assert proxy.connections == 1, f"{proxy.connections} connections for 40 sequential requests"


def _closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def test_unreachable_server() -> None:
    c = chunklock.Client(_closed_port(), retry_for=1.0)
    t0 = time.monotonic()
    with pytest.raises(chunklock.Unavailable, match="Not retried"):
        c.find_next("any")
    assert time.monotonic() - t0 < 0.5, "a claim is not retried"
    t0 = time.monotonic()
    with pytest.raises(chunklock.Unavailable, match="cannot reach chunklock"):
        c.complete("ct1.token")
    assert time.monotonic() - t0 >= 1.0, "an ending is retried for retry_for"


def test_not_chunklock(server: Server) -> None:
    # A URL of the server that is not its GraphQL endpoint answers 404 in plain text.
    c = chunklock.Client(server.url + "/healthz/x")
    with pytest.raises(chunklock.InvalidResponse, match="HTTP 404 with something that is not GraphQL"):
        c.datasets()
