"""Subscriptions: a websocket (RFC 6455) carrying graphql-transport-ws, on the standard library."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import threading
import time
import urllib.parse
from types import TracebackType
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Type

from ._errors import Error, InvalidResponse, Unauthenticated, Unavailable, error_from_wire
from ._types import Event

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _CLOSE, _PING, _PONG = 0x1, 0x8, 0x9, 0xA
_MAX_MESSAGE = 16 << 20


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept a server answers to a Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()


class _Closed(Exception):
    """The connection ended (or was closed by this side)."""


class _Socket:
    """Frames over one socket: masked writes, buffered reads that survive a timeout."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.write_mu = threading.Lock()

    def recv_into_buffer(self, deadline: Optional[float]) -> bool:
        """Reads what the socket has; False when the deadline passed first."""
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if timeout == 0.0:
            return False
        try:
            self.sock.settimeout(timeout)
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError as e:  # closed under us (close() from another thread), reset
            raise _Closed(str(e)) from e
        if not data:
            raise _Closed("the server closed the connection")
        self.buf += data
        return True

    def frame(self) -> Optional[Tuple[bool, int, bytes]]:
        """The first complete frame in the buffer (fin, opcode, payload), removed from it."""
        b = self.buf
        if len(b) < 2:
            return None
        fin, opcode, masked, n = bool(b[0] & 0x80), b[0] & 0x0F, bool(b[1] & 0x80), b[1] & 0x7F
        at = 2
        if n == 126:
            if len(b) < 4:
                return None
            n, at = struct.unpack(">H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, at = struct.unpack(">Q", b[2:10])[0], 10
        if n > _MAX_MESSAGE:
            raise InvalidResponse(f"the server sent a websocket frame of {n} bytes")
        mask = b""
        if masked:
            mask, at = bytes(b[at:at + 4]), at + 4
        if len(b) < at + n:
            return None
        payload = bytes(b[at:at + n])
        del b[:at + n]
        if masked:
            payload = bytes(x ^ mask[i % 4] for i, x in enumerate(payload))
        return fin, opcode, payload

    def send(self, opcode: int, payload: bytes) -> None:
        """Writes one frame, masked as a client must."""
        n = len(payload)
        head = bytearray([0x80 | opcode])
        if n < 126:
            head.append(0x80 | n)
        elif n < 1 << 16:
            head.append(0x80 | 126)
            head += struct.pack(">H", n)
        else:
            head.append(0x80 | 127)
            head += struct.pack(">Q", n)
        mask = os.urandom(4)
        head += mask
        masked = bytes(x ^ mask[i % 4] for i, x in enumerate(payload))
        with self.write_mu:
            self.sock.sendall(bytes(head) + masked)


def _handshake(endpoint: str, headers: Mapping[str, str], timeout: float) -> Tuple[socket.socket, bytes]:
    """Opens a websocket to the GraphQL endpoint with the graphql-transport-ws protocol.

    Returns the socket and what the server sent after its answer's headers.
    """
    u = urllib.parse.urlsplit(endpoint)
    secure = u.scheme == "https"
    host = u.hostname or ""
    port = u.port or (443 if secure else 80)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        if secure:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    except OSError as e:
        raise Unavailable(f"cannot open a websocket to {endpoint}: {e}") from e
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {u.path or '/'} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Protocol: graphql-transport-ws"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("content-type", "accept")]
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = sock.recv(4096)
            if not data or len(answer) > 65536:
                raise OSError("the server closed the connection during the websocket handshake")
            answer += data
    except OSError as e:
        sock.close()
        raise Unavailable(f"cannot open a websocket to {endpoint}: {e}") from e
    head, _, rest = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("iso-8859-1").split("\r\n")
    got = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    status = status_line.split(" ")[1] if " " in status_line else ""
    if status != "101" or got.get("sec-websocket-accept") != accept_key(key):
        sock.close()
        if status == "401":
            raise Unauthenticated("the server refused the token: set CHUNKLOCK_TOKEN to a token from the server's tokens file")
        raise InvalidResponse(f"{endpoint} did not open a websocket: {status_line!r}")
    return sock, rest


class EventStream:
    """Events as they are recorded: iterate over it, ``close()`` it (from any thread) to stop.

    Made by :meth:`chunklock.Client.watch_events`. Iterating blocks until the next
    event; :meth:`next` waits at most a given time. When the connection breaks,
    iteration raises :class:`chunklock.Unavailable`: watch again with ``after=`` the
    cursor of the last event seen, and the server replays what was missed.
    """

    def __init__(self, endpoint: str, headers: Mapping[str, str], token: Optional[str],
                 variables: Dict[str, Any], timeout: float) -> None:
        sock, rest = _handshake(endpoint, headers, timeout)
        self._ws = _Socket(sock)
        self._ws.buf += rest
        self._closed = threading.Event()
        self.last_cursor: Optional[str] = variables.get("after")
        try:
            init: Dict[str, Any] = {"Authorization": f"Bearer {token}"} if token else {}
            self._send({"type": "connection_init", "payload": init})
            deadline = time.monotonic() + timeout
            while True:
                m = self._message(deadline)
                if m is None:
                    raise Unavailable(f"{endpoint}: no connection_ack within {timeout}s")
                if m.get("type") == "connection_ack":
                    break
            query = ("subscription($dataset: String, $job: String, $after: String) { events(dataset: $dataset, "
                     "job: $job, after: $after) { cursor time actor job dataset dataid role from to attempt "
                     "executor reason readFor } }")
            self._send({"id": "1", "type": "subscribe", "payload": {"query": query, "variables": variables}})
        except BaseException:
            self._ws.sock.close()
            raise

    def _send(self, message: Mapping[str, Any]) -> None:
        try:
            self._ws.send(_TEXT, json.dumps(message).encode())
        except OSError as e:
            if self._closed.is_set():
                raise StopIteration from None
            raise Unavailable(f"the event stream broke: {e}") from e

    def _pong(self, payload: bytes) -> None:
        try:
            self._ws.send(_PONG, payload)
        except OSError as e:
            if self._closed.is_set():
                raise StopIteration from None
            raise Unavailable(f"the event stream broke: {e}") from e

    def _message(self, deadline: Optional[float]) -> Optional[Dict[str, Any]]:
        """The next graphql-transport-ws message; None once the deadline passed."""
        parts = b""
        while True:
            try:
                f = self._ws.frame()
                if f is None:
                    if not self._ws.recv_into_buffer(deadline):
                        return None
                    continue
            except _Closed as e:
                if self._closed.is_set():
                    raise StopIteration from None
                raise Unavailable(f"the event stream broke: {e}") from None
            fin, opcode, payload = f
            if opcode == _PING:
                self._pong(payload)
            elif opcode == _CLOSE:
                if self._closed.is_set():
                    raise StopIteration
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                if code in (4401, 4403):
                    raise Unauthenticated("the server refused the token: set CHUNKLOCK_TOKEN to a token from the server's tokens file")
                raise Unavailable(f"the server closed the event stream ({code} {payload[2:].decode('utf-8', 'replace')})")
            elif opcode in (_TEXT, 0x0):
                parts += payload
                if fin:
                    m: Dict[str, Any] = json.loads(parts)
                    if m.get("type") == "ping":
                        self._send({"type": "pong"})
                        parts = b""
                        continue
                    return m

    def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, waiting at most timeout seconds (None: as long as it takes); None on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            m = self._message(deadline)
            if m is None:
                return None
            kind = m.get("type")
            if kind == "next":
                payload = m.get("payload") or {}
                if payload.get("errors"):
                    raise error_from_wire(payload["errors"][0], None)
                ev = Event.from_json(payload["data"]["events"])
                self.last_cursor = ev.cursor
                return ev
            if kind == "error":
                errs = m.get("payload") or []
                raise error_from_wire(errs[0], None) if errs else Error("the server refused the subscription")
            if kind == "complete":
                raise Unavailable("the server ended the event stream")

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        ev = self.next()
        assert ev is not None
        return ev

    def close(self) -> None:
        """Ends the stream and its connection; an iteration under way in another thread stops."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._ws.send(_CLOSE, struct.pack(">H", 1000))
        except OSError:
            pass
        try:
            self._ws.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._ws.sock.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()
