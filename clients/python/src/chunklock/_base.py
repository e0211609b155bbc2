"""The connection, the defaults, and the one call every operation goes through."""

from __future__ import annotations

import os
import re
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Type

from ._discovery import default_executor, graphql_endpoint, resolve_url
from ._errors import Error
from ._transport import Transport, retrying
from ._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

# How long a job's leaseSeconds, read for the heartbeat interval, is kept.
_LEASE_CACHE_SECONDS = 300.0

_OPERATION = re.compile(r"^\s*(?:#[^\n]*\n\s*)*(query|mutation|subscription|\{)")


def _is_query(document: str) -> bool:
    m = _OPERATION.match(document)
    return m is not None and m.group(1) in ("query", "{")


class _Base:
    """The connection, the defaults, and the one call every operation goes through."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        job_key: Optional[str] = None,
        *,
        executor: Optional[str] = None,
        timeout: float = 60.0,
        retry_for: float = 300.0,
    ) -> None:
        self.url = resolve_url(url)
        token = token if token is not None else os.environ.get("CHUNKLOCK_TOKEN")
        job_key = job_key if job_key is not None else os.environ.get("CHUNKLOCK_JOB_KEY")
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"chunklock-python/{__version__}",
        }
        if token:
            headers["Authorization"] = "Bearer " + token
        if job_key:
            # The job key travels in this header only, never in a document or its variables.
            headers["X-Chunklock-Job-Key"] = job_key.strip()
        self._token = token or None
        self._headers = headers
        self._timeout = timeout
        self._transport = Transport(graphql_endpoint(self.url), headers, timeout)
        self.executor = executor or default_executor()
        self.retry_for = retry_for
        self._leases: Dict[str, Tuple[float, float]] = {}  # job -> (lease seconds, read at)
        self._leases_mu = threading.Lock()

    @property
    def endpoint(self) -> str:
        """The GraphQL endpoint requests go to."""
        return self._transport.endpoint

    def close(self) -> None:
        """Closes the kept-alive connections (the client opens new ones if used again)."""
        self._transport.close()

    def __enter__(self) -> Client:
        return self  # type: ignore[return-value]

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    def _call(
        self,
        query: str,
        variables: Optional[Mapping[str, Any]],
        what: str,
        *,
        retry: bool,
        idempotent: Optional[bool] = None,
        timeout: Optional[float] = None,
        sent: Optional[List[float]] = None,
    ) -> Dict[str, Any]:
        """One operation; retried with backoff while the server cannot be reached if retry.

        idempotent (default: retry) lets the transport send a request again at once
        when a kept-alive connection turns out closed. Each request sent appends its
        time to sent, when given.
        """
        safe = retry if idempotent is None else idempotent

        def once() -> Dict[str, Any]:
            return self._transport.graphql(query, variables, what=what, idempotent=safe, timeout=timeout, sent=sent)

        if not retry:
            return once()
        return retrying(once, self.retry_for)

    def _pages(self, query: str, variables: Dict[str, Any], what: str, limit: Optional[int],
               after: Optional[str] = None) -> List[Dict[str, Any]]:
        """Reads the nodes of a Relay connection aliased ``page``, page after page."""
        nodes: List[Dict[str, Any]] = []
        while True:
            first = 1000 if limit is None else max(1, min(1000, limit - len(nodes)))
            data = self._call(query, dict(variables, first=first, after=after), what, retry=True)
            page = data["page"]
            for e in page["edges"]:
                nodes.append(e["node"])
                if limit is not None and len(nodes) >= limit:
                    return nodes
            info = page["pageInfo"]
            if not info["hasNextPage"]:
                return nodes
            after = info["endCursor"]

    def execute(
        self, document: str, variables: Optional[Mapping[str, Any]] = None, *, idempotent: Optional[bool] = None
    ) -> Dict[str, Any]:
        """Runs any GraphQL document and returns the answer's ``data``.

        The first GraphQL error is raised as the exception of its code (with whatever
        did resolve in its ``data``). A query is retried while the server cannot be
        reached, a mutation is not, unless ``idempotent`` says otherwise. Never put the
        job key in the document: give it as ``job_key``.
        """
        retry = _is_query(document) if idempotent is None else idempotent
        return self._call(document, variables, "execute", retry=retry)

    def _lease_seconds(self, job: str) -> Optional[float]:
        """The job's leaseSeconds (cached for a few minutes); None if it cannot be read."""
        now = time.monotonic()
        with self._leases_mu:
            hit = self._leases.get(job)
        if hit is not None and now - hit[1] < _LEASE_CACHE_SECONDS:
            return hit[0]
        try:
            data = self._call("query($id: String!) { job(id: $id) { leaseSeconds } }", {"id": job}, "reading the job's lease",
                              retry=False, idempotent=True, timeout=10.0)
        except Error:
            return None
        j = data.get("job")
        if not j:
            return None
        lease = float(j["leaseSeconds"])
        with self._leases_mu:
            self._leases[job] = (lease, now)
        return lease
