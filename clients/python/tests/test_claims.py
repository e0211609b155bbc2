"""Claims against a real server: heartbeats, leases, fencing, and how `with claim:` ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import textwrap
import threading
import time
from typing import Iterator, List, Tuple

import pytest

import chunklock
from conftest import PYTHON, Pipeline, Server, eventually, make_pipeline, output_history
from proxy import Proxy


def test_three_lease_job_stays_live_and_completes_once(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=2)
    claim = client.find_next(p.job)
    assert claim is not None
    first_lease = claim.lease_expires_at
    with claim:
        time.sleep(6.5)  # three leases and a bit: only heartbeats keep the claim live
        claim.check()
        assert not claim.lost
    assert claim.ended == "completed"
    assert claim.lease_expires_at > first_lease, "the heartbeats extended the lease"
    assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->READY"]
    row = client.chunk(p.out, "1").output
    assert row is not None and row.status == "READY" and row.attempt == 1


WORKER = textwrap.dedent(
    """
    import sys, time, chunklock
    client = chunklock.Client(sys.argv[1])
    claim = client.find_next(sys.argv[2])
    with claim:
        print("claimed", claim.dataid, flush=True)
        time.sleep(3600)
    """
)


def test_sigkill_mid_claim_chunk_claimable_after_lease(server: Server, client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=2)
    worker = subprocess.Popen([PYTHON, "-c", WORKER, server.url, p.job], stdout=subprocess.PIPE)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().split() == [b"claimed", b"1"]
        time.sleep(3)  # past the first lease: the worker's heartbeats hold the chunk
        assert client.find_next(p.job) is None
        os.kill(worker.pid, signal.SIGKILL)
        killed = time.monotonic()
        worker.wait()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    again: List[chunklock.Claim] = []

    def claimable() -> bool:
        c = client.find_next(p.job)
        if c is not None:
            again.append(c)
        return c is not None

    eventually("the killed worker's chunk to be claimable again", claimable, timeout=10)
    waited = time.monotonic() - killed
    assert again[0].dataid == "1" and again[0].attempt == 2
    assert waited < 2 + 0.2 + 3, f"claimable {waited:.1f}s after the kill: the lease is 2s, the reaper 200ms"
    again[0].complete()
    assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->FAILED", "1 FAILED->RUNNING", "1 RUNNING->READY"]
    failed = [e for e in client.events(dataset=p.out) if e.to == "FAILED"]
    assert [e.reason for e in failed] == ["lease expired"]


def test_expired_claim_is_lost_and_its_late_complete_changes_nothing(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=1)
    claim = client.find_next(p.job)
    assert claim is not None
    seen: List[chunklock.Claim] = []
    claim.on_lost(seen.append)
    # No `with`: nothing heartbeats, and the reaper fails the claim once its lease passes.
    eventually("the reaper to fail the claim", lambda: client.chunk(p.out, "1").status == "FAILED")
    before = client.chunk(p.out, "1")
    with pytest.raises(chunklock.StaleClaim):
        claim.heartbeat()
    assert claim.lost and seen == [claim]
    with pytest.raises(chunklock.StaleClaim):
        claim.check()
    with pytest.raises(chunklock.StaleClaim):
        claim.complete()
    after = client.chunk(p.out, "1")
    assert after.output == before.output, "a stale complete changes nothing"
    assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->FAILED"]


@contextlib.contextmanager
def _claimed_through_a_proxy(server: Server, client: chunklock.Client, names: str) -> Iterator[Tuple[Pipeline, Proxy, chunklock.Claim]]:
    """A claim on a one-chunk pipeline with a 1s lease, made by a client (retry_for 30s) through a proxy."""
    p = make_pipeline(client, names, 1, lease=1)
    proxy = Proxy(server.url)
    try:
        claim = chunklock.Client(proxy.url, retry_for=30).find_next(p.job)
        assert claim is not None
        yield p, proxy, claim
    finally:
        proxy.close()


def test_cut_off_heartbeats_lose_the_claim_and_the_block_does_not_complete(
    server: Server, client: chunklock.Client, names: str
) -> None:
    with _claimed_through_a_proxy(server, client, names) as (p, proxy, claim):
        lost = threading.Event()
        claim.on_lost(lambda c: lost.set())
        with pytest.raises(chunklock.StaleClaim, match="not completed"):
            with claim:
                proxy.cut_off.set()  # heartbeats no longer reach the server
                assert lost.wait(5), "the claim was not lost once its lease passed unconfirmed"
                with pytest.raises(chunklock.StaleClaim):
                    claim.check()
                eventually("the reaper to fail the claim", lambda: client.chunk(p.out, "1").status == "FAILED")
                proxy.cut_off.clear()
        # The block ended normally, yet nothing was completed.
        assert proxy.bodies("complete(") == []
        with pytest.raises(chunklock.StaleClaim):
            claim.complete()
        assert output_history(client, p.out) == ["1 NONE->RUNNING", "1 RUNNING->FAILED"]
        assert client.chunk(p.out, "1").output.reason == "lease expired"  # type: ignore[union-attr]


def test_forced_claim_is_lost_at_its_next_heartbeat(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=1)
    found = client.find_next(p.job)
    assert found is not None
    claim = found
    with pytest.raises(chunklock.StaleClaim):
        with claim:
            forced = client.force(p.job, "1", executor="operator")
            eventually("the heartbeat to answer STALE_CLAIM", lambda: claim.lost, timeout=5)
            assert claim.lost_reason
            claim.check()
    assert client.chunk(p.out, "1").output.executor == "operator"  # type: ignore[union-attr]
    forced.complete()
    history = output_history(client, p.out)
    assert history[0] == "1 NONE->RUNNING" and history[-1] == "1 RUNNING->READY"
    assert history.count("1 RUNNING->READY") == 1, history


def test_block_exception_fails_the_claim_with_its_text(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=5)
    claim = client.find_next(p.job)
    assert claim is not None
    with pytest.raises(ValueError):
        with claim:
            raise ValueError("row 7 has no customer")
    assert claim.ended == "failed"
    row = client.chunk(p.out, "1").output
    assert row is not None and row.status == "FAILED" and row.reason == "ValueError: row 7 has no customer"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interrupt_releases_the_claim(client: chunklock.Client, names: str, exc: type) -> None:
    p = make_pipeline(client, names, 1, lease=5)
    claim = client.find_next(p.job)
    assert claim is not None
    with pytest.raises(exc):
        with claim:
            raise exc()
    assert claim.ended == "released"
    assert client.chunk(p.out, "1").status == "NONE"
    again = client.find_next(p.job)
    assert again is not None and again.dataid == "1" and again.attempt == 1, "a release counts no attempt"
    again.release()


def test_claim_carries_locations_env_and_fence(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 2, lease=5, env={"MODE": "full"})
    first = client.claim(p.job, "2")
    assert (first.job, first.dataid, first.attempt) == (p.job, "2", 1)
    assert first.output.location == f"/data/{p.out}/2" and first.output.connection == "mode=rw"
    assert first.input(p.src).location == f"/data/{p.src}/2"
    assert first.env == {"MODE": "full"}
    assert first.executor == client.executor
    first.release()
    second = client.claim(p.job, "2", executor="other")
    assert second.fence > first.fence, "fencing numbers grow with every claim on the chunk"
    assert second.executor == "other"
    live = client.claims(p.job)
    assert [(c.dataid, c.token) for c in live] == [("2", second.token)]
    with pytest.raises(chunklock.StaleClaim):
        client.complete(first.token)
    second.complete()


def test_claim_refused_is_locked_with_blockers(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1, lease=5)
    with pytest.raises(chunklock.Locked) as e:
        client.claim(p.job, "9")
    assert e.value.code == "LOCKED"
    assert [(b.dataset, b.dataid, b.kind, b.status) for b in e.value.blockers] == [(p.src, "9", "INPUT_NOT_READY", "NONE")]
    assert isinstance(e.value, chunklock.Error)


def test_heartbeat_that_cannot_reach_the_server_gives_up_at_the_lease_end(
    server: Server, client: chunklock.Client, names: str
) -> None:
    with _claimed_through_a_proxy(server, client, names) as (_, proxy, claim):
        proxy.cut_off.set()
        t0 = time.monotonic()
        with pytest.raises(chunklock.StaleClaim, match="lease passed"):
            claim.heartbeat()  # before moving a result into place: is the chunk still ours?
        assert time.monotonic() - t0 < 3, "it waited past the lease (1s), not the client's retry_for (30s)"
        assert claim.lost
