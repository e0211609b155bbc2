"""A claim on one output chunk, and the heartbeats that keep it live."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Type

from ._errors import Error, StaleClaim, Unavailable
from ._transport import Backoff
from ._types import DatasetAccess, _env, parse_time

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

log = logging.getLogger("chunklock")

# The heartbeat interval as a fraction of the job's lease (as `chunklock run`).
HEARTBEAT_FRACTION = 1.0 / 3.0
# The shortest heartbeat interval and the longest wait between retries of a
# heartbeat that did not reach the server.
_MIN_INTERVAL = 0.1
_MAX_RETRY_WAIT = 2.0


def _unconfirmed(e: Error) -> str:
    return f"the lease passed without a heartbeat the server confirmed (last error: {e})"


class Claim:
    """One executor's right to produce one output chunk, as a claim call answered it.

    Attributes: ``token`` (pass it to ``heartbeat``, ``complete``, ``fail``,
    ``release``; the methods of the claim do), ``fence`` (the fencing number: it grows
    with every claim on the output chunk, so an output that records it can refuse
    writes of an older claim), ``job``, ``dataid``, ``attempt``, ``executor``,
    ``lease_expires_at``, ``output`` and ``inputs`` (each a
    :class:`chunklock.DatasetAccess`), ``env`` (the job's environment, a dict).

    Used as a context manager, the claim is heartbeaten from a background thread while
    the block runs (every third of the job's lease). When the block ends normally the
    claim is completed; when it raises an exception the claim is failed with the
    exception's text (and the exception goes on); on ``KeyboardInterrupt``,
    ``SystemExit`` and any other ``BaseException`` that is not an ``Exception`` the
    claim is released (no attempt counted). Once a heartbeat is answered
    ``STALE_CLAIM`` the claim is :attr:`lost`: the callbacks given to :meth:`on_lost`
    run, :meth:`check` raises :class:`StaleClaim`, and the block's end never completes
    it (it raises :class:`StaleClaim` instead, if nothing else was raised).
    """

    def __init__(self, client: Client, data: Mapping[str, Any], claimed_at: Optional[float] = None) -> None:
        self._client = client
        self.token: str = data["token"]
        self.fence: int = int(data.get("fence", 0))
        self.job: str = data["job"]
        self.dataid: str = data["dataid"]
        self.attempt: int = int(data.get("attempt", 0))
        self.executor: str = data.get("executor", "")
        self.lease_expires_at: datetime = parse_time(data["leaseExpiresAt"])
        self.output: DatasetAccess = DatasetAccess.from_json(data["output"])
        self.inputs: List[DatasetAccess] = [DatasetAccess.from_json(a) for a in data.get("inputs") or []]
        self.env: Dict[str, str] = _env(data.get("env"))
        # The local (monotonic) time by which the lease surely ends unless extended:
        # the lease is counted from a moment after the request was sent.
        self._sent = time.monotonic() if claimed_at is None else claimed_at
        self._lease_end: Optional[float] = None
        self._mu = threading.Lock()
        self._lost_reason: Optional[str] = None
        self._callbacks: List[Callable[[Claim], None]] = []
        self._ended: Optional[str] = None  # "completed", "failed", "released"
        self._entered = False
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        # Set by Client.work: an exception of the block is logged, not raised.
        self._swallow_errors = False
        self.error: Optional[BaseException] = None

    def __repr__(self) -> str:
        state = "lost" if self.lost else (self._ended or "live")
        return f"<chunklock.Claim {self.job} {self.dataid} attempt {self.attempt} fence {self.fence} {state}>"

    # The inputs by dataset.

    def inputs_of(self, dataset: str) -> List[DatasetAccess]:
        """Every chunk the claim reads of an input dataset, in dataid order.

        Several for an input read through a mapping (a 7-day lookback), one otherwise.
        """
        return [a for a in self.inputs if a.dataset == dataset]

    def input(self, dataset: str) -> DatasetAccess:
        """The chunk the claim reads of an input dataset (the newest, for a mapped input)."""
        chunks = self.inputs_of(dataset)
        if not chunks:
            names = sorted({a.dataset for a in self.inputs})
            raise KeyError(f"the claim on {self.job} {self.dataid} reads no chunk of {dataset!r} (it reads {names})")
        return chunks[-1]

    # Lost claims.

    @property
    def lost(self) -> bool:
        """True once the claim is known not to be live any more.

        Set when a heartbeat was answered ``STALE_CLAIM`` (expired, superseded by a
        force, ended elsewhere), or when the lease passed without a heartbeat the
        server confirmed (it could not be reached).
        """
        return self._lost_reason is not None

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the claim was lost (``None`` while it is not)."""
        return self._lost_reason

    def on_lost(self, callback: Callable[[Claim], None]) -> None:
        """Registers callback(claim) to run once the claim is lost.

        It runs in the heartbeat thread (at once, here, if the claim is lost already):
        keep it short, e.g. set a flag or cancel a query.
        """
        with self._mu:
            if self._lost_reason is None:
                self._callbacks.append(callback)
                return
        self._run_callback(callback)

    def check(self) -> None:
        """Raises :class:`StaleClaim` if the claim is lost; long loops call it between steps."""
        reason = self._lost_reason
        if reason is not None:
            raise StaleClaim(f"the claim on {self.job} {self.dataid} is lost: {reason}; stop and write nothing more")

    def _mark_lost(self, reason: str) -> None:
        with self._mu:
            if self._lost_reason is not None:
                return
            self._lost_reason = reason
            callbacks, self._callbacks = self._callbacks, []
        log.warning("claim on %s %s lost: %s", self.job, self.dataid, reason)
        for cb in callbacks:
            self._run_callback(cb)

    def _run_callback(self, cb: Callable[[Claim], None]) -> None:
        try:
            cb(self)
        except Exception:  # a callback's failure must not stop the heartbeats' bookkeeping
            log.exception("on_lost callback of the claim on %s %s failed", self.job, self.dataid)

    # Operations on the claim: each asks the server.

    def heartbeat(self) -> datetime:
        """Extends the lease now and returns its new end.

        Raises :class:`StaleClaim` (and marks the claim lost) when the claim is no
        longer live, or when the server could not be reached before the lease ended:
        a job calls it before it moves a result into place, to be sure the chunk is
        still its own. Other failures to reach the server are retried until then.
        """
        backoff = Backoff()
        while True:
            sent = time.monotonic()
            try:
                until = self._client._heartbeat_once(self.token, timeout=max(self._lease_left(), 0.5))
            except StaleClaim as e:
                self._mark_lost(e.message)
                raise
            except Unavailable as e:
                left = self._lease_left()
                if left <= 0:
                    self._mark_lost(_unconfirmed(e))
                    raise StaleClaim(f"the claim on {self.job} {self.dataid} is lost: {_unconfirmed(e)}") from e
                time.sleep(min(backoff.next(), left))
                continue
            self._extended(until, sent)
            return until

    def _lease_left(self) -> float:
        """Seconds until the lease surely ends unless a heartbeat extends it."""
        with self._mu:
            end = self._lease_end
        if end is None:
            end = self._sent + self._lease_seconds()
            with self._mu:
                self._lease_end = end if self._lease_end is None else self._lease_end
        return end - time.monotonic()

    def _extended(self, until: datetime, sent: float) -> None:
        self.lease_expires_at = until
        lease = self._lease_seconds()
        with self._mu:
            self._lease_end = sent + lease

    def complete(self) -> None:
        """Ends the claim successfully: the output chunk becomes READY.

        Retried while the server cannot be reached (a repeat is answered as the first
        call was). :class:`StaleClaim` when the claim is no longer live: nothing
        changes then.
        """
        self._end("completed", lambda: self._client.complete(self.token))

    def fail(self, reason: str = "") -> None:
        """Ends the claim in failure (the chunk is retried, up to the job's maxAttempts)."""
        self._end("failed", lambda: self._client.fail(self.token, reason))

    def release(self) -> None:
        """Gives the claim back without counting an attempt (graceful shutdown)."""
        self._end("released", lambda: self._client.release(self.token))

    def _end(self, how: str, call: Callable[[], None]) -> None:
        self._stop_heartbeats()
        try:
            call()
        except StaleClaim as e:
            self._mark_lost(e.message)
            raise
        self._ended = how

    @property
    def ended(self) -> Optional[str]:
        """How this client ended the claim: ``"completed"``, ``"failed"``, ``"released"`` or ``None``."""
        return self._ended

    # Heartbeats.

    def _lease_seconds(self) -> float:
        lease = self._client._lease_seconds(self.job)
        if lease is None:  # the job could not be read: the lease as the claim gave it
            lease = (self.lease_expires_at - datetime.now(timezone.utc)).total_seconds()
        return max(lease, 0.0)

    def _start_heartbeats(self) -> None:
        self._lease_left()  # the lease's end, from the claim's own
        interval = max(self._lease_seconds() * HEARTBEAT_FRACTION, _MIN_INTERVAL)
        self._stop.clear()
        t = threading.Thread(target=self._beat, args=(interval,), name=f"chunklock-heartbeat-{self.job}-{self.dataid}", daemon=True)
        self._thread = t
        t.start()

    def _stop_heartbeats(self) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()
        self._thread = None

    def _beat(self, interval: float) -> None:
        wait = interval
        backoff = Backoff(first=min(0.2, interval / 2), most=min(_MAX_RETRY_WAIT, interval))
        while not self._stop.wait(wait):
            sent = time.monotonic()
            try:
                # An answer is worth waiting for as long as the lease lasts.
                until = self._client._heartbeat_once(self.token, timeout=max(self._lease_left(), 0.5))
            except StaleClaim as e:
                if not self._stop.is_set():  # not the claim's own ending racing its heartbeat
                    self._mark_lost(e.message)
                return
            except Error as e:
                if self._lease_left() <= 0:
                    self._mark_lost(_unconfirmed(e))
                    return
                log.warning("heartbeat of the claim on %s %s failed (retrying): %s", self.job, self.dataid, e)
                wait = backoff.next()
                continue
            self._extended(until, sent)
            backoff.n = 0
            wait = interval

    # The context manager.

    def __enter__(self) -> Claim:
        if self._ended is not None:
            raise RuntimeError(f"the claim on {self.job} {self.dataid} was {self._ended} already")
        self._entered = True
        self._start_heartbeats()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        self._stop_heartbeats()
        self.error = exc
        if self._ended is not None:  # the block ended it itself
            return self._swallow(exc)
        if exc is None:
            if self.lost:
                err = StaleClaim(f"the claim on {self.job} {self.dataid} was lost ({self._lost_reason}): not completed")
                self.error = err
                if self._swallow(err):
                    return False
                raise err
            try:
                self.complete()
            except Error as e:
                self.error = e
                if self._swallow(e):
                    return False
                raise
            return False
        if self.lost:
            return self._swallow(exc)
        if not isinstance(exc, Exception):
            self._quietly(self.release, "releasing")
            return False
        reason = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self._quietly(lambda: self.fail(reason), "failing")
        return self._swallow(exc)

    def _quietly(self, end: Callable[[], None], what: str) -> None:
        """Ends the claim while an exception is on its way: a failure to do so is logged."""
        try:
            end()
        except Error as e:
            if not isinstance(e, StaleClaim):
                log.error("%s the claim on %s %s failed: %s", what, self.job, self.dataid, e)

    def _swallow(self, exc: Optional[BaseException]) -> bool:
        if exc is None or not self._swallow_errors or not isinstance(exc, Exception):
            return False
        if isinstance(exc, Error):
            log.warning("%s %s: %s", self.job, self.dataid, exc)
        else:
            log.warning("%s %s failed: %s", self.job, self.dataid, exc, exc_info=exc)
        return True
