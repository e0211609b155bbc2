"""The client: claims and their endings, chunks, ranges, and anything else via ``execute``."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._catalog import _Catalog, _slice_input
from ._claim import Claim
from ._errors import Error, StaleClaim
from ._types import ChunkDetail, RangeResult, StatusRow, TokenResult, parse_time

if TYPE_CHECKING:  # pragma: no cover
    from ._worker import Worker

_ACCESS = "dataset dataid url connection location dimensions { name value } secret"
CLAIM_FIELDS = (
    f"token job dataid attempt executor fence leaseExpiresAt output {{ {_ACCESS} }} inputs {{ {_ACCESS} }} env {{ name value }}"
)
ROW_FIELDS = "dataset dataid job role status attempt executor fence token leaseExpiresAt updatedAt reason location readFor retryAt"
RANGE_FIELDS = "changed unchanged skipped { dataid code reason }"
_HEARTBEAT = "mutation($t: String!) { heartbeat(token: $t) { leaseExpiresAt } }"
_TOKEN_RESULT = "token ok code leaseExpiresAt"
#: At most this many claims per ``claim_next``, tokens per batch ending (the server's bound).
MAX_BATCH = 1000

class Client(_Catalog):
    """A chunklock client: ``Client(url=None, token=None, job_key=None)``.

    ``url`` defaults to ``CHUNKLOCK_URL``, then to the server the chunklock commands
    would find: the URL in ``./chunklock-data/serve.url`` when nobody but this user
    could have written it, else ``http://127.0.0.1:8080`` when this user's own process
    listens there. When neither may be trusted (a ``serve.url`` others may write,
    another user's process or none on the default port), it raises
    :class:`chunklock.ConfigurationError` naming the check and the fix, rather than
    send the token elsewhere. ``token`` (the API bearer
    token) defaults to ``CHUNKLOCK_TOKEN``; ``job_key`` to ``CHUNKLOCK_JOB_KEY``: it is
    sent in the ``X-Chunklock-Job-Key`` header, never in a document, and makes claims
    carry their datasets' decrypted secrets.

    Keyword-only: ``executor`` (the name operators see as the holder of this client's
    claims; default host-pid-random), ``timeout`` (seconds per request, default 60)
    and ``retry_for`` (how long idempotent calls are retried while the server cannot
    be reached, default 300 seconds).

    One client may be shared by any number of threads: it keeps a pool of kept-alive
    connections. Reads, heartbeats and the endings of claims (``complete``, ``fail``,
    ``release``) are retried with backoff on ``UNAVAILABLE`` and lost connections: a
    repeated ending is answered as the first one was. Calls that claim
    (``find_next``, ``claim``, ``force``) are never retried: they raise
    :class:`chunklock.Unavailable`, since a claim whose answer was lost may be live.
    """

    # Claims.

    def _claim_op(self, op: str, variables: Dict[str, Any]) -> Optional[Claim]:
        params = ", ".join(f"${k}: String!" for k in variables)
        args = ", ".join(f"{k}: ${k}" for k in variables)
        query = f"mutation({params}) {{ claim: {op}({args}) {{ {CLAIM_FIELDS} }} }}"
        sent = time.monotonic()
        try:
            data = self._call(query, variables, op, retry=False)
        except Error as e:
            got = (e.data or {}).get("claim")
            if got and got.get("token"):
                # The chunk was claimed but part of the answer failed (a job key that
                # is not the job's): give it back rather than leave it to expire.
                self.release(got["token"])
                e.message += f" (the claim on {got.get('job')} {got.get('dataid')} was released)"
                e.args = (e.message,)
            raise
        got = data.get("claim")
        return None if got is None else Claim(self, got, claimed_at=sent)

    def find_next(self, job: str, executor: Optional[str] = None) -> Optional[Claim]:
        """Claims the next chunk ``job`` may produce; ``None`` when there is none now.

        Never retried (see the class): raises :class:`chunklock.Unavailable` when the
        server cannot be reached or the answer was lost.
        """
        return self._claim_op("findNext", {"job": job, "executor": executor or self.executor})

    def claim(self, job: str, dataid: str, executor: Optional[str] = None) -> Claim:
        """Claims one given dataid: :class:`chunklock.Locked` (with ``blockers``) when it cannot be now."""
        c = self._claim_op("claim", {"job": job, "dataid": dataid, "executor": executor or self.executor})
        assert c is not None
        return c

    def force(self, job: str, dataid: str, executor: Optional[str] = None) -> Claim:
        """An operator's override: claims a dataid whatever its inputs, superseding a live claim."""
        c = self._claim_op("force", {"job": job, "dataid": dataid, "executor": executor or self.executor})
        assert c is not None
        return c

    def claim_next(self, job: str, max: int, executor: Optional[str] = None) -> List[Claim]:
        """Claims up to ``max`` chunks of ``job`` in one request, in ``find_next``'s order.

        The claims are those as many ``find_next`` calls in a row would make, the job's
        ``maxConcurrent`` and pool slots counted over the batch; fewer (or none) when no
        more are claimable now. ``max`` is 1 to 1000. Never retried (see the class):
        raises :class:`chunklock.Unavailable` when the server cannot be reached or the
        answer was lost.
        """
        q = ("mutation($job: String!, $executor: String!, $max: Int!) "
             f"{{ claims: claimNext(job: $job, executor: $executor, max: $max) {{ {CLAIM_FIELDS} }} }}")
        sent = time.monotonic()
        try:
            data = self._call(q, {"job": job, "executor": executor or self.executor, "max": max}, "claimNext", retry=False)
        except Error as e:
            got = [c for c in (e.data or {}).get("claims") or [] if c and c.get("token")]
            if got:
                # Claimed, but part of the answer failed (a job key that is not the
                # job's): give the claims back rather than leave them to expire.
                for c in got:
                    self.release(c["token"])
                e.message += f" (the {len(got)} claims made were released)"
                e.args = (e.message,)
            raise
        return [Claim(self, c, claimed_at=sent) for c in data["claims"]]

    def _many(self, op: str, arg: str, kind: str, values: List[Any]) -> List[TokenResult]:
        q = f"mutation($v: {kind}) {{ r: {op}({arg}: $v) {{ {_TOKEN_RESULT} }} }}"
        data = self._call(q, {"v": values}, op, retry=True)
        return [TokenResult.from_json(r) for r in data["r"]]

    def complete_many(self, tokens: Iterable[str]) -> List[TokenResult]:
        """Completes each claim, each token on its own: one :class:`TokenResult` per token, in order.

        A stale token fails alone (``code`` ``STALE_CLAIM``); retried as a whole while
        the server cannot be reached, as repeating it is safe.
        """
        return self._many("completeMany", "tokens", "[String!]!", list(tokens))

    def fail_many(self, items: Iterable[Union[Tuple[str, str], Mapping[str, str]]]) -> List[TokenResult]:
        """Fails each claim with its reason: items are ``(token, reason)`` pairs or ``{"token", "reason"}``.

        One :class:`TokenResult` per item, in order; retried as ``complete_many`` is.
        """
        values = []
        for it in items:
            if isinstance(it, tuple):
                values.append({"token": it[0], "reason": it[1]})
            else:
                values.append({"token": it["token"], "reason": it.get("reason", "")})
        return self._many("failMany", "items", "[FailItem!]!", values)

    def heartbeat_many(self, tokens: Iterable[str]) -> List[TokenResult]:
        """Extends each live claim's lease: one :class:`TokenResult` per token, with ``lease_expires_at``.

        A claim no longer live answers ``STALE_CLAIM`` alone: stop working on it.
        """
        return self._many("heartbeatMany", "tokens", "[String!]!", list(tokens))

    def _heartbeat_once(self, token: str, timeout: Optional[float] = None) -> datetime:
        """One heartbeat, not retried (the heartbeat thread retries by itself, within the lease)."""
        data = self._call(_HEARTBEAT, {"t": token}, "heartbeat", retry=False, idempotent=True, timeout=timeout)
        return parse_time(data["heartbeat"]["leaseExpiresAt"])

    def heartbeat(self, token: str) -> datetime:
        """Extends a claim's lease and returns its new end (:class:`chunklock.StaleClaim` once not live)."""
        data = self._call(_HEARTBEAT, {"t": token}, "heartbeat", retry=True)
        return parse_time(data["heartbeat"]["leaseExpiresAt"])

    def complete(self, token: str) -> None:
        """Ends a claim successfully (OUTPUT READY, INPUT DONE); retried, as repeating it is safe."""
        self._call("mutation($t: String!) { complete(token: $t) }", {"t": token}, "complete", retry=True)

    def fail(self, token: str, reason: str = "") -> None:
        """Ends a claim in failure with reason (the chunk is retried); retried, as repeating it is safe."""
        self._call("mutation($t: String!, $r: String) { fail(token: $t, reason: $r) }", {"t": token, "r": reason}, "fail",
                   retry=True)

    def release(self, token: str) -> None:
        """Gives a claim back without counting an attempt; retried, as repeating it is safe.

        :class:`chunklock.StaleClaim` when the claim was not live. A release whose
        answer was lost and that is sent again may be answered ``STALE_CLAIM`` (the
        first one released it, and left no trace when the chunk had no row before the
        claim): that answer, after a lost one, is taken as done.
        """
        sent: List[float] = []
        try:
            self._call("mutation($t: String!) { release(token: $t) }", {"t": token}, "release", retry=True, sent=sent)
        except StaleClaim:
            if len(sent) < 2:
                raise

    def claims(self, job: Optional[str] = None) -> List[Claim]:
        """The live claims of job (of every job when None). ``token`` is empty unless the caller may see it."""
        fields = "token job dataid attempt executor fence leaseExpiresAt output { dataset dataid url connection location " \
                 "dimensions { name value } } inputs { dataset dataid url connection location dimensions { name value } } " \
                 "env { name value }"
        data = self._call(f"query($job: String) {{ claims(job: $job) {{ {fields} }} }}", {"job": job}, "claims", retry=True)
        return [Claim(self, dict(c, token=c.get("token") or "")) for c in data["claims"]]

    def work(
        self,
        job: Union[str, Sequence[str]],
        *,
        executor: Optional[str] = None,
        idle_wait: float = 0.0,
        poll_interval: float = 2.0,
        max_claims: Optional[int] = None,
        handle_signals: bool = True,
        raise_errors: bool = False,
    ) -> Worker:
        """A worker loop: ``for claim in client.work("transform"): with claim: ...``.

        See :class:`chunklock.Worker` for the arguments.
        """
        from ._worker import Worker

        jobs = [job] if isinstance(job, str) else list(job)
        return Worker(self, jobs, executor=executor or self.executor, idle_wait=idle_wait, poll_interval=poll_interval,
                      max_claims=max_claims, handle_signals=handle_signals, raise_errors=raise_errors)

    # Chunks.

    def publish(self, dataset: str, dataid: str) -> StatusRow:
        """Marks a chunk of a source dataset READY (publishing it again changes nothing)."""
        data = self._call(f"mutation($ds: String!, $d: String!) {{ publish(dataset: $ds, dataid: $d) {{ {ROW_FIELDS} }} }}",
                          {"ds": dataset, "d": dataid}, "publish", retry=True)
        return StatusRow.from_json(data["publish"])

    def publish_range(self, dataset: str, from_: str, to: str, *,
                      slice: Optional[Mapping[str, Sequence[str]]] = None) -> RangeResult:
        """Publishes every expected dataid of a source dataset in [from_, to] (at most 10,000).

        ``slice`` (``{"region": ["eu"]}``) keeps, of a dataset with dimensions, the
        dataids whose values of those dimensions are listed; so for the other ranges.
        """
        q = ("mutation($ds: String!, $f: String!, $t: String!, $s: [DimensionSliceInput!]) "
             f"{{ publishRange(dataset: $ds, from: $f, to: $t, slice: $s) {{ {RANGE_FIELDS} }} }}")
        data = self._call(q, {"ds": dataset, "f": from_, "t": to, "s": _slice_input(slice)}, "publishRange", retry=True)
        return RangeResult.from_json(data["publishRange"])

    def resubmit(self, dataset: str, dataid: str, cascade: bool = False) -> List[StatusRow]:
        """Asks for a chunk (with cascade: everything computed from it) to be produced again.

        Returns the OUTPUT rows it changed. Not retried on its own.
        """
        q = f"mutation($ds: String!, $d: String!, $c: Boolean) {{ resubmit(dataset: $ds, dataid: $d, cascade: $c) {{ {ROW_FIELDS} }} }}"
        data = self._call(q, {"ds": dataset, "d": dataid, "c": cascade}, "resubmit", retry=False)
        return [StatusRow.from_json(r) for r in data["resubmit"]]

    def resubmit_range(self, dataset: str, from_: str, to: str, cascade: bool = False, *,
                       slice: Optional[Mapping[str, Sequence[str]]] = None) -> RangeResult:
        """Resubmits every chunk in [from_, to] (of ``slice``, as publish_range)."""
        q = ("mutation($ds: String!, $f: String!, $t: String!, $c: Boolean, $s: [DimensionSliceInput!]) "
             f"{{ resubmitRange(dataset: $ds, from: $f, to: $t, cascade: $c, slice: $s) {{ {RANGE_FIELDS} }} }}")
        data = self._call(q, {"ds": dataset, "f": from_, "t": to, "c": cascade, "s": _slice_input(slice)},
                          "resubmitRange", retry=False)
        return RangeResult.from_json(data["resubmitRange"])

    def hold(self, dataset: str, dataid: str, reason: str = "") -> StatusRow:
        """Freezes a chunk (OUTPUT HOLD) until it is resubmitted."""
        q = f"mutation($ds: String!, $d: String!, $r: String) {{ hold(dataset: $ds, dataid: $d, reason: $r) {{ {ROW_FIELDS} }} }}"
        data = self._call(q, {"ds": dataset, "d": dataid, "r": reason}, "hold", retry=False)
        return StatusRow.from_json(data["hold"])

    def hold_range(self, dataset: str, from_: str, to: str, reason: str = "", *,
                   slice: Optional[Mapping[str, Sequence[str]]] = None) -> RangeResult:
        """Holds every chunk in [from_, to] (of ``slice``, as publish_range)."""
        q = ("mutation($ds: String!, $f: String!, $t: String!, $r: String, $s: [DimensionSliceInput!]) "
             f"{{ holdRange(dataset: $ds, from: $f, to: $t, reason: $r, slice: $s) {{ {RANGE_FIELDS} }} }}")
        data = self._call(q, {"ds": dataset, "f": from_, "t": to, "r": reason, "s": _slice_input(slice)},
                          "holdRange", retry=False)
        return RangeResult.from_json(data["holdRange"])

    def add_partitions(self, dataset: str, dataids: Sequence[str], dimension: Optional[str] = None,
                       from_: Optional[str] = None) -> RangeResult:
        """Adds values to the set of a dataset with DYNAMIC partitions, or to its DYNAMIC
        dimension ``dimension`` (at most 10,000 a call).

        A value already in the set is skipped (``ALREADY_EXISTS``), so a sensor may add
        what it sees as often as it likes; the job without inputs producing the
        dataset claims each added value once. Beside a time dimension a value is
        expected from the window of now, or of ``from_`` (a dataid of the time
        dimension: a backfill). Retried on its own (adding twice adds once).
        """
        q = (f"mutation($ds: String!, $ids: [String!]!, $dim: String, $from: String) "
             f"{{ addPartitions(dataset: $ds, dataids: $ids, dimension: $dim, from: $from) {{ {RANGE_FIELDS} }} }}")
        data = self._call(q, {"ds": dataset, "ids": list(dataids), "dim": dimension, "from": from_}, "addPartitions",
                          retry=True)
        return RangeResult.from_json(data["addPartitions"])

    def remove_partitions(self, dataset: str, dataids: Sequence[str], dimension: Optional[str] = None) -> RangeResult:
        """Removes values from a DYNAMIC set (at most 10,000 a call); their chunks stay.

        A value not in the set is skipped (``NOT_FOUND``). Retried on its own.
        """
        q = (f"mutation($ds: String!, $ids: [String!]!, $dim: String) "
             f"{{ removePartitions(dataset: $ds, dataids: $ids, dimension: $dim) {{ {RANGE_FIELDS} }} }}")
        data = self._call(q, {"ds": dataset, "ids": list(dataids), "dim": dimension}, "removePartitions", retry=True)
        return RangeResult.from_json(data["removePartitions"])

    def chunk(self, dataset: str, dataid: str) -> ChunkDetail:
        """One chunk: its OUTPUT status (``NONE`` when never produced), every row on it, its locks."""
        q = (f"query($ds: String!, $d: String!) {{ chunk(dataset: $ds, dataid: $d) {{ dataset dataid location status "
             f"output {{ {ROW_FIELDS} }} rows {{ {ROW_FIELDS} }} locks {{ dataset dataid kind job status readFor }} }} }}")
        data = self._call(q, {"ds": dataset, "d": dataid}, "chunk", retry=True)
        return ChunkDetail.from_json(data["chunk"])

    def chunks(
        self,
        dataset: Optional[str] = None,
        job: Optional[str] = None,
        *,
        role: Optional[str] = None,
        status: Optional[str] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> List[StatusRow]:
        """The status rows matching the filters (every page, or the first ``limit`` rows)."""
        variables = {"dataset": dataset, "job": job, "role": role, "status": status, "from": from_, "to": to}
        q = (f"query($dataset: String, $job: String, $role: Role, $status: Status, $from: String, $to: String, $first: Int, "
             f"$after: String) {{ page: chunks(dataset: $dataset, job: $job, role: $role, status: $status, from: $from, "
             f"to: $to, first: $first, after: $after) {{ edges {{ node {{ {ROW_FIELDS} }} }} pageInfo {{ hasNextPage endCursor }} }} }}")
        return [StatusRow.from_json(n) for n in self._pages(q, variables, "chunks", limit)]
