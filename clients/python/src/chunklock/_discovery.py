"""Where the server is (as the chunklock commands find it) and the executor's default name."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import socket
import stat
import struct
import urllib.parse
from typing import List, Optional, Tuple, Union

from ._errors import ConfigurationError

DEFAULT_URL = "http://127.0.0.1:8080"

# Where `chunklock serve` on its default data directory writes the URL it serves on.
SERVE_URL_FILE = os.path.join("chunklock-data", "serve.url")

# Where the user gives the URL, named by every refusal.
_URL_GIVEN = "Client(url=...) or CHUNKLOCK_URL"
_GIVE_URL = "give the server's URL with " + _URL_GIVEN


def resolve_url(url: Optional[str]) -> str:
    """The URL a client talks to, as the chunklock commands find theirs.

    ``url``, else ``CHUNKLOCK_URL``, else ``./chunklock-data/serve.url`` (see
    :func:`serve_url`), else :data:`DEFAULT_URL` when this user's own process listens
    there (see :func:`check_default_server`). The token, job keys and secrets go only
    where the user pointed or where nobody else could have pointed them.

    Raises :class:`chunklock.ConfigurationError`, naming the check that failed and the
    fix, rather than fall back to another URL.
    """
    given = url or os.environ.get("CHUNKLOCK_URL")
    if given:
        return given
    found = serve_url()
    if found is not None:
        return found
    check_default_server(DEFAULT_URL)
    return DEFAULT_URL


def _untrusted(problem: str, fix: str) -> ConfigurationError:
    return ConfigurationError(
        f"{SERVE_URL_FILE} is not trusted: {problem}, so another user could have written the URL in it and "
        f"would receive your token and secrets; {fix}, or give the server's URL yourself with {_URL_GIVEN}"
    )


def _not_private(st: os.stat_result, name: str, path: str) -> Optional[Tuple[str, str]]:
    """(problem, fix) when someone other than this user owns or may write st; else None."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # not a POSIX system: ownership cannot be checked
        return name + " cannot be checked for its owner on this system", "delete it"
    if st.st_uid != getuid():
        return f"{name} is owned by uid {st.st_uid}, not by you (uid {getuid()})", "run the program in a directory of your own"
    perm = stat.S_IMODE(st.st_mode)
    who, bits = {
        0: ("", ""),
        stat.S_IWGRP: ("its group", "g-w"),
        stat.S_IWOTH: ("other users", "o-w"),
    }.get(perm & (stat.S_IWGRP | stat.S_IWOTH), ("its group and by other users", "go-w"))
    if not who:
        return None
    return f"{name} may be written by {who} (mode {perm:04o})", f"make it private with `chmod {bits} {path}`"


def serve_url() -> Optional[str]:
    """The URL in ``./chunklock-data/serve.url``; ``None`` when there is no such file.

    The file is trusted, as the chunklock commands trust it, only when nobody but this
    user could have written it: the user owns the current directory,
    ``./chunklock-data`` and the file, none of them may be written by group or others,
    and neither the data directory nor the file is a symbolic link. A file that fails
    a check raises :class:`chunklock.ConfigurationError` with the check and the fix.
    """
    try:
        os.lstat(SERVE_URL_FILE)
    except FileNotFoundError:
        return None
    except OSError:
        pass  # the checks below say what is wrong
    try:
        cwd = os.getcwd()
    except OSError as e:
        raise _untrusted(f"the current directory cannot be checked ({e.strerror})", "check its permissions") from None
    data_dir = os.path.dirname(SERVE_URL_FILE)
    for path, name, shown in ((".", "the current directory " + cwd, cwd), (data_dir, data_dir, data_dir)):
        try:
            st = os.lstat(path)
        except OSError as e:
            raise _untrusted(f"{name} cannot be checked ({e.strerror})", "check its permissions") from None
        if stat.S_ISLNK(st.st_mode):
            raise _untrusted(name + " is a symbolic link", "replace it by the directory it points to")
        refused = _not_private(st, name, shown)
        if refused:
            raise _untrusted(*refused)
    try:
        fd = os.open(SERVE_URL_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        if os.path.islink(SERVE_URL_FILE):
            raise _untrusted(SERVE_URL_FILE + " is a symbolic link", "replace it by the file it points to") from None
        raise _untrusted(f"{SERVE_URL_FILE} cannot be read ({e.strerror})", "check its permissions") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _untrusted(SERVE_URL_FILE + " is not a regular file", "remove it")
        refused = _not_private(st, SERVE_URL_FILE, SERVE_URL_FILE)
        if refused:
            raise _untrusted(*refused)
        url = f.read(4096).decode("utf-8", "replace").strip()
    if not url:
        raise ConfigurationError(
            f"{SERVE_URL_FILE} holds no URL: delete it (a server writes it when it starts), or {_GIVE_URL}"
        )
    return url


def check_default_server(url: str) -> None:
    """Returns when the process listening on ``url``, the default URL, is this user's own.

    On a shared machine the default port may be another user's server, which would
    receive the token. Raises :class:`chunklock.ConfigurationError` saying why nothing
    is sent there and what to do: when another user's process listens, when nothing
    does, or where the owner cannot be told (systems without ``/proc/net/tcp``).
    """
    parsed = urllib.parse.urlsplit(url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if port is None or parsed.hostname != "127.0.0.1":
        raise ConfigurationError(f"the default URL {url} is not of the form http://127.0.0.1:PORT; {_GIVE_URL}")
    try:
        owners = local_listener_owners(port)
    except (OSError, ValueError) as e:
        raise ConfigurationError(
            f"cannot tell who listens on {url} (the default URL) on this system ({e}), so nothing was sent to it: "
            + _GIVE_URL
        ) from None
    if not owners:
        raise ConfigurationError(f"nothing listens on {url} (the default URL): start `chunklock serve`, or {_GIVE_URL}")
    for uid in owners:
        if uid != os.getuid():
            raise ConfigurationError(
                f"{url} (the default URL) is served by another user's process (uid {uid}), not yours: nothing was "
                f"sent to it; {_GIVE_URL} (a server says its URL when it starts, and writes it to serve.url in its "
                "data directory)"
            )


_LOOPBACK = ipaddress.ip_address("127.0.0.1")
_HEX_PORT = re.compile(r"[0-9A-Fa-f]{1,4}")
_HEX_ADDRESS = re.compile(r"[0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}")


def _proc_ip(h: str) -> Union[ipaddress.IPv4Address, ipaddress.IPv6Address]:
    """An address of /proc/net/tcp (8 hex digits) or tcp6 (32): 32-bit words printed
    as the host reads them from the network-order bytes."""
    if not _HEX_ADDRESS.fullmatch(h):
        raise ValueError(f"unexpected address {h!r}")
    words = (int(h[i:i + 8], 16) for i in range(0, len(h), 8))
    return ipaddress.ip_address(b"".join(struct.pack("=I", w) for w in words))


def loopback_listeners(table: str, port: int) -> List[int]:
    """The user ids of the sockets of a /proc/net/tcp or tcp6 table listening on port
    that a connection to 127.0.0.1:port may reach: bound to 127.0.0.1, to
    ::ffff:127.0.0.1, or to every address (0.0.0.0, ::). ValueError for a table it
    cannot read."""
    uids: List[int] = []
    for line in table.strip().split("\n")[1:]:
        f = line.split()
        if len(f) < 8 or f[3] != "0A":  # 0A: LISTEN
            continue
        hex_ip, colon, hex_port = f[1].partition(":")
        if not colon:
            raise ValueError(f"unexpected local address {f[1]!r}")
        if not _HEX_PORT.fullmatch(hex_port):
            raise ValueError(f"unexpected port {hex_port!r}")
        ip = _proc_ip(hex_ip)
        if isinstance(ip, ipaddress.IPv6Address):
            ip = ip.ipv4_mapped or ip
        if int(hex_port, 16) != port or not (ip.is_unspecified or ip == _LOOPBACK):
            continue
        try:
            uids.append(int(f[7]))
        except ValueError:
            raise ValueError(f"unexpected uid {f[7]!r}") from None
    return uids


def local_listener_owners(port: int) -> List[int]:
    """The user ids of the processes listening on TCP port of 127.0.0.1, from
    /proc/net/tcp and /proc/net/tcp6 (Linux). OSError where they cannot be read
    (elsewhere), ValueError for a table of an unexpected form."""
    uids: List[int] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            if table == "/proc/net/tcp6":
                continue  # no IPv6
            raise
        try:
            uids += loopback_listeners(text, port)
        except ValueError as e:
            raise ValueError(f"{table}: {e}") from None
    return uids


def graphql_endpoint(url: str) -> str:
    """The GraphQL endpoint of a server URL (``/graphql`` appended unless there)."""
    u = url.rstrip("/")
    return u if u.endswith("/graphql") else u + "/graphql"


def default_executor() -> str:
    """host-pid-random, as the chunklock runner names itself."""
    host = socket.gethostname() or "unknown-host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"
