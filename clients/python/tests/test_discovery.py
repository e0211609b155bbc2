"""Which server a client talks to when no url is given: the chunklock commands' rules."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import chunklock
from chunklock import _discovery

FILE = os.path.join("chunklock-data", "serve.url")


@pytest.fixture
def own_listener() -> Iterator[str]:
    """The URL of a socket this process listens on: a server of this user's."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_listener: str) -> Path:
    """A private project directory as the current one, with no CHUNKLOCK_URL, whose
    default URL is served by this user: a client that fell back to it would work."""
    tmp_path.chmod(0o700)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHUNKLOCK_URL", raising=False)
    monkeypatch.setattr(_discovery, "DEFAULT_URL", own_listener)
    return tmp_path


def _write_serve_url(url: str) -> None:
    os.mkdir("chunklock-data", 0o700)
    with open(FILE, "w") as f:
        f.write(url + "\n")
    os.chmod(FILE, 0o600)


def test_trusted_serve_url_is_used(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_serve_url("http://127.0.0.1:42527")
    assert chunklock.Client().url == "http://127.0.0.1:42527"
    assert chunklock.Client("http://given:2").url == "http://given:2"
    monkeypatch.setenv("CHUNKLOCK_URL", "http://from-env:1")
    assert chunklock.Client().url == "http://from-env:1"


def _swap_for_symlink(path: str) -> None:
    os.rename(path, path + ".real")
    os.symlink(os.path.basename(path) + ".real", path)


@pytest.mark.parametrize("setup, want", [
    (lambda: os.chmod(".", 0o775), ["the current directory {cwd} may be written by its group (mode 0775)",
                                    "make it private with `chmod g-w {cwd}`"]),
    (lambda: os.chmod("chunklock-data", 0o777), ["chunklock-data may be written by its group and by other users",
                                                 "`chmod go-w chunklock-data`"]),
    (lambda: os.chmod(FILE, 0o606), [FILE + " may be written by other users (mode 0606)", "`chmod o-w " + FILE + "`"]),
    (lambda: os.chmod(FILE, 0o620), [FILE + " may be written by its group", "`chmod g-w " + FILE + "`"]),
    (lambda: _swap_for_symlink(FILE), [FILE + " is a symbolic link", "replace it by the file it points to"]),
    (lambda: _swap_for_symlink("chunklock-data"), ["chunklock-data is a symbolic link",
                                                   "replace it by the directory it points to"]),
], ids=["group-writable project directory", "data directory others may write", "file others may write",
        "file its group may write", "file as a symbolic link", "data directory as a symbolic link"])
def test_untrusted_serve_url_stops_the_client(
    project: Path, monkeypatch: pytest.MonkeyPatch, own_listener: str, setup: Callable[[], None], want: List[str]
) -> None:
    # Never a fall back to the default URL: there another user's server would receive
    # the token. The default here is this user's, so a fall back would go unnoticed.
    _write_serve_url("http://127.0.0.1:42527")
    setup()
    with pytest.raises(chunklock.ConfigurationError) as raised:
        chunklock.Client(token="tok-secret")
    e = raised.value
    assert isinstance(e, chunklock.Error) and e.code == ""
    assert str(e).startswith(FILE + " is not trusted: ")
    assert "so another user could have written the URL in it and would receive your token and secrets" in str(e)
    for w in want:
        assert w.format(cwd=os.getcwd()) in str(e)
    assert str(e).endswith(", or give the server's URL yourself with Client(url=...) or CHUNKLOCK_URL")
    # Where the user pointed still works.
    assert chunklock.Client(own_listener).url == own_listener
    monkeypatch.setenv("CHUNKLOCK_URL", own_listener)
    assert chunklock.Client().url == own_listener


def test_serve_url_holding_no_url_stops_the_client(project: Path) -> None:
    _write_serve_url("  ")
    with pytest.raises(chunklock.ConfigurationError, match="^" + FILE + " holds no URL: delete it"):
        chunklock.Client()


def test_default_url_only_when_own(project: Path, monkeypatch: pytest.MonkeyPatch, own_listener: str) -> None:
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp here")
    assert chunklock.Client().url == own_listener, "the default URL is served by this user"

    # A port bound but not listening: nothing listens there, and nothing else can.
    idle = socket.socket()
    idle.bind(("127.0.0.1", 0))
    try:
        nobody = f"http://127.0.0.1:{idle.getsockname()[1]}"
        monkeypatch.setattr(_discovery, "DEFAULT_URL", nobody)
        with pytest.raises(chunklock.ConfigurationError) as raised:
            chunklock.Client()
        assert str(raised.value) == (f"nothing listens on {nobody} (the default URL): start `chunklock serve`, "
                                     "or give the server's URL with Client(url=...) or CHUNKLOCK_URL")
    finally:
        idle.close()


@pytest.mark.parametrize("owners, want", [
    ([os.getuid() + 1], "is served by another user's process (uid {other}), not yours: nothing was sent to it"),
    ([os.getuid(), os.getuid() + 1], "is served by another user's process (uid {other})"),
    ([], "nothing listens on {url} (the default URL): start `chunklock serve`"),
    (PermissionError(13, "Permission denied"), "cannot tell who listens on {url} (the default URL)"),
], ids=["another user's", "one of them another user's", "nobody's", "unknown"])
def test_default_url_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch, own_listener: str, owners: object, want: str
) -> None:
    def fake(port: int) -> List[int]:
        assert port == int(own_listener.rsplit(":", 1)[1])
        if isinstance(owners, Exception):
            raise owners
        assert isinstance(owners, list)
        return owners

    monkeypatch.setattr(_discovery, "local_listener_owners", fake)
    with pytest.raises(chunklock.ConfigurationError) as raised:
        chunklock.Client()
    assert want.format(other=os.getuid() + 1, url=own_listener) in str(raised.value)
    assert "give the server's URL with Client(url=...) or CHUNKLOCK_URL" in str(raised.value)


def test_default_url_of_another_form_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_discovery, "DEFAULT_URL", "http://localhost:8080")
    with pytest.raises(chunklock.ConfigurationError, match="is not of the form http://127.0.0.1:PORT"):
        chunklock.Client()


# Addresses as a little-endian host prints them.
TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2 1 0000000000000000 100 0 0 10 0
   2: 0200007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 3 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1004        0 4 1 0000000000000000 100 0 0 10 0
   4: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1005        0 5 1 0000000000000000 100 0 0 10 0
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1006        0 6 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1007        0 7 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1008        0 8 1 0000000000000000 100 0 0 10 0
"""


def test_loopback_listeners() -> None:
    if sys.byteorder != "little":
        pytest.skip("the fixture is written as a little-endian host prints it")
    assert _discovery.loopback_listeners(TCP, 8080) == [1001, 1002], \
        "127.0.0.1 and 0.0.0.0; not 127.0.0.2, another port or a connection"
    assert _discovery.loopback_listeners(TCP6, 8080) == [1006, 1007], ":: and ::ffff:127.0.0.1; not ::1"
    for bad in ("0100007F:XYZ", "0100007F1F90", "0100007G:1F90", "01007F:1F90"):
        with pytest.raises(ValueError, match="unexpected"):
            _discovery.loopback_listeners(f"header\n 0: {bad} 00000000:0000 0A 0 0 0 1001\n", 8080)


def test_local_listener_owners(own_listener: str) -> None:
    # This machine's own table: a listener of this process is this user's.
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp here")
    port = int(own_listener.rsplit(":", 1)[1])
    assert _discovery.local_listener_owners(port) == [os.getuid()]


def test_serve_url_in_a_directory_of_another_user(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_serve_url("http://127.0.0.1:42527")
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 1)
    with pytest.raises(chunklock.ConfigurationError) as raised:
        chunklock.Client()
    assert f"the current directory {os.getcwd()} is owned by uid {me}, not by you (uid {me + 1})" in str(raised.value)
    assert "run the program in a directory of your own" in str(raised.value)
