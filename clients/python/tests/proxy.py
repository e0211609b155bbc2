"""An HTTP proxy between a client and the server that records, drops and cuts off requests."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional, Tuple


@dataclass
class Request:
    """A request as the proxy received it from the client."""

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes


class Proxy:
    """Forwards HTTP/1.1 requests (kept alive) from 127.0.0.1:<free port> to upstream.

    ``requests`` records every request received; ``connections`` counts the client
    connections accepted. ``drop_response(pred)`` makes the next request whose body
    matches pred reach the server, and then closes the client's connection without
    the answer. ``cut_off`` set: every request is dropped unanswered, before the server.
    """

    def __init__(self, upstream: str) -> None:
        u = urllib.parse.urlsplit(upstream)
        assert u.hostname and u.port
        self._upstream: Tuple[str, int] = (u.hostname, u.port)
        self.requests: List[Request] = []
        self.connections = 0
        self.cut_off = threading.Event()
        self._drops: List[Callable[[bytes], bool]] = []
        self._mu = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with proxy._mu:
                    proxy.connections += 1

            def do_POST(self) -> None:
                proxy._handle(self)

            do_GET = do_POST

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def drop_response(self, pred: Callable[[bytes], bool]) -> None:
        """The next request matching pred is carried out by the server, its answer dropped."""
        with self._mu:
            self._drops.append(pred)

    def bodies(self, needle: str) -> List[bytes]:
        """The bodies of the requests received that contain needle."""
        with self._mu:
            return [r.body for r in self.requests if needle.encode() in r.body]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _take_drop(self, body: bytes) -> bool:
        with self._mu:
            for i, pred in enumerate(self._drops):
                if pred(body):
                    del self._drops[i]
                    return True
        return False

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        with self._mu:
            self.requests.append(Request(h.command, h.path, dict(h.headers.items()), body))
        if self.cut_off.is_set():
            h.close_connection = True
            return
        drop = self._take_drop(body)
        status, headers, answer = self._forward(h, body)
        if drop:
            h.close_connection = True  # the server did it; the client never hears
            return
        h.send_response(status)
        for k, v in headers:
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(answer)))
        h.end_headers()
        h.wfile.write(answer)

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes) -> Tuple[int, List[Tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self._upstream, timeout=60)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in ("connection", "host")}
            conn.request(h.command, h.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()


def header(r: Request, name: str) -> Optional[str]:
    """A request header by name, whatever its case."""
    for k, v in r.headers.items():
        if k.lower() == name.lower():
            return v
    return None
