"""Runner pools against a real server: claim_next and the batch endings (SPEC §6, §12)."""

from __future__ import annotations

import chunklock
from conftest import make_pipeline, output_history


def test_claim_next_in_find_next_order_and_batch_endings(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 5, lease=30)
    claims = client.claim_next(p.job, 3)
    assert [c.dataid for c in claims] == ["1", "2", "3"]
    assert len({c.token for c in claims}) == 3, "each claim has its own token"
    assert all(c.inputs[0].location == f"/data/{p.src}/{c.dataid}" for c in claims)
    rest = client.claim_next(p.job, 10)
    assert [c.dataid for c in rest] == ["4", "5"]
    assert client.claim_next(p.job, 10) == []

    beats = client.heartbeat_many([claims[0].token, "ct1.garbage", claims[1].token])
    assert [(r.ok, r.code) for r in beats] == [(True, None), (False, "STALE_CLAIM"), (True, None)]
    assert beats[0].lease_expires_at is not None and beats[1].lease_expires_at is None
    assert [r.token for r in beats] == [claims[0].token, "ct1.garbage", claims[1].token]

    claims[2].fail("boom")
    done = client.complete_many([c.token for c in claims])
    assert [(r.ok, r.code) for r in done] == [(True, None), (True, None), (False, "STALE_CLAIM")]
    again = client.complete_many([claims[0].token])
    assert again[0].ok, "a repeated batch answers as the first did"
    failed = client.fail_many([(rest[0].token, "bad input"), {"token": rest[1].token, "reason": "late"}])
    assert [r.ok for r in failed] == [True, True]
    assert client.chunk(p.out, "4").output.reason == "bad input"  # type: ignore[union-attr]
    assert sorted(output_history(client, p.out)) == sorted(
        [f"{d} NONE->RUNNING" for d in "12345"] + ["1 RUNNING->READY", "2 RUNNING->READY", "3 RUNNING->FAILED",
                                                    "4 RUNNING->FAILED", "5 RUNNING->FAILED"])


def test_claim_next_bad_max(client: chunklock.Client, names: str) -> None:
    p = make_pipeline(client, names, 1)
    for bad in (0, 1001):
        try:
            client.claim_next(p.job, bad)
        except chunklock.Error as e:
            assert e.code in ("INVALID_ARGUMENT",), e
        else:
            raise AssertionError(f"claim_next(max={bad}) was not refused")
