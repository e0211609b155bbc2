"""Errors: one exception class per code of the server's ``extensions.code``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

if TYPE_CHECKING:  # pragma: no cover
    from ._types import Blocker, ResourceLock


class Error(Exception):
    """An error the server answered, ``UNAVAILABLE`` when it could not be reached, or a
    :class:`ConfigurationError` (``code`` ``""``) when the client cannot start as configured.

    ``code`` is the GraphQL error's ``extensions.code`` (``NOT_FOUND``, ``LOCKED``,
    ``STALE_CLAIM``, ...); each code has a subclass (:class:`StaleClaim`,
    :class:`Locked`, ...), so ``except chunklock.StaleClaim`` catches one code and
    ``except chunklock.Error`` every one. ``message`` is the server's message,
    ``path`` the GraphQL path of the field that failed, and ``data`` whatever part of
    the answer did resolve (``None`` when nothing did).
    """

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        path: Optional[Sequence[Any]] = None,
        data: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.path: List[Any] = list(path or [])
        self.data = data

    def __str__(self) -> str:
        if not self.code:
            return self.message
        return f"{self.code}: {self.message}"


class NotFound(Error):
    """``NOT_FOUND``: the dataset, job, pool or lock named does not exist."""

    code = "NOT_FOUND"


class AlreadyExists(Error):
    """``ALREADY_EXISTS``: say, a second producer for a dataset."""

    code = "ALREADY_EXISTS"


class InvalidArgument(Error):
    """``INVALID_ARGUMENT``: the request itself is wrong (a bad dataid, a bad document, a limit)."""

    code = "INVALID_ARGUMENT"


class Locked(Error):
    """``LOCKED``: a chunk cannot be claimed now, or a resource lock is held.

    ``blockers`` lists why a claim was refused (each a :class:`chunklock.Blocker`),
    ``holders`` the resource locks that refused a ``lock_resource`` (each a
    :class:`chunklock.ResourceLock`).
    """

    code = "LOCKED"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        path: Optional[Sequence[Any]] = None,
        data: Optional[Dict[str, Any]] = None,
        blockers: Optional[List[Blocker]] = None,
        holders: Optional[List[ResourceLock]] = None,
    ) -> None:
        super().__init__(message, code=code, path=path, data=data)
        self.blockers: List[Blocker] = list(blockers or [])
        self.holders: List[ResourceLock] = list(holders or [])


class StaleClaim(Error):
    """``STALE_CLAIM``: the claim is no longer live (expired, superseded, ended).

    The job must stop at once and write nothing more: its chunk may belong to another
    executor by now.
    """

    code = "STALE_CLAIM"


class Unauthenticated(Error):
    """``UNAUTHENTICATED``: no token, or a token the server does not know (``CHUNKLOCK_TOKEN``)."""

    code = "UNAUTHENTICATED"


class Forbidden(Error):
    """``FORBIDDEN``: the token's role may not do this, or the job key is not the claim's job's."""

    code = "FORBIDDEN"


class Unavailable(Error):
    """``UNAVAILABLE``: the server, its store or its key service could not be reached; retry.

    Raised too when the connection failed or the answer was lost on the way. The
    client retries idempotent calls (reads, heartbeats, endings) by itself before
    raising this; calls that claim are never retried (a claim whose answer was lost
    may be live, and is failed by the reaper once its lease passes).
    """

    code = "UNAVAILABLE"


class Internal(Error):
    """``INTERNAL``: the server failed; its log has the details (look for the ``ref``)."""

    code = "INTERNAL"


class InvalidResponse(Error):
    """The URL answered something that is not a chunklock GraphQL answer (is it the server?)."""

    code = "INVALID_RESPONSE"


class ConfigurationError(Error):
    """The client cannot start as configured; no request was sent, and ``code`` is ``""``.

    Raised by :class:`chunklock.Client` when no ``url`` (nor ``CHUNKLOCK_URL``) is given
    and the server cannot be found safely, as the chunklock commands refuse it: a
    ``./chunklock-data/serve.url`` that another user could have written, or a default
    ``http://127.0.0.1:8080`` that is not served by this user's own process. The message
    names the check that failed and the fix.
    """


_CLASSES: Tuple[Type[Error], ...] = (
    NotFound,
    AlreadyExists,
    InvalidArgument,
    Locked,
    StaleClaim,
    Unauthenticated,
    Forbidden,
    Unavailable,
    Internal,
)
_BY_CODE: Dict[str, Type[Error]] = {cls.code: cls for cls in _CLASSES}


def error_from_wire(err: Mapping[str, Any], data: Optional[Dict[str, Any]]) -> Error:
    """Turns one entry of a GraphQL answer's ``errors`` into the exception of its code."""
    from ._types import Blocker, ResourceLock

    message = str(err.get("message") or "error without a message")
    ext = err.get("extensions") or {}
    code = str(ext.get("code") or "")
    path = err.get("path") or []
    cls = _BY_CODE.get(code, Error)
    if cls is Locked:
        blockers = [Blocker.from_json(b) for b in ext.get("blockers") or []]
        holders = [ResourceLock.from_json(h) for h in ext.get("holders") or []]
        return Locked(message, path=path, data=data, blockers=blockers, holders=holders)
    if cls is Error:
        return Error(message, code=code, path=path, data=data)
    return cls(message, path=path, data=data)
