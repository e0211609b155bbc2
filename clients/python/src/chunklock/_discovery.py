"""Where the server is (as the chunklock commands find it) and the executor's default name."""

from __future__ import annotations

import os
import secrets
import socket
import stat
from typing import Optional

DEFAULT_URL = "http://127.0.0.1:8080"

# Where `chunklock serve` on its default data directory writes the URL it serves on.
SERVE_URL_FILE = os.path.join("chunklock-data", "serve.url")


def _owned_privately(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # not a POSIX system: ownership cannot be checked
        return False
    return bool(st.st_uid == getuid() and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)))


def serve_url(cwd: str = ".") -> Optional[str]:
    """The URL in ``./chunklock-data/serve.url``, as the chunklock commands read it.

    Trusted only when the user owns the current directory, ``chunklock-data`` and the
    file, nobody else may write them, and neither the directory nor the file is a
    symbolic link (else another user could send this user's requests, and token, to
    a server of theirs). ``None`` otherwise.
    """
    path = os.path.join(cwd, SERVE_URL_FILE)
    for d in (cwd, os.path.dirname(path)):
        try:
            st = os.lstat(d)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode) or not _owned_privately(st):
            return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or not _owned_privately(st):
            return None
        url = f.read(4096).decode("utf-8", "replace").strip()
    return url or None


def resolve_url(url: Optional[str]) -> str:
    """url, else ``CHUNKLOCK_URL``, else ``./chunklock-data/serve.url``, else the default."""
    return url or os.environ.get("CHUNKLOCK_URL") or serve_url() or DEFAULT_URL


def graphql_endpoint(url: str) -> str:
    """The GraphQL endpoint of a server URL (``/graphql`` appended unless there)."""
    u = url.rstrip("/")
    return u if u.endswith("/graphql") else u + "/graphql"


def default_executor() -> str:
    """host-pid-random, as the chunklock runner names itself."""
    host = socket.gethostname() or "unknown-host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
