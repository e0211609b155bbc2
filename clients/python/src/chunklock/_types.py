"""The objects the server answers with, as named tuples (snake_case names)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Mapping, NamedTuple, Optional

_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def parse_time(s: str) -> datetime:
    """Parses an RFC 3339 time as the server writes it (nanoseconds, ``Z``).

    Returns an aware :class:`datetime.datetime`; digits beyond microseconds are
    dropped. ``datetime.fromisoformat`` of Python 3.9 and 3.10 reads neither ``Z``
    nor nanoseconds, hence this.
    """
    m = _TIME.match(s)
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {s!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    if m.group(8):
        tz = timezone.utc
    else:
        offset = timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        tz = timezone(-offset if m.group(9) == "-" else offset)
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)


def _time(v: Any) -> Optional[datetime]:
    return None if v is None else parse_time(str(v))


def _env(v: Any) -> Dict[str, str]:
    return {str(e["name"]): str(e["value"]) for e in v or []}


class DatasetAccess(NamedTuple):
    """Everything needed to reach one chunk of a dataset.

    ``location`` is the dataset's location with the dataid substituted (a path, a
    where-clause); ``url`` and ``connection`` form its connection string; ``secret``
    is the dataset's decrypted secret, present only when the client was given the
    claim's job key (``job_key``), else ``None``. ``dimensions`` holds the dataid's
    value of each dimension of a dataset with dimensions, in declared order
    (``{"date": "2026-11-22", "region": "eu"}``); empty otherwise.
    """

    dataset: str
    dataid: str
    url: str
    connection: str
    location: str
    secret: Optional[str] = None
    dimensions: Dict[str, str] = {}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DatasetAccess:
        return cls(
            dataset=d["dataset"],
            dataid=d["dataid"],
            url=d.get("url", ""),
            connection=d.get("connection", ""),
            location=d.get("location", ""),
            secret=d.get("secret"),
            dimensions={str(v["name"]): str(v["value"]) for v in d.get("dimensions") or []},
        )


class PartitionMember(NamedTuple):
    """One value of a DYNAMIC dimension: when it was added, and the first dataid of the
    time dimension it is expected at (``None`` without a time dimension)."""

    value: str
    added_at: str
    expected_from: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionMember:
        return cls(d["value"], d["addedAt"], d.get("expectedFrom"))


class PartitionDimension(NamedTuple):
    """One named dimension of a multi-dimensional partition definition.

    A ``DYNAMIC`` dimension reads back with the values it holds now (``values``, and
    ``members`` with when each was added); they are added with
    :meth:`Client.add_partitions` (``dimension=``), never declared: an upsert sends
    no values for it and keeps those the server has.
    """

    name: str
    kind: str
    start: Optional[str] = None
    end: Optional[str] = None
    timezone: Optional[str] = None
    values: Optional[List[str]] = None
    members: Optional[List[PartitionMember]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionDimension:
        members = d.get("members")
        return cls(d["name"], d["kind"], d.get("start"), d.get("end"), d.get("timezone"), d.get("values"),
                   None if members is None else [PartitionMember.from_json(m) for m in members])


class PartitionDefinition(NamedTuple):
    """A dataset's partition definition: the dataids it is expected to have.

    A definition has either ``kind`` (one axis) or ``dimensions`` (2 to 4 named
    dimensions; its dataids join one value of each with ``|``: ``2026-11-22|eu``).
    """

    kind: Optional[str]
    start: Optional[str] = None
    end: Optional[str] = None
    timezone: Optional[str] = None
    values: Optional[List[str]] = None
    lag_seconds: int = 0
    deadline_seconds: Optional[int] = None
    dimensions: Optional[List[PartitionDimension]] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionDefinition:
        dims = d.get("dimensions")
        return cls(
            kind=d.get("kind"),
            start=d.get("start"),
            end=d.get("end"),
            timezone=d.get("timezone"),
            values=d.get("values"),
            lag_seconds=d.get("lagSeconds") or 0,
            deadline_seconds=d.get("deadlineSeconds"),
            dimensions=None if dims is None else [PartitionDimension.from_json(x) for x in dims],
        )


class Dataset(NamedTuple):
    """A dataset: where its chunks live."""

    id: str
    description: str
    url: str
    connection: str
    location: str
    partitions: Optional[PartitionDefinition] = None
    #: The pipeline whose ``chunklock apply`` created it; ``None`` when created otherwise.
    pipeline: Optional[str] = None
    #: How long the dataset's events are kept, in seconds (0: for ever); None when
    #: the server's ``--retain-events`` applies.
    retention_events_seconds: Optional[int] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Dataset:
        p = d.get("partitions")
        r = d.get("retention")
        return cls(
            id=d["id"],
            description=d.get("description", ""),
            url=d.get("url", ""),
            connection=d.get("connection", ""),
            location=d.get("location", ""),
            partitions=None if p is None else PartitionDefinition.from_json(p),
            pipeline=d.get("pipeline"),
            retention_events_seconds=None if r is None else int(r["eventsSeconds"]),
        )


class InputMapping(NamedTuple):
    """How a job reads one input other than one to one (a lookback, a roll-up).

    An entry of a mapping by dimension names the input's ``dimension`` it maps and the
    output's ``output_dimension`` it maps from (``None`` for a one-dimensional side).
    """

    dataset: str
    kind: str
    start_offset: int = 0
    end_offset: int = 0
    dimension: Optional[str] = None
    output_dimension: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> InputMapping:
        return cls(d["dataset"], d["kind"], d.get("startOffset", 0), d.get("endOffset", 0), d.get("dimension"),
                   d.get("outputDimension"))


class Job(NamedTuple):
    """A job: reads its ``inputs``, writes its ``output``, one dataid at a time.

    ``credentials`` lists the datasets the job holds a secret for.
    """

    id: str
    description: str
    inputs: List[str]
    output: str
    env: Dict[str, str]
    max_attempts: int
    lease_seconds: int
    paused: bool
    retry_delay_seconds: int
    retry_max_delay_seconds: int
    max_concurrent: Optional[int]
    pool: Optional[str]
    input_mappings: List[InputMapping]
    credentials: List[str]
    #: The pipeline whose ``chunklock apply`` created it; ``None`` when created otherwise.
    pipeline: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Job:
        return cls(
            id=d["id"],
            description=d.get("description", ""),
            inputs=list(d.get("inputs") or []),
            output=d["output"],
            env=_env(d.get("env")),
            max_attempts=d.get("maxAttempts", 0),
            lease_seconds=d.get("leaseSeconds", 0),
            paused=bool(d.get("paused")),
            retry_delay_seconds=d.get("retryDelaySeconds") or 0,
            retry_max_delay_seconds=d.get("retryMaxDelaySeconds") or 0,
            max_concurrent=d.get("maxConcurrent"),
            pool=d.get("pool"),
            input_mappings=[InputMapping.from_json(m) for m in d.get("inputMappings") or []],
            credentials=[c["dataset"] for c in d.get("credentials") or []],
            pipeline=d.get("pipeline"),
        )


class StatusRow(NamedTuple):
    """One row of the status table: a chunk's OUTPUT row or a consumer's INPUT row.

    ``status`` is spelled as in the schema (``READY``, ``RUNNING``, ...); ``job`` is
    ``None`` for a chunk published into a source dataset.
    """

    dataset: str
    dataid: str
    job: Optional[str]
    role: str
    status: str
    attempt: int
    executor: str
    fence: int
    token: Optional[str]
    lease_expires_at: Optional[datetime]
    updated_at: Optional[datetime]
    reason: str
    location: str
    read_for: Optional[str] = None
    retry_at: Optional[datetime] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StatusRow:
        return cls(
            dataset=d["dataset"],
            dataid=d["dataid"],
            job=d.get("job"),
            role=d.get("role", ""),
            status=d["status"],
            attempt=d.get("attempt", 0),
            executor=d.get("executor", ""),
            fence=d.get("fence", 0),
            token=d.get("token"),
            lease_expires_at=_time(d.get("leaseExpiresAt")),
            updated_at=_time(d.get("updatedAt")),
            reason=d.get("reason", ""),
            location=d.get("location", ""),
            read_for=d.get("readFor"),
            retry_at=_time(d.get("retryAt")),
        )


class Lock(NamedTuple):
    """A lock derived from a status row: ``job`` holds ``kind`` on the chunk."""

    dataset: str
    dataid: str
    kind: str
    job: Optional[str]
    status: str
    read_for: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Lock:
        return cls(d["dataset"], d["dataid"], d["kind"], d.get("job"), d["status"], d.get("readFor"))


class ChunkDetail(NamedTuple):
    """One chunk: its OUTPUT status (``NONE`` when never produced), its rows and locks."""

    dataset: str
    dataid: str
    location: str
    status: str
    output: Optional[StatusRow]
    rows: List[StatusRow]
    locks: List[Lock]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ChunkDetail:
        out = d.get("output")
        return cls(
            dataset=d["dataset"],
            dataid=d["dataid"],
            location=d.get("location", ""),
            status=d["status"],
            output=None if out is None else StatusRow.from_json(out),
            rows=[StatusRow.from_json(r) for r in d.get("rows") or []],
            locks=[Lock.from_json(x) for x in d.get("locks") or []],
        )


class Event(NamedTuple):
    """One recorded status transition (``from_`` is the status before, ``to`` after)."""

    cursor: str
    time: datetime
    actor: str
    job: Optional[str]
    dataset: str
    dataid: str
    role: str
    from_: str
    to: str
    attempt: int
    executor: str
    reason: str
    read_for: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Event:
        return cls(
            cursor=d.get("cursor", ""),
            time=parse_time(d["time"]),
            actor=d.get("actor", ""),
            job=d.get("job"),
            dataset=d["dataset"],
            dataid=d["dataid"],
            role=d["role"],
            from_=d["from"],
            to=d["to"],
            attempt=d.get("attempt", 0),
            executor=d.get("executor", ""),
            reason=d.get("reason", ""),
            read_for=d.get("readFor"),
        )


class Partition(NamedTuple):
    """One expected dataid of a dataset with a partition definition (``NONE``: missing)."""

    dataset: str
    dataid: str
    status: str
    window_start: Optional[datetime]
    window_end: Optional[datetime]
    due_at: Optional[datetime]
    late: bool

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Partition:
        return cls(
            dataset=d["dataset"],
            dataid=d["dataid"],
            status=d["status"],
            window_start=_time(d.get("windowStart")),
            window_end=_time(d.get("windowEnd")),
            due_at=_time(d.get("dueAt")),
            late=bool(d.get("late")),
        )


class PartitionSummary(NamedTuple):
    """A dataset's missing and late chunks, as ``chunklock status`` counts them."""

    at: Optional[datetime]
    missing: int
    late: int
    oldest_missing: Optional[str]
    oldest_late: Optional[str]
    truncated: bool

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PartitionSummary:
        return cls(_time(d.get("at")), d["missing"], d["late"], d.get("oldestMissing"), d.get("oldestLate"),
                   bool(d.get("truncated")))


class RangeSkip(NamedTuple):
    """A chunk a range operation left as it was: ``code`` is why (``LOCKED``, ``NOT_FOUND``)."""

    dataid: str
    code: str
    reason: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RangeSkip:
        return cls(d["dataid"], d.get("code", ""), d.get("reason", ""))


class RangeResult(NamedTuple):
    """What a range operation did: chunks ``changed``, ``unchanged`` and ``skipped``."""

    changed: int
    unchanged: int
    skipped: List[RangeSkip]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RangeResult:
        return cls(d["changed"], d.get("unchanged", 0), [RangeSkip.from_json(s) for s in d.get("skipped") or []])


class TokenResult(NamedTuple):
    """One token's answer in ``complete_many``, ``fail_many`` or ``heartbeat_many``.

    ``ok`` is true when the operation took effect (or repeated the ending that had
    already ended the claim); else ``code`` says why: ``STALE_CLAIM`` (the claim is no
    longer live: stop working on that chunk), ``UNAVAILABLE`` (retry it).
    ``lease_expires_at`` is a heartbeat's new lease end.
    """

    token: str
    ok: bool
    code: Optional[str] = None
    lease_expires_at: Optional[datetime] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TokenResult:
        return cls(str(d["token"]), bool(d["ok"]), d.get("code"), _time(d.get("leaseExpiresAt")))


class Blocker(NamedTuple):
    """One reason a job cannot claim a chunk now (``kind``: ``INPUT_NOT_READY``, ...).

    ``until`` is when it lifts by itself (``NOT_DUE``, ``BACKOFF``); ``pool`` names a
    pool without a free slot (``CONCURRENCY``).
    """

    dataset: str
    dataid: str
    job: Optional[str]
    kind: str
    status: str
    until: Optional[datetime] = None
    pool: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Blocker:
        return cls(
            dataset=d.get("dataset", ""),
            dataid=d.get("dataid", ""),
            job=d.get("job"),
            kind=d.get("kind", ""),
            status=d.get("status", ""),
            until=_time(d.get("until")),
            pool=d.get("pool"),
        )


class ResourceLock(NamedTuple):
    """A named lock on a resource URI, held by ``client``."""

    id: str
    client: str
    resource: str
    mode: str
    created_at: Optional[datetime]
    expires_at: Optional[datetime]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ResourceLock:
        return cls(
            id=str(d.get("id", "")),
            client=d.get("client", ""),
            resource=d.get("resource", ""),
            mode=d.get("mode", ""),
            created_at=_time(d.get("createdAt")),
            expires_at=_time(d.get("expiresAt")),
        )


class Pool(NamedTuple):
    """A pool of slots shared by the jobs naming it; ``used`` slots are held by live claims."""

    id: str
    description: str
    slots: int
    used: int
    jobs: List[str]
    #: The pipeline whose ``chunklock apply`` created it; ``None`` when created otherwise.
    pipeline: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Pool:
        return cls(d["id"], d.get("description", ""), d["slots"], d.get("used", 0), [j["id"] for j in d.get("jobs") or []],
                   d.get("pipeline"))


class GraphNode(NamedTuple):
    """A job, a dataset or a chunk of the lock graph."""

    id: str
    kind: str
    job: Optional[str]
    dataset: Optional[str]
    dataid: Optional[str]
    status: Optional[str]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GraphNode:
        return cls(d["id"], d["kind"], d.get("job"), d.get("dataset"), d.get("dataid"), d.get("status"))


class GraphEdge(NamedTuple):
    """An edge from a job to what it reads (``READS``) or writes (``WRITES``)."""

    from_: str
    to: str
    kind: str
    locks: List[str]
    status: Optional[str]
    mapping: Optional[InputMapping] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GraphEdge:
        m = d.get("mapping")
        return cls(
            d["from"], d["to"], d["kind"], list(d.get("locks") or []), d.get("status"),
            None if m is None else InputMapping.from_json(m),
        )


class LockGraph(NamedTuple):
    """Jobs, datasets and chunks, and who reads and writes what."""

    nodes: List[GraphNode]
    edges: List[GraphEdge]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LockGraph:
        return cls(
            [GraphNode.from_json(n) for n in d.get("nodes") or []],
            [GraphEdge.from_json(e) for e in d.get("edges") or []],
        )
