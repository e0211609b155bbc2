"""Events as they happen: the websocket subscription (standard library only)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Dict, List, Tuple

import pytest

import chunklock
from chunklock import _websocket
from conftest import Server, make_pipeline


def test_watch_events_as_they_happen_and_after_a_cursor(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 2, lease=30)
    with client.watch_events(dataset=p.out) as stream:
        assert stream.next(timeout=0.3) is None, "nothing happened yet"
        claim = client.claim(p.job, "1")
        ev = stream.next(timeout=10)
        assert ev is not None and (ev.dataset, ev.dataid, ev.role, ev.from_, ev.to) == (p.out, "1", "OUTPUT", "NONE", "RUNNING")
        assert ev.executor == client.executor
        claim.complete()
        ev = stream.next(timeout=10)
        assert ev is not None and (ev.from_, ev.to) == ("RUNNING", "READY")
        first = stream.last_cursor
    # Resuming after a cursor replays what was recorded since.
    client.claim(p.job, "2").fail("broken")
    with client.watch_events(dataset=p.out, after=first) as stream:
        got = [stream.next(timeout=10) for _ in range(2)]
    assert [(e.dataid, e.to) for e in got if e is not None] == [("2", "RUNNING"), ("2", "FAILED")]


def test_close_from_another_thread_ends_the_iteration(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=30)
    stream = client.watch_events(job=p.job)
    seen: List[chunklock.Event] = []
    done = threading.Event()

    def watch() -> None:
        for ev in stream:
            seen.append(ev)
        done.set()

    t = threading.Thread(target=watch)
    t.start()
    # The server starts the subscription after watch_events returns: a claim made
    # before it started is not streamed, so claim and release until one is seen.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and ("OUTPUT", "NONE", "RUNNING") not in [(e.role, e.from_, e.to) for e in list(seen)]:
        client.claim(p.job, "1").release()
        time.sleep(0.2)
    stream.close()
    assert done.wait(5), "the iteration did not end on close()"
    t.join()
    assert len(seen) >= 2 and {e.job for e in seen} == {p.job}
    assert ("OUTPUT", "NONE", "RUNNING") in [(e.role, e.from_, e.to) for e in seen]


def test_watch_needs_a_token_the_server_knows(guarded: Tuple[Server, Dict[str, str]]) -> None:
    server, tokens = guarded
    with pytest.raises(chunklock.Unauthenticated):
        chunklock.Client(server.url, token="clk_nope").watch_events()
    with chunklock.Client(server.url, token=tokens["reader"]).watch_events() as stream:
        assert stream.next(timeout=0.2) is None


def test_websocket_accept_key_and_frames() -> None:
    # RFC 6455's own example of the handshake.
    assert _websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    ws = _websocket._Socket(socket.socket())
    try:
        for n in (0, 125, 126, 65535, 65536):
            payload = bytes(i % 251 for i in range(n))
            head = bytearray([0x81])
            if n < 126:
                head.append(n)
            elif n < 65536:
                head += bytes([126]) + struct.pack(">H", n)
            else:
                head += bytes([127]) + struct.pack(">Q", n)
            frame = bytes(head) + payload
            ws.buf += frame[:-1]
            assert ws.frame() is None, "an incomplete frame waits for the rest"
            ws.buf += frame[-1:]
            assert ws.frame() == (True, 1, payload)
            assert ws.buf == bytearray()
        # A masked frame (as clients send) and a fragment.
        ws.buf += bytes([0x01, 0x80 | 3]) + b"\x01\x02\x03\x04" + bytes(x ^ m for x, m in zip(b"abc", b"\x01\x02\x03"))
        assert ws.frame() == (False, 1, b"abc")
    finally:
        ws.sock.close()


def test_reading_a_closed_socket_ends_the_stream() -> None:
    # close() from another thread may come between two reads of the iterating thread.
    a, b = socket.socketpair()
    b.close()
    ws = _websocket._Socket(a)
    a.close()
    with pytest.raises(_websocket._Closed):
        ws.recv_into_buffer(None)
