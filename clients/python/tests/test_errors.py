"""Errors as exceptions by code, against real servers (an open one and one with tokens)."""

from __future__ import annotations

from typing import Dict, Tuple

import pytest

import chunklock
from conftest import Server, make_pipeline


def test_codes_of_an_open_server(client: chunklock.Client, names: str) -> None:
    with pytest.raises(chunklock.NotFound) as nf:
        client.job(names + "-nope")
    assert nf.value.code == "NOT_FOUND"
    with pytest.raises(chunklock.NotFound):
        client.chunk(names + "-nope", "1")
    p = make_pipeline(client, names, 1)
    with pytest.raises(chunklock.InvalidArgument) as ia:
        client.claim(p.job, "not a dataid!")
    assert ia.value.code == "INVALID_ARGUMENT" and ia.value.path == ["claim"]
    with pytest.raises(chunklock.AlreadyExists):
        client.upsert_job(names + "-second", inputs=[p.src], output=p.out)
    with pytest.raises(chunklock.InvalidArgument, match="Cannot query field"):
        client.execute("{ nosuchfield }")


def test_resource_lock_refused_lists_its_holders(client: chunklock.Client, names: str) -> None:
    resource = f"s3://lake/{names}"
    held = client.lock_resource("loader", resource, "WRITE", ttl_seconds=60)
    with pytest.raises(chunklock.Locked) as e:
        client.lock_resource("reporter", resource, "READ")
    assert [(h.id, h.client, h.mode) for h in e.value.holders] == [(held.id, "loader", "WRITE")]
    assert e.value.blockers == []
    with pytest.raises(chunklock.Forbidden):
        client.unlock_resource(held.id, "reporter")
    renewed = client.renew_resource(held.id, "loader", ttl_seconds=120)
    assert renewed.expires_at is not None and held.expires_at is not None and renewed.expires_at > held.expires_at
    assert [x.id for x in client.resource_locks(resource=resource)] == [held.id]
    client.unlock_resource(held.id, "loader")
    with pytest.raises(chunklock.NotFound):
        client.renew_resource(held.id, "loader")


def test_tokens(guarded: Tuple[Server, Dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    server, tokens = guarded
    with pytest.raises(chunklock.Unauthenticated):
        chunklock.Client(server.url, token="").datasets()
    with pytest.raises(chunklock.Unauthenticated):
        chunklock.Client(server.url, token="clk_not-a-token").datasets()
    admin = chunklock.Client(server.url, token=tokens["admin"])
    admin.upsert_dataset("beta-src", location="/b/{dataid}")
    admin.upsert_dataset("beta-out", location="/o/{dataid}")
    admin.upsert_job("beta", inputs=["beta-src"], output="beta-out")
    admin.publish("beta-src", "1")
    reader = chunklock.Client(server.url, token=tokens["reader"])
    assert [d.id for d in reader.datasets()] == ["beta-out", "beta-src"]
    with pytest.raises(chunklock.Forbidden):
        reader.publish("beta-src", "2")
    runner = chunklock.Client(server.url, token=tokens["runner"])
    with pytest.raises(chunklock.Forbidden):
        runner.find_next("beta")
    monkeypatch.setenv("CHUNKLOCK_TOKEN", tokens["admin"])
    claim = chunklock.Client(server.url).find_next("beta")
    assert claim is not None and claim.dataid == "1"
    claim.complete()
