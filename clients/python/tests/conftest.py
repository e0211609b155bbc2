"""Fixtures: a real `chunklock serve` built from this repository, on free loopback ports."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import chunklock

REPO = Path(__file__).resolve().parents[3]


def _build(out: Path) -> str:
    binary = out / "chunklock"
    subprocess.run(["go", "build", "-o", str(binary), "./cmd/chunklock"], cwd=REPO, check=True)
    return str(binary)


@pytest.fixture(scope="session")
def chunklock_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The chunklock binary: CHUNKLOCK_BIN, else built from this repository."""
    given = os.environ.get("CHUNKLOCK_BIN")
    if given:
        return given
    return _build(tmp_path_factory.mktemp("bin"))


@dataclass
class Server:
    url: str
    proc: "subprocess.Popen[bytes]"
    data_dir: Path
    stderr: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(binary: str, base: Path, *extra: str) -> Server:
    """Runs `chunklock serve` on a free port of 127.0.0.1 with the embedded store in base."""
    data_dir = base / "store"
    stderr = base / "serve.log"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), "--reaper-interval", "200ms",
             "--log-level", "warn", *extra],
            stdout=subprocess.DEVNULL, stderr=err, env={k: v for k, v in os.environ.items() if not k.startswith("CHUNKLOCK_")},
        )
    deadline = time.monotonic() + 60
    pattern = re.compile(r"GraphQL at (http://\S+)/graphql")
    while True:
        m = pattern.search(stderr.read_text(errors="replace"))
        if m:
            return Server(m.group(1), proc, data_dir, stderr)
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"chunklock serve did not start:\n{stderr.read_text(errors='replace')}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def server(chunklock_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One open server for the session (tests keep apart by the names they use)."""
    s = start_server(chunklock_bin, tmp_path_factory.mktemp("server"))
    yield s
    s.stop()


@pytest.fixture
def client(server: Server) -> Iterator[chunklock.Client]:
    c = chunklock.Client(server.url, retry_for=10)
    yield c
    c.close()


_counter = itertools.count()


@pytest.fixture
def names(request: pytest.FixtureRequest) -> str:
    """A prefix of dataset and job ids unique to the test."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return f"{base}-{next(_counter)}"


@dataclass
class Pipeline:
    src: str
    out: str
    job: str
    key: Optional[str]


def make_pipeline(client: chunklock.Client, prefix: str, chunks: int, lease: int = 2, **job: object) -> Pipeline:
    """A source (INTEGER 1..chunks, all published) and a job reading it."""
    src, out, name = f"{prefix}-src", f"{prefix}-out", f"{prefix}-job"
    client.upsert_dataset(src, location=f"/data/{src}/{{dataid}}", partitions={"kind": "INTEGER", "start": "1", "end": str(chunks)})
    client.upsert_dataset(out, url="file:///data", connection="mode=rw", location=f"/data/{out}/{{dataid}}")
    key = client.upsert_job(name, inputs=[src], output=out, lease_seconds=lease, **job)  # type: ignore[arg-type]
    assert client.publish_range(src, "1", str(chunks)).changed == chunks
    return Pipeline(src, out, name, key)


def output_history(client: chunklock.Client, dataset: str, dataid: Optional[str] = None) -> List[str]:
    """The OUTPUT transitions of a dataset's chunks, as "dataid FROM->TO"."""
    return [f"{e.dataid} {e.from_}->{e.to}" for e in client.events(dataset=dataset, dataid=dataid) if e.role == "OUTPUT"]


def eventually(what: str, cond: Callable[[], object], timeout: float = 15.0) -> None:
    """Polls cond every 50 ms until it is true, for up to timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


# The interpreter running the tests, for worker processes (chunklock is importable there).
PYTHON = sys.executable


def _token(binary: str, *args: str) -> Tuple[str, str]:
    """(the token, its tokens-file entry) from `chunklock token new`."""
    r = subprocess.run([binary, "token", "new", *args], capture_output=True, text=True, check=True)
    m = re.search(r"^(clk_\S+)$", r.stderr, re.M)
    assert m, r.stderr
    return m.group(1), r.stdout


@pytest.fixture(scope="session")
def guarded(chunklock_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Server, Dict[str, str]]]:
    """A server with a tokens file: an admin, a reader and a runner of job "alpha"."""
    base: Path = tmp_path_factory.mktemp("guarded")
    tokens: Dict[str, str] = {}
    entries = []
    for name, args in (("admin", ["--role", "admin"]), ("reader", ["--role", "reader"]),
                       ("runner", ["--role", "runner", "--job", "alpha"])):
        tokens[name], entry = _token(chunklock_bin, "--name", name, *args)
        entries.append(entry)
    (base / "tokens.yaml").write_text("".join(entries))
    s = start_server(chunklock_bin, base, "--tokens-file", str(base / "tokens.yaml"))
    yield s, tokens
    s.stop()
