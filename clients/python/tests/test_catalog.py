"""The operator's side against a real server: catalog, partitions, ranges, views."""

from __future__ import annotations

import pytest

import chunklock
from conftest import make_pipeline


def test_catalog_and_pools(client: chunklock.Client, names: str) -> None:
    pool = client.upsert_pool(f"{names}-pool", 2, description="warehouse slots")
    assert (pool.id, pool.slots, pool.used, pool.jobs) == (f"{names}-pool", 2, 0, [])
    ds = client.upsert_dataset(f"{names}-d", description="days", url="s3://lake", location="s3://lake/{dataid}/",
                               partitions=chunklock.PartitionDefinition("DAILY", start="2026-01-01", end="2026-01-05",
                                                                        deadline_seconds=3600))
    assert ds.partitions == chunklock.PartitionDefinition("DAILY", "2026-01-01", "2026-01-05", "UTC", None, 0, 3600)
    client.upsert_dataset(f"{names}-o", location="/o/{dataid}", partitions={"kind": "DAILY", "start": "2026-01-01"})
    key = client.upsert_job(f"{names}-j", inputs=[ds.id], output=f"{names}-o", env={"MODE": "full"}, max_attempts=5,
                            lease_seconds=30, pool=pool.id, max_concurrent=1, retry_delay_seconds=10,
                            input_mappings=[{"dataset": ds.id, "kind": "TIME_WINDOW", "startOffset": -1}])
    assert key is not None
    assert client.upsert_job(f"{names}-j", inputs=[ds.id], output=f"{names}-o") is None, "the key is shown once"
    client.upsert_job(f"{names}-j", inputs=[ds.id], output=f"{names}-o", env={"MODE": "full"}, pool=pool.id,
                      input_mappings=[{"dataset": ds.id, "kind": "TIME_WINDOW", "startOffset": -1}])
    client.set_credential(f"{names}-j", ds.id, "s3cr3t")
    job = client.job(f"{names}-j")
    assert (job.inputs, job.output, job.env, job.pool, job.credentials) == ([ds.id], f"{names}-o", {"MODE": "full"}, pool.id, [ds.id])
    assert job.input_mappings == [chunklock.InputMapping(ds.id, "TIME_WINDOW", -1, 0)]
    assert client.dataset(ds.id) == ds
    assert {d.id for d in client.datasets()} >= {ds.id, f"{names}-o"}
    assert f"{names}-j" in {j.id for j in client.jobs()}
    assert client.pool(pool.id).jobs == [f"{names}-j"]
    assert pool.id in {p.id for p in client.pools()}


def test_pipeline_owner(client: chunklock.Client, names: str) -> None:
    ds = client.upsert_dataset(f"{names}-pd", location="/p/{dataid}", pipeline="etl")
    assert ds.pipeline == "etl"
    assert client.upsert_dataset(f"{names}-pd", description="changed").pipeline == "etl", "upserts keep the owner"
    try:
        client.upsert_dataset(f"{names}-pd", pipeline="sales")
        raise AssertionError("another pipeline changed etl's dataset")
    except chunklock.InvalidArgument as e:
        assert 'pipeline "etl"' in str(e)
    assert client.upsert_dataset(f"{names}-pq", location="/q/{dataid}").pipeline is None
    client.upsert_job(f"{names}-pj", inputs=[ds.id], output=f"{names}-pq", pipeline="etl")
    assert client.job(f"{names}-pj").pipeline == "etl"
    assert client.upsert_pool(f"{names}-pp", 1, pipeline="etl").pipeline == "etl"
    assert client.pool(f"{names}-pp").pipeline == "etl"
    assert client.upsert_pool(f"{names}-pn", 1).pipeline is None


def test_lifecycle(client: chunklock.Client, names: str) -> None:
    client.upsert_dataset(f"{names}-src", location="/s/{dataid}")
    client.upsert_dataset(f"{names}-out", location="/o/{dataid}")
    client.upsert_pool(f"{names}-lp", 1)
    client.upsert_job(f"{names}-lj", inputs=[f"{names}-src"], output=f"{names}-out", pool=f"{names}-lp")
    client.publish(f"{names}-src", "1")
    assert client.pause_job(f"{names}-lj").paused
    assert client.find_next(f"{names}-lj") is None, "a paused job gets no claim"
    assert not client.resume_job(f"{names}-lj").paused
    claim = client.find_next(f"{names}-lj")
    assert claim is not None
    try:
        client.delete_job(f"{names}-lj")
        raise AssertionError("a job with a live claim was deleted")
    except chunklock.Locked as e:
        assert [b.dataid for b in e.blockers] == ["1"]
    try:
        client.delete_pool(f"{names}-lp")
        raise AssertionError("a pool a job names was deleted")
    except chunklock.Locked:
        pass
    claim.complete()
    client.delete_job(f"{names}-lj")
    try:
        client.job(f"{names}-lj")
        raise AssertionError("the job is still there")
    except chunklock.NotFound:
        pass
    assert client.chunk(f"{names}-out", "1").status == "READY", "what it produced stays"
    client.delete_pool(f"{names}-lp")
    try:
        client.delete_dataset(f"{names}-src")
        raise AssertionError("a dataset with chunks was deleted without delete_chunks")
    except chunklock.InvalidArgument as e:
        assert "1 chunk(s)" in str(e)
    client.delete_dataset(f"{names}-src", delete_chunks=True)


def test_partitions_ranges_and_views(client: chunklock.Client, names: str) -> None:
    src = f"{names}-days"
    client.upsert_dataset(src, location="/d/{dataid}", partitions={"kind": "DAILY", "start": "2026-01-01", "end": "2026-01-05"})
    assert client.publish(src, "2026-01-02").status == "READY"
    r = client.publish_range(src, "2026-01-02", "2026-01-03")
    assert (r.changed, r.unchanged, r.skipped) == (1, 1, [])
    parts = client.partitions(src)
    assert [(p.dataid, p.status) for p in parts] == [
        ("2026-01-01", "NONE"), ("2026-01-02", "READY"), ("2026-01-03", "READY"), ("2026-01-04", "NONE"), ("2026-01-05", "NONE")]
    assert parts[0].window_start is not None and parts[0].window_end is not None and not parts[0].late
    assert [p.dataid for p in client.partitions(src, status="NONE", limit=2)] == ["2026-01-01", "2026-01-04"]
    summary = client.partition_summaries()[src]
    assert (summary.missing, summary.late, summary.oldest_missing) == (3, 0, "2026-01-01")

    p = make_pipeline(client, names, 4, lease=30)
    claim = client.claim(p.job, "1")
    claim.complete()
    held = client.hold(p.out, "1", "bad data")
    assert (held.status, held.reason) == ("HOLD", "bad data")
    assert [b.kind for b in client.blockers(p.job, "1")] == ["OUTPUT_LOCKED", "LOCAL_READ"]
    assert [row.status for row in client.resubmit(p.out, "1")] == ["RESUBMIT"]
    running = client.claim(p.job, "2")
    hr = client.hold_range(p.out, "1", "2", "freeze")
    assert (hr.changed, [(s.dataid, s.code) for s in hr.skipped]) == (1, [("2", "LOCKED")])
    running.release()
    rr = client.resubmit_range(p.out, "1", "4")
    assert rr.changed == 1
    detail = client.chunk(p.out, "1")
    assert detail.status == "RESUBMIT" and detail.output is not None and detail.output.job == p.job
    assert client.chunks(p.out, status="RESUBMIT")[0].dataid == "1"
    assert len(client.chunks(p.src, limit=3)) == 3
    assert [n.kind for n in client.lock_graph(job=p.job).nodes].count("JOB") == 1
    assert {(lk.dataid, lk.kind, lk.job) for lk in client.locks(dataset=p.src, job=p.job)} >= {("1", "LOCAL_READ", p.job)}
    events = client.events(dataset=p.out)
    assert [e.to for e in events[:2]] == ["RUNNING", "READY"]
    later = client.events(dataset=p.out, after=events[1].cursor)
    assert later == events[2:]
    assert client.execute("query($id: String!) { dataset(id: $id) { id } }", {"id": p.out}) == {"dataset": {"id": p.out}}


def test_dynamic_partitions(client: chunklock.Client, names: str) -> None:
    files = f"{names}-files"
    client.upsert_dataset(files, location="/in/{dataid}", partitions={"kind": "DYNAMIC"})
    r = client.add_partitions(files, ["b.csv", "a.csv"])
    assert (r.changed, r.skipped) == (2, [])
    r = client.add_partitions(files, ("a.csv", "c.csv"))
    assert r.changed == 1 and [(s.dataid, s.code) for s in r.skipped] == [("a.csv", "ALREADY_EXISTS")]
    assert [p.dataid for p in client.partitions(files)] == ["a.csv", "b.csv", "c.csv"]
    assert client.publish(files, "b.csv").status == "READY"
    r = client.remove_partitions(files, ["b.csv", "nope.csv"])
    assert r.changed == 1 and [(s.dataid, s.code) for s in r.skipped] == [("nope.csv", "NOT_FOUND")]
    assert [p.dataid for p in client.partitions(files)] == ["a.csv", "c.csv"]
    assert client.chunk(files, "b.csv").status == "READY", "removing a value keeps its chunk"
    with pytest.raises(chunklock.InvalidArgument):
        client.add_partitions(files, ["a b"])  # not a valid dataid


def test_dataset_retention(client: chunklock.Client, names: str) -> None:
    kept = client.upsert_dataset(f"{names}-kept", retention_events_seconds=2592000)
    assert kept.retention_events_seconds == 2592000
    assert client.upsert_dataset(f"{names}-ever", retention_events_seconds=0).retention_events_seconds == 0
    assert client.upsert_dataset(f"{names}-server").retention_events_seconds is None
    by_id = {d.id: d for d in client.datasets()}
    assert by_id[f"{names}-kept"].retention_events_seconds == 2592000
    assert by_id[f"{names}-server"].retention_events_seconds is None


def test_dynamic_dimension(client: chunklock.Client, names: str) -> None:
    """A date x customer dataset: customers added at run time, each expected from the day of
    its add or of a backfill's from_; an upsert read back and sent again keeps them."""
    dims = [chunklock.PartitionDimension("date", "DAILY", start="2020-01-01", end="2020-01-03"),
            chunklock.PartitionDimension("customer", "DYNAMIC")]
    ds = client.upsert_dataset(f"{names}-orders", location="s3://lake/{customer}/dt={date}/",
                               partitions=chunklock.PartitionDefinition(None, dimensions=dims))
    client.upsert_job(f"{names}-load", output=ds.id)
    r = client.add_partitions(ds.id, ["acme"], dimension="customer", from_="2020-01-02")
    assert r.changed == 1
    r = client.add_partitions(ds.id, ["acme", "beta"], dimension="customer", from_="2020-01-03")
    assert r.changed == 1 and [s.code for s in r.skipped] == ["ALREADY_EXISTS"]
    got = client.dataset(ds.id)
    assert got.partitions is not None and got.partitions.dimensions is not None
    customer = got.partitions.dimensions[1]
    assert customer.kind == "DYNAMIC" and customer.values == ["acme", "beta"]
    assert [(m.value, m.expected_from) for m in customer.members or []] == [("acme", "2020-01-02"), ("beta", "2020-01-03")]
    assert [p.dataid for p in client.partitions(ds.id)] == ["2020-01-02|acme", "2020-01-03|acme", "2020-01-03|beta"]
    # The definition read back, sent again: the values stay.
    client.upsert_dataset(ds.id, location=got.location, partitions=got.partitions)
    again = client.dataset(ds.id).partitions
    assert again is not None and again.dimensions is not None and again.dimensions[1].values == ["acme", "beta"]
    c = client.find_next(f"{names}-load")
    assert c is not None and c.dataid == "2020-01-02|acme"
    assert c.output.location == "s3://lake/acme/dt=2020-01-02/"
    c.complete()
    with pytest.raises(chunklock.InvalidArgument):
        client.add_partitions(ds.id, ["x"])  # no dimension named


def test_dimensions(client: chunklock.Client, names: str) -> None:
    """A date x region dataset: declared with dimensions, claimed tuple by tuple with each
    dimension's value, listed and held by slices."""
    dims = [chunklock.PartitionDimension("date", "DAILY", start="2020-01-01", end="2020-01-02"),
            chunklock.PartitionDimension("region", "STATIC", values=["us", "eu"])]
    ds = client.upsert_dataset(f"{names}-feeds", location="s3://lake/{region}/dt={date}/",
                               partitions=chunklock.PartitionDefinition(None, dimensions=dims))
    assert ds.partitions is not None and ds.partitions.kind is None
    assert [d.name for d in ds.partitions.dimensions or []] == ["date", "region"]
    assert (ds.partitions.dimensions or [])[0].timezone == "UTC"
    client.upsert_job(f"{names}-ingest", output=ds.id)
    c = client.find_next(f"{names}-ingest")
    assert c is not None
    assert c.dataid == "2020-01-01|eu"
    assert c.output.dimensions == {"date": "2020-01-01", "region": "eu"}
    assert c.output.location == "s3://lake/eu/dt=2020-01-01/"
    c.complete()
    eu = client.partitions(ds.id, slice={"region": ["eu"]})
    assert [(p.dataid, p.status) for p in eu] == [("2020-01-01|eu", "READY"), ("2020-01-02|eu", "NONE")]
    r = client.hold_range(ds.id, "2020-01-01", "2020-01-02", "audit", slice={"region": ["us"]})
    assert r.changed == 2
    assert [p.status for p in client.partitions(ds.id, slice={"region": ["us"]})] == ["HOLD", "HOLD"]
    with pytest.raises(chunklock.InvalidArgument):
        client.partitions(ds.id, slice={"date": ["2020-01-01"]})
