"""HTTP/1.1 with kept-alive connections (``http.client``), GraphQL answers, retries."""

from __future__ import annotations

import http.client
import json
import random
import select
import socket
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar

from ._errors import InvalidResponse, Unavailable, error_from_wire

T = TypeVar("T")

# A kept-alive connection idle this long is closed rather than reused: servers and
# proxies close idle connections (chunklock after 2 minutes, many proxies after 60
# seconds), and a request sent on one they are closing is lost.
IDLE_REUSE_SECONDS = 15.0

_TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


class Backoff:
    """Exponential backoff with jitter (between half and all of each step)."""

    def __init__(self, first: float = 0.2, most: float = 5.0) -> None:
        self.first, self.most, self.n = first, most, 0

    def next(self) -> float:
        d: float = min(self.first * 2.0 ** self.n, self.most)
        if d < self.most:
            self.n += 1
        return d / 2 + random.random() * d / 2


def retrying(call: Callable[[], T], retry_for: float, sleep: Callable[[float], Any] = time.sleep) -> T:
    """Runs call until it does not raise :class:`Unavailable`, for up to retry_for seconds."""
    backoff = Backoff()
    first: Optional[float] = None
    while True:
        try:
            return call()
        except Unavailable:
            now = time.monotonic()
            if first is None:
                first = now
            if now - first >= retry_for:
                raise
            sleep(backoff.next())


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """Tells whether the server closed an idle connection (it is readable: EOF)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _OneWrite(http.client.HTTPConnection):
    """Sends a request's headers and body in one write.

    http.client writes them apart: a second packet, and a second wake-up of the
    server, which cost both sides about an eighth more CPU per request on loopback.
    This relies on HTTPConnection's _send_output and _buffer (the same from Python
    3.9 to 3.13), and leaves anything else to http.client.
    """

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        buffer = getattr(self, "_buffer", None)
        if not isinstance(message_body, bytes) or encode_chunked or not isinstance(buffer, list):
            super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
            return
        buffer.extend((b"", b""))
        head = b"\r\n".join(buffer)
        del buffer[:]
        self.send(head + message_body)


class _Connection(_OneWrite):
    pass


class _SecureConnection(_OneWrite, http.client.HTTPSConnection):
    pass


def new_connection(scheme: str, host: str, port: Optional[int], timeout: float) -> http.client.HTTPConnection:
    """A connection (not yet connected) to host:port that writes each request at once."""
    if scheme == "https":
        return _SecureConnection(host, port, timeout=timeout)
    return _Connection(host, port, timeout=timeout)


class Transport:
    """POSTs GraphQL requests to one endpoint over a pool of kept-alive connections.

    Safe to share between threads: each request takes an idle connection (or opens
    one) and gives it back once the answer has been read.
    """

    def __init__(self, endpoint: str, headers: Mapping[str, str], timeout: float, max_idle: int = 64) -> None:
        u = urllib.parse.urlsplit(endpoint)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"chunklock: server URL {endpoint!r} is not an http(s) URL like http://127.0.0.1:8080")
        self.endpoint = endpoint
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._path = (u.path or "/") + ("?" + u.query if u.query else "")
        self._headers = dict(headers)
        self._timeout = timeout
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self.opened = 0  # connections opened so far

    def _take(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        """An idle connection that is still open (reused: True), else a new one."""
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since > IDLE_REUSE_SECONDS or _dropped(conn):
                    conn.close()
                    continue
                return conn, True
            self.opened += 1
        return new_connection("https" if self._https else "http", self._host, self._port, timeout), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def _exchange(self, conn: http.client.HTTPConnection, body: bytes, timeout: float) -> Tuple[int, bytes]:
        """One request on conn: (status, body). Raises a transport error as is."""
        try:
            conn.timeout = timeout
            if conn.sock is None:
                conn.connect()
                if conn.sock is not None:
                    # Headers and body go out in two writes: without this, Nagle's
                    # algorithm may hold the body until the server acknowledges them.
                    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                conn.sock.settimeout(timeout)
            conn.request("POST", self._path, body=body, headers=self._headers)
            resp = conn.getresponse()
            data = resp.read()
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            self._give(conn)
        return resp.status, data

    def post(
        self, body: bytes, timeout: Optional[float], what: str, idempotent: bool, sent: Optional[List[float]] = None
    ) -> Tuple[int, bytes]:
        """Sends body; a transport failure becomes :class:`Unavailable`.

        An idempotent request that fails on a reused connection is sent again at once
        on a new connection (the server may have closed it just as the request went
        out); one that is not idempotent is not (it may have been carried out). Each
        request sent appends its (monotonic) time to sent, when given.
        """
        t = self._timeout if timeout is None else timeout
        while True:
            conn, reused = self._take(t)
            if sent is not None:
                sent.append(time.monotonic())
            try:
                return self._exchange(conn, body, t)
            except _TRANSPORT_ERRORS as e:
                if reused and idempotent:
                    continue
                raise self._unavailable(e, what, idempotent) from e

    def _unavailable(self, e: BaseException, what: str, idempotent: bool) -> Unavailable:
        cause = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if idempotent:
            return Unavailable(
                f"cannot reach chunklock at {self.endpoint} ({what}): {cause}; is the server running "
                "there? (the URL comes from url=, else CHUNKLOCK_URL, else ./chunklock-data/serve.url)"
            )
        return Unavailable(
            f"{what}: no answer from chunklock at {self.endpoint}: {cause}. Not retried: a claim "
            "whose answer was lost may have been made, and is failed by the server once its lease "
            "passes; call again to claim"
        )

    def graphql(
        self,
        query: str,
        variables: Optional[Mapping[str, Any]],
        *,
        what: str,
        idempotent: bool,
        timeout: Optional[float] = None,
        sent: Optional[List[float]] = None,
    ) -> Dict[str, Any]:
        """Runs one GraphQL operation and returns its ``data``; the first error is raised."""
        body = json.dumps({"query": query, "variables": dict(variables or {})}, separators=(",", ":")).encode()
        status, raw = self.post(body, timeout, what, idempotent, sent)
        try:
            envelope = json.loads(raw)
            if not isinstance(envelope, dict):
                raise ValueError("not an object")
        except ValueError:
            snippet = raw[:200].decode("utf-8", "replace")
            if status in (502, 503, 504):
                raise Unavailable(f"{self.endpoint} answered HTTP {status} ({snippet!r}); retry later") from None
            raise InvalidResponse(
                f"{self.endpoint} answered HTTP {status} with something that is not GraphQL "
                f"(is the URL the chunklock server?): {snippet!r}"
            ) from None
        data = envelope.get("data")
        errors = envelope.get("errors")
        if errors:
            raise error_from_wire(errors[0], data if isinstance(data, dict) else None)
        if status != 200:
            raise InvalidResponse(f"{self.endpoint} answered HTTP {status}")
        return data if isinstance(data, dict) else {}
