"""The worker loop: claims chunks of one or more jobs, one at a time, until told to stop."""

from __future__ import annotations

import logging
import signal
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, List, Optional, Union

from ._claim import Claim
from ._errors import Error, Unavailable
from ._transport import Backoff

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

log = logging.getLogger("chunklock")

_Handler = Union[Callable[[int, Optional[FrameType]], Any], int, None]


class Worker:
    """Iterates over claims of its jobs: ``for claim in client.work(job): with claim: ...``.

    Made by :meth:`chunklock.Client.work`. Each step claims the next chunk of the jobs,
    tried in turn from where the last claim left off (``find_next``). When nothing is
    claimable the loop ends, or, with ``idle_wait`` (seconds), asks again every
    ``poll_interval`` seconds until it has been idle that long. ``max_claims`` ends it
    after that many claims. A server that cannot be reached is asked again with backoff
    for up to the client's ``retry_for`` (a claim whose answer was lost is failed by
    the server once its lease passes; the loop claims another).

    Inside the loop, an exception of a ``with claim:`` block fails the claim and is
    logged (logger ``chunklock``), and the loop goes on; with ``raise_errors=True`` it
    propagates and ends the loop. ``KeyboardInterrupt`` releases the claim and ends the
    loop.

    Stopping: :meth:`stop` (from any thread), or, with ``handle_signals`` (the default)
    in the main thread, SIGTERM: the loop claims nothing more, the block under way runs
    to its end, and a claim handed out but not started (its ``with`` not entered) is
    released. A second SIGTERM raises ``SystemExit(143)`` in the block under way, which
    releases its claim. The previous handler comes back when the loop ends.
    """

    def __init__(
        self,
        client: Client,
        jobs: List[str],
        *,
        executor: str,
        idle_wait: float,
        poll_interval: float,
        max_claims: Optional[int],
        handle_signals: bool,
        raise_errors: bool,
    ) -> None:
        if not jobs:
            raise ValueError("chunklock: work() needs at least one job")
        self._client = client
        self.jobs = jobs
        self.executor = executor
        self._idle_wait = idle_wait
        self._poll = max(poll_interval, 0.01)
        self._max = max_claims
        self._handle_signals = handle_signals
        self._raise_errors = raise_errors
        self._stop = threading.Event()
        self._next_job = 0
        self._current: Optional[Claim] = None
        self._previous: Dict[int, _Handler] = {}
        self._signals_installed = False
        self._closed = False
        self.claimed = 0

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called or a stop signal came."""
        return self._stop.is_set()

    def stop(self) -> None:
        """Asks the loop to stop: it claims nothing more (safe from any thread or a signal handler)."""
        self._stop.set()

    def __iter__(self) -> Generator[Claim, None, None]:
        """The claims, one at a time; the loop is closed (see :meth:`close`) however it ends."""
        try:
            while True:
                claim = self._next()
                if claim is None:
                    return
                yield claim
        finally:
            self.close()

    def _next(self) -> Optional[Claim]:
        self._release_unstarted()
        if self._closed or self._stop.is_set() or (self._max is not None and self.claimed >= self._max):
            return None
        self._install_signals()
        claim = self._next_claim()
        if claim is None:
            return None
        self._current = claim
        if self._stop.is_set():  # stopped while claiming: given back unstarted by close()
            return None
        claim._swallow_errors = not self._raise_errors
        self.claimed += 1
        return claim

    def close(self) -> None:
        """Ends the loop: releases a claim handed out but not started, restores the signal handlers."""
        self._release_unstarted()
        self._restore_signals()
        self._closed = True

    def _release_unstarted(self) -> None:
        c, self._current = self._current, None
        if c is None or c._entered or c.ended is not None:
            return
        try:
            c.release()
            log.info("released %s %s: claimed but not started", c.job, c.dataid)
        except Error as e:
            log.warning("releasing the unstarted claim on %s %s failed: %s", c.job, c.dataid, e)

    def _next_claim(self) -> Optional[Claim]:
        """The next claim; None once idle for idle_wait (or at once without it) or stopped."""
        idle_since = time.monotonic()
        while not self._stop.is_set():
            claim = self._claim_any()
            if claim is not None or self._stop.is_set():
                return claim
            if time.monotonic() - idle_since >= self._idle_wait:
                return None
            self._stop.wait(min(self._poll, max(self._idle_wait - (time.monotonic() - idle_since), 0.01)))
        return None

    def _claim_any(self) -> Optional[Claim]:
        """A claim of one of the jobs, tried in turn; server outages are retried with backoff."""
        backoff = Backoff()
        first_failure: Optional[float] = None
        while True:
            try:
                for i in range(len(self.jobs)):
                    job = self.jobs[(self._next_job + i) % len(self.jobs)]
                    claim = self._client.find_next(job, self.executor)
                    if claim is not None:
                        self._next_job = (self._next_job + i + 1) % len(self.jobs)
                        return claim
                return None
            except Unavailable as e:
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                if now - first_failure >= self._client.retry_for:
                    raise
                wait = backoff.next()
                log.warning("claiming: %s; retrying in %.1fs", e, wait)
                if self._stop.wait(wait):
                    return None

    # Signals.

    def _install_signals(self) -> None:
        if self._signals_installed or not self._handle_signals:
            return
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_signal)
        self._signals_installed = True

    def _restore_signals(self) -> None:
        if not self._signals_installed:
            return
        for sig, h in self._previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)
        self._previous.clear()
        self._signals_installed = False

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        if not self._stop.is_set():
            log.warning("signal %d: stopping after the chunk under way (again to stop it now)", signum)
            self._stop.set()
            return
        raise SystemExit(128 + signum)
