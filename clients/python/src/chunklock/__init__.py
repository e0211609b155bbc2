"""chunklock: claim, heartbeat and end chunks of partitioned pipelines from Python.

A job's worker, in full::

    import chunklock

    client = chunklock.Client()          # CHUNKLOCK_URL, CHUNKLOCK_TOKEN, CHUNKLOCK_JOB_KEY
    for claim in client.work("transform", idle_wait=60):
        with claim:                      # heartbeats while the block runs
            rows = read(claim.input("orders").location)
            write(claim.output.location, transform(rows))
                                         # completed when the block ends, failed if it raises

The synchronous client uses the standard library only. See :class:`Client`,
:class:`Claim` and :class:`Worker`; errors are :class:`Error` and its subclasses,
one per code of the server's ``extensions.code``, and :class:`ConfigurationError`
when ``Client()`` finds no server it may trust.
"""

from __future__ import annotations

from ._claim import Claim
from ._client import Client
from ._errors import (
    AlreadyExists,
    ConfigurationError,
    Error,
    Forbidden,
    Internal,
    InvalidArgument,
    InvalidResponse,
    Locked,
    NotFound,
    StaleClaim,
    Unauthenticated,
    Unavailable,
)
from ._types import (
    Blocker,
    ChunkDetail,
    Dataset,
    DatasetAccess,
    Event,
    GraphEdge,
    GraphNode,
    InputMapping,
    Job,
    Lock,
    LockGraph,
    Partition,
    PartitionDefinition,
    PartitionDimension,
    PartitionMember,
    PartitionSummary,
    Pool,
    RangeResult,
    TokenResult,
    RangeSkip,
    ResourceLock,
    StatusRow,
    parse_time,
)
from ._version import __version__
from ._websocket import EventStream
from ._worker import Worker

__all__ = [
    "AlreadyExists",
    "Blocker",
    "ChunkDetail",
    "Claim",
    "Client",
    "ConfigurationError",
    "Dataset",
    "DatasetAccess",
    "Error",
    "Event",
    "EventStream",
    "Forbidden",
    "GraphEdge",
    "GraphNode",
    "InputMapping",
    "Internal",
    "InvalidArgument",
    "InvalidResponse",
    "Job",
    "Lock",
    "LockGraph",
    "Locked",
    "NotFound",
    "Partition",
    "PartitionDefinition",
    "PartitionDimension",
    "PartitionMember",
    "PartitionSummary",
    "Pool",
    "RangeResult",
    "TokenResult",
    "RangeSkip",
    "ResourceLock",
    "StaleClaim",
    "StatusRow",
    "Unauthenticated",
    "Unavailable",
    "Worker",
    "__version__",
    "parse_time",
]
