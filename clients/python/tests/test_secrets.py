"""Secrets: decrypted with the job key, absent without it; the key only ever in its header."""

from __future__ import annotations

import pytest

import chunklock
from conftest import Server, make_pipeline
from proxy import Proxy, header


def test_secrets_decrypt_with_the_job_key_which_never_leaves_its_header(
    server: Server, client: chunklock.Client, names: str
) -> None:
    p = make_pipeline(client, names, 3, lease=5)
    other = make_pipeline(client, names + "-other", 1, lease=5)
    assert p.key is not None and p.key.startswith("AGE-SECRET-KEY-")
    assert other.key is not None
    client.set_credential(p.job, p.out, "warehouse-password")
    client.set_credential(p.job, p.src, "lake-token")

    proxy = Proxy(server.url)
    try:
        keyed = chunklock.Client(proxy.url, job_key=p.key)
        claim = keyed.find_next(p.job)
        assert claim is not None
        assert claim.output.secret == "warehouse-password"
        assert claim.input(p.src).secret == "lake-token"
        claim.complete()

        plain = chunklock.Client(proxy.url)
        claim = plain.find_next(p.job)
        assert claim is not None
        assert claim.output.secret is None and claim.input(p.src).secret is None
        claim.complete()

        # A key that is not the job's: FORBIDDEN, and no claim is made.
        wrong = chunklock.Client(proxy.url, job_key=other.key)
        with pytest.raises(chunklock.Forbidden, match="not that job's key"):
            wrong.find_next(p.job)
        assert client.chunk(p.out, "3").status == "NONE"
        assert [c.dataid for c in client.claims(p.job)] == []

        keyed_requests = [r for r in proxy.requests if header(r, "X-Chunklock-Job-Key") is not None]
        assert len(keyed_requests) >= 3, "the keyed clients' requests went through the proxy"
        for r in proxy.requests:
            for key in (p.key, other.key):
                assert key.encode() not in r.body, f"a job key was sent in a request body: {r.body[:200]!r}"
        assert {header(r, "X-Chunklock-Job-Key") for r in keyed_requests} == {p.key, other.key}
    finally:
        proxy.close()


def test_job_key_from_the_environment(
    server: Server, client: chunklock.Client, names: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = make_pipeline(client, names, 1, lease=5)
    assert p.key is not None
    client.set_credential(p.job, p.out, "from-env")
    monkeypatch.setenv("CHUNKLOCK_URL", server.url)
    monkeypatch.setenv("CHUNKLOCK_JOB_KEY", p.key + "\n")
    claim = chunklock.Client().find_next(p.job)
    assert claim is not None and claim.output.secret == "from-env"
    claim.complete()
