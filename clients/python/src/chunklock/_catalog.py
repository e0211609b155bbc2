"""The catalog (datasets, jobs, pools, credentials) and the views (events, partitions, locks)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._base import _Base
from ._errors import NotFound
from ._types import (
    Blocker,
    Dataset,
    Event,
    Job,
    Lock,
    LockGraph,
    Partition,
    PartitionDefinition,
    PartitionSummary,
    Pool,
    ResourceLock,
)
from ._websocket import EventStream

DATASET_FIELDS = (
    "id description url connection location partitions { kind start end timezone values lagSeconds deadlineSeconds "
    "dimensions { name kind start end timezone values members { value addedAt expectedFrom } } } "
    "pipeline "
    "retention { eventsSeconds }"
)
JOB_FIELDS = (
    "id description inputs output env { name value } maxAttempts leaseSeconds paused retryDelaySeconds "
    "retryMaxDelaySeconds maxConcurrent pool inputMappings { dataset kind startOffset endOffset dimension outputDimension } credentials { dataset } "
    "pipeline"
)
POOL_FIELDS = "id description slots used jobs { id } pipeline"
EVENT_FIELDS = "cursor time actor job dataset dataid role from to attempt executor reason readFor"
LOCK_FIELDS = "id client resource mode createdAt expiresAt"


def _partitions_input(p: Any) -> Any:
    """A partition definition as the GraphQL input takes it (a mapping is passed as is)."""
    if isinstance(p, PartitionDefinition):
        d: Dict[str, Any] = {"kind": p.kind, "start": p.start, "end": p.end, "timezone": p.timezone, "values": p.values,
                             "lagSeconds": p.lag_seconds, "deadlineSeconds": p.deadline_seconds}
        if p.dimensions is not None:
            # A DYNAMIC dimension's values are added at run time, never declared.
            d["dimensions"] = [{k: v for k, v in x._asdict().items()
                                if v is not None and k != "members" and not (k == "values" and x.kind == "DYNAMIC")}
                               for x in p.dimensions]
        return {k: v for k, v in d.items() if v is not None}
    return p


def _slice_input(slice: Optional[Mapping[str, Sequence[str]]]) -> Optional[List[Dict[str, Any]]]:
    """A slice (``{"region": ["eu"]}``) as the GraphQL input takes it."""
    if slice is None:
        return None
    return [{"dimension": k, "values": list(v)} for k, v in slice.items()]


class _Catalog(_Base):
    """Reads and writes of the catalog, and the read-only views."""

    def _one(self, kind: str, fields: str, id: str) -> Dict[str, Any]:
        """The object the query field kind(id) answers; NotFound when it answers null."""
        data = self._call(f"query($id: String!) {{ {kind}(id: $id) {{ {fields} }} }}", {"id": id}, kind, retry=True)
        if data.get(kind) is None:
            raise NotFound(f"{kind} {id!r} not found")
        got: Dict[str, Any] = data[kind]
        return got

    # Datasets, jobs, credentials, pools.

    def datasets(self) -> List[Dataset]:
        """Every dataset."""
        data = self._call(f"query {{ datasets {{ {DATASET_FIELDS} }} }}", None, "datasets", retry=True)
        return [Dataset.from_json(d) for d in data["datasets"]]

    def dataset(self, id: str) -> Dataset:
        """One dataset (:class:`chunklock.NotFound` when there is none)."""
        return Dataset.from_json(self._one("dataset", DATASET_FIELDS, id))

    def jobs(self) -> List[Job]:
        """Every job."""
        data = self._call(f"query {{ jobs {{ {JOB_FIELDS} }} }}", None, "jobs", retry=True)
        return [Job.from_json(j) for j in data["jobs"]]

    def job(self, id: str) -> Job:
        """One job (:class:`chunklock.NotFound` when there is none)."""
        return Job.from_json(self._one("job", JOB_FIELDS, id))

    def upsert_dataset(
        self,
        id: str,
        *,
        description: str = "",
        url: str = "",
        connection: str = "",
        location: str = "",
        partitions: Optional[Any] = None,
        pipeline: Optional[str] = None,
        retention_events_seconds: Optional[int] = None,
    ) -> Dataset:
        """Creates or replaces a dataset.

        ``partitions`` is a :class:`chunklock.PartitionDefinition` or a mapping shaped
        as the GraphQL ``PartitionDefinitionInput`` (``{"kind": "DAILY", "start":
        "2026-01-01"}``). ``pipeline`` names the pipeline creating it, as ``chunklock
        apply`` does: recorded only when this call creates the dataset, and
        :class:`chunklock.InvalidArgument` when another pipeline created it.
        ``retention_events_seconds`` keeps the dataset's events that long (0: for ever)
        in place of the server's ``--retain-events``; None follows the server.
        """
        inp: Dict[str, Any] = {"id": id, "description": description, "url": url, "connection": connection,
                               "location": location}
        if partitions is not None:
            inp["partitions"] = _partitions_input(partitions)
        if pipeline is not None:
            inp["pipeline"] = pipeline
        if retention_events_seconds is not None:
            inp["retention"] = {"eventsSeconds": retention_events_seconds}
        data = self._call(f"mutation($in: DatasetInput!) {{ upsertDataset(input: $in) {{ {DATASET_FIELDS} }} }}",
                          {"in": inp}, "upsertDataset", retry=False)
        return Dataset.from_json(data["upsertDataset"])

    def upsert_job(
        self,
        id: str,
        *,
        output: str,
        inputs: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        description: str = "",
        max_attempts: Optional[int] = None,
        lease_seconds: Optional[int] = None,
        paused: bool = False,
        retry_delay_seconds: Optional[int] = None,
        retry_max_delay_seconds: Optional[int] = None,
        max_concurrent: Optional[int] = None,
        pool: Optional[str] = None,
        input_mappings: Optional[Sequence[Mapping[str, Any]]] = None,
        pipeline: Optional[str] = None,
    ) -> Optional[str]:
        """Creates or replaces a job; returns its job key when this call created it, else ``None``.

        The key is shown this once (the server keeps only its public part): store it
        with the job's runners. ``input_mappings`` are mappings shaped as the GraphQL
        ``InputMappingInput`` (``{"dataset": "orders", "kind": "TIME_WINDOW",
        "startOffset": -6}``). ``pipeline`` is as for :meth:`upsert_dataset`.
        """
        inp: Dict[str, Any] = {
            "id": id, "description": description, "inputs": list(inputs), "output": output, "paused": paused,
            "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
            "inputMappings": [dict(m) for m in input_mappings or []],
        }
        for k, v in (("maxAttempts", max_attempts), ("leaseSeconds", lease_seconds),
                     ("retryDelaySeconds", retry_delay_seconds), ("retryMaxDelaySeconds", retry_max_delay_seconds),
                     ("maxConcurrent", max_concurrent), ("pool", pool), ("pipeline", pipeline)):
            if v is not None:
                inp[k] = v
        data = self._call("mutation($in: JobInput!) { upsertJob(input: $in) { job { id } jobKey } }", {"in": inp},
                          "upsertJob", retry=False)
        with self._leases_mu:
            self._leases.pop(id, None)
        key = data["upsertJob"].get("jobKey")
        return None if key is None else str(key)

    def set_credential(self, job: str, dataset: str, secret: str) -> None:
        """Stores a dataset's secret for a job, encrypted to the job's key (the server cannot read it back)."""
        self._call("mutation($j: String!, $d: String!, $s: String!) { setCredential(job: $j, dataset: $d, secret: $s) { id } }",
                   {"j": job, "d": dataset, "s": secret}, "setCredential", retry=True)

    def pools(self) -> List[Pool]:
        """Every pool, with the slots its live claims use."""
        data = self._call(f"query {{ pools {{ {POOL_FIELDS} }} }}", None, "pools", retry=True)
        return [Pool.from_json(p) for p in data["pools"]]

    def pool(self, id: str) -> Pool:
        """One pool (:class:`chunklock.NotFound` when there is none)."""
        return Pool.from_json(self._one("pool", POOL_FIELDS, id))

    def upsert_pool(self, id: str, slots: int, description: str = "", pipeline: Optional[str] = None) -> Pool:
        """Creates or replaces a pool of slots shared by the jobs naming it (``pipeline`` as for :meth:`upsert_dataset`)."""
        inp: Dict[str, Any] = {"id": id, "slots": slots, "description": description}
        if pipeline is not None:
            inp["pipeline"] = pipeline
        data = self._call(f"mutation($in: PoolInput!) {{ upsertPool(input: $in) {{ {POOL_FIELDS} }} }}",
                          {"in": inp}, "upsertPool", retry=False)
        return Pool.from_json(data["upsertPool"])

    # The catalog lifecycle (SPEC §11).

    def pause_job(self, id: str) -> Job:
        """Pauses a job: no claim is granted to it from the commit on; its live claims run to their end."""
        data = self._call(f"mutation($id: String!) {{ pauseJob(id: $id) {{ {JOB_FIELDS} }} }}", {"id": id},
                          "pauseJob", retry=True)
        return Job.from_json(data["pauseJob"])

    def resume_job(self, id: str) -> Job:
        """Lets a paused job claim again."""
        data = self._call(f"mutation($id: String!) {{ resumeJob(id: $id) {{ {JOB_FIELDS} }} }}", {"id": id},
                          "resumeJob", retry=True)
        return Job.from_json(data["resumeJob"])

    def delete_job(self, id: str) -> None:
        """Deletes a job (:class:`chunklock.Locked`, with its live claims as blockers, until they end).

        The chunks it produced stay READY for its consumers; a job declared again under the id takes them over.
        """
        self._call("mutation($id: String!) { deleteJob(id: $id) }", {"id": id}, "deleteJob", retry=False)

    def delete_dataset(self, id: str, delete_chunks: bool = False) -> None:
        """Deletes a dataset no job reads or writes; one with chunks only with ``delete_chunks``."""
        self._call("mutation($id: String!, $dc: Boolean) { deleteDataset(id: $id, deleteChunks: $dc) }",
                   {"id": id, "dc": delete_chunks}, "deleteDataset", retry=False)

    def delete_pool(self, id: str) -> None:
        """Deletes a pool no job names."""
        self._call("mutation($id: String!) { deletePool(id: $id) }", {"id": id}, "deletePool", retry=False)

    # Views.

    def partitions(
        self,
        dataset: str,
        *,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        status: Optional[str] = None,
        late: Optional[bool] = None,
        limit: Optional[int] = None,
        slice: Optional[Mapping[str, Sequence[str]]] = None,
    ) -> List[Partition]:
        """The expected dataids of a dataset with a partition definition, with their status (``NONE``: missing).

        ``slice`` keeps, of a dataset with dimensions, the dataids whose value of each
        named dimension is listed (``{"region": ["eu"]}``); ``from_`` and ``to`` may then
        be values of the first dimension.
        """
        q = ("query($dataset: String!, $from: String, $to: String, $status: Status, $late: Boolean, $first: Int, "
             "$after: String, $slice: [DimensionSliceInput!]) { page: partitions(dataset: $dataset, from: $from, to: $to, "
             "status: $status, late: $late, first: $first, after: $after, slice: $slice) { edges { node { dataset dataid "
             "status windowStart windowEnd dueAt late } } pageInfo { hasNextPage endCursor } } }")
        variables = {"dataset": dataset, "from": from_, "to": to, "status": status, "late": late,
                     "slice": _slice_input(slice)}
        return [Partition.from_json(n) for n in self._pages(q, variables, "partitions", limit)]

    def partition_summaries(self) -> Dict[str, PartitionSummary]:
        """The missing and late chunks of every dataset with a partition definition, by dataset id."""
        data = self._call("{ datasets { id partitionSummary { at missing late oldestMissing oldestLate truncated } } }",
                          None, "partitionSummaries", retry=True)
        return {d["id"]: PartitionSummary.from_json(d["partitionSummary"]) for d in data["datasets"] if d.get("partitionSummary")}

    def events(
        self,
        dataset: Optional[str] = None,
        job: Optional[str] = None,
        dataid: Optional[str] = None,
        *,
        after: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> List[Event]:
        """The recorded transitions, oldest first, after the cursor ``after`` (every page, or ``limit``)."""
        q = ("query($dataset: String, $job: String, $dataid: String, $first: Int, $after: String) { page: events("
             "dataset: $dataset, job: $job, dataid: $dataid, first: $first, after: $after) { edges { node { "
             f"{EVENT_FIELDS} }} }} pageInfo {{ hasNextPage endCursor }} }} }}")
        variables = {"dataset": dataset, "job": job, "dataid": dataid}
        return [Event.from_json(n) for n in self._pages(q, variables, "events", limit, after=after)]

    def watch_events(self, dataset: Optional[str] = None, job: Optional[str] = None, *,
                     after: Optional[str] = None) -> EventStream:
        """Events as they are recorded, over a websocket: ``for event in client.watch_events(job="j"): ...``.

        Filtered by dataset and job (both optional). With ``after`` (an event's
        ``cursor``) the server first replays what was recorded since. Without it the
        stream begins once the server has started the subscription, a moment after this
        call returns: an event recorded in between is not streamed (pass ``after`` to
        miss none). ``close()`` the stream (or use it as a context manager) to end it.
        Standard library only.
        """
        variables = {"dataset": dataset, "job": job, "after": after}
        return EventStream(self.endpoint, self._headers, self._token, variables, self._timeout)

    def locks(self, dataset: Optional[str] = None, job: Optional[str] = None) -> List[Lock]:
        """The locks derived from the status rows (of a dataset, of a job)."""
        data = self._call("query($d: String, $j: String) { locks(dataset: $d, job: $j) { dataset dataid kind job status readFor } }",
                          {"d": dataset, "j": job}, "locks", retry=True)
        return [Lock.from_json(x) for x in data["locks"]]

    def blockers(self, job: str, dataid: str) -> List[Blocker]:
        """Why job cannot claim dataid now (empty when it can)."""
        data = self._call("query($j: String!, $d: String!) { blockers(job: $j, dataid: $d) { dataset dataid job kind status until pool } }",
                          {"j": job, "d": dataid}, "blockers", retry=True)
        return [Blocker.from_json(b) for b in data["blockers"]]

    def lock_graph(self, job: Optional[str] = None, dataset: Optional[str] = None, dataid: Optional[str] = None) -> LockGraph:
        """The lock graph around a job, a dataset or a dataid (each optional)."""
        q = ("query($j: String, $ds: String, $d: String) { lockGraph(job: $j, dataset: $ds, dataid: $d) { "
             "nodes { id kind job dataset dataid status } edges { from to kind locks status "
             "mapping { dataset kind startOffset endOffset } } } }")
        data = self._call(q, {"j": job, "ds": dataset, "d": dataid}, "lockGraph", retry=True)
        return LockGraph.from_json(data["lockGraph"])

    # Resource locks.

    def lock_resource(self, client: str, resource: str, mode: str, ttl_seconds: Optional[int] = None) -> ResourceLock:
        """Takes a ``READ`` or ``WRITE`` lock on a resource URI; :class:`chunklock.Locked` (with ``holders``) when refused."""
        q = ("mutation($c: String!, $r: String!, $m: LockMode!, $ttl: Int) { lockResource(client: $c, resource: $r, "
             f"mode: $m, ttlSeconds: $ttl) {{ {LOCK_FIELDS} }} }}")
        data = self._call(q, {"c": client, "r": resource, "m": mode, "ttl": ttl_seconds}, "lockResource", retry=False)
        return ResourceLock.from_json(data["lockResource"])

    def renew_resource(self, id: str, client: str, ttl_seconds: Optional[int] = None) -> ResourceLock:
        """Extends a resource lock the client holds to ttl_seconds from now (retried: repeating it is safe)."""
        q = f"mutation($id: ID!, $c: String!, $ttl: Int) {{ renewResource(id: $id, client: $c, ttlSeconds: $ttl) {{ {LOCK_FIELDS} }} }}"
        data = self._call(q, {"id": id, "c": client, "ttl": ttl_seconds}, "renewResource", retry=True)
        return ResourceLock.from_json(data["renewResource"])

    def unlock_resource(self, id: str, client: str) -> None:
        """Removes a resource lock the client holds."""
        self._call("mutation($id: ID!, $c: String!) { unlockResource(id: $id, client: $c) }", {"id": id, "c": client},
                   "unlockResource", retry=False)

    def resource_locks(self, resource: Optional[str] = None, client: Optional[str] = None,
                       mode: Optional[str] = None) -> List[ResourceLock]:
        """The unexpired resource locks (filters optional)."""
        q = (f"query($r: String, $c: String, $m: LockMode) {{ resourceLocks(resource: $r, client: $c, mode: $m) "
             f"{{ {LOCK_FIELDS} }} }}")
        data = self._call(q, {"r": resource, "c": client, "m": mode}, "resourceLocks", retry=True)
        return [ResourceLock.from_json(x) for x in data["resourceLocks"]]
