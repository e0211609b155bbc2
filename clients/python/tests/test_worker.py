"""The worker loop: draining with threads, stopping, SIGTERM, unstarted claims."""

from __future__ import annotations

import collections
import contextlib
import signal
import subprocess
import textwrap
import threading
import time
from typing import Counter, Iterator, List

import pytest

import chunklock
from conftest import PYTHON, Server, make_pipeline, output_history


def test_sixteen_threads_drain_two_thousand_chunks_each_completed_once(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 2000, lease=30)
    done: Counter[str] = collections.Counter()
    mu = threading.Lock()
    errors: List[BaseException] = []

    def worker(i: int) -> None:
        try:
            for claim in client.work(p.job, executor=f"worker-{i}", raise_errors=True):
                with claim:
                    with mu:
                        done[claim.dataid] += 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(done) == 2000 and set(done.values()) == {1}, "every chunk handed out exactly once"
    ready = collections.Counter(e.dataid for e in client.events(dataset=p.out) if e.role == "OUTPUT" and e.to == "READY")
    assert len(ready) == 2000 and set(ready.values()) == {1}, "every chunk completed exactly once"
    executors = {r.executor for r in client.chunks(p.out)}
    assert len(executors) > 1, "the threads shared the work"
    assert client.find_next(p.job) is None


def test_failed_block_is_logged_and_the_loop_goes_on(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 3, lease=5, max_attempts=1)
    seen = []
    for claim in client.work(p.job):
        with claim:
            seen.append(claim.dataid)
            if claim.dataid == "2":
                raise RuntimeError("no such file")
        if claim.dataid == "2":
            assert isinstance(claim.error, RuntimeError)
    assert seen == ["1", "2", "3"]
    assert [(r.dataid, r.status, r.reason) for r in client.chunks(p.out)] == [
        ("1", "READY", ""), ("2", "HOLD", "RuntimeError: no such file"), ("3", "READY", "")]


def test_loop_ends_releasing_a_claim_not_started(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 2, lease=30)
    loop = iter(client.work(p.job))
    claim = next(loop)
    loop.close()  # as a `break` before `with claim:` does
    assert claim.ended == "released"
    assert client.chunk(p.out, claim.dataid).status == "NONE"
    for claim in client.work(p.job):
        break
    assert claim.ended == "released"
    assert [c.dataid for c in client.claims(p.job)] == []


def test_stop_from_another_thread_and_idle_wait(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 3, lease=30)
    w = client.work(p.job, idle_wait=30, poll_interval=0.1)
    got = []
    for claim in w:
        with claim:
            got.append(claim.dataid)
        if len(got) == 3:
            # Idle now, waiting up to 30s for more: a stop ends the wait.
            threading.Timer(0.3, w.stop).start()
    assert got == ["1", "2", "3"] and w.stopping
    with pytest.raises(ValueError):
        client.work([])


def test_max_claims(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 5, lease=30)
    assert [c.dataid for c in _complete_all(client.work(p.job, max_claims=2))] == ["1", "2"]


def _complete_all(w: chunklock.Worker) -> List[chunklock.Claim]:
    out = []
    for claim in w:
        with claim:
            out.append(claim)
    return out


SIGTERM_WORKER = textwrap.dedent(
    """
    import sys, time, chunklock
    client = chunklock.Client(sys.argv[1])
    for claim in client.work(sys.argv[2]):
        with claim:
            print("started", claim.dataid, flush=True)
            time.sleep(float(sys.argv[3]))
        print("ended", claim.dataid, claim.ended, flush=True)
    print("stopped", flush=True)
    """
)


@contextlib.contextmanager
def _sigterm_worker(server: Server, job: str, seconds: float) -> Iterator["subprocess.Popen[str]"]:
    """SIGTERM_WORKER in a process of its own, once it has started its first chunk."""
    proc = subprocess.Popen([PYTHON, "-c", SIGTERM_WORKER, server.url, job, str(seconds)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == ["started", "1"]
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_finishes_the_chunk_under_way_and_claims_no_more(server: Server, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 5, lease=30)
    with _sigterm_worker(server, p.job, 1.5) as proc:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert out.split("\n")[:2] == ["ended 1 completed", "stopped"]
    assert [(r.dataid, r.status) for r in client.chunks(p.out)] == [("1", "READY")]


def test_second_sigterm_releases_the_chunk_under_way(server: Server, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 5, lease=30)
    with _sigterm_worker(server, p.job, 60) as proc:
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # two signals sent at once may reach Python's handler as one
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM
    assert client.chunks(p.out) == []
    assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->NONE"]
