"""What ``punctual.client`` raises: ``PunctualError`` and its kinds, an ``ApiError`` by what its
status means (``api_error`` picks it). ``punctual.client`` exports every one."""

from __future__ import annotations

from typing import Any


class PunctualError(Exception):
    """Whatever this module raises: an API error, no connection, a bad configuration."""


class ApiError(PunctualError):
    """The API answered with an error (4xx/5xx); ``reason`` and ``field`` come from its JSON body.

    Raised as the subclass that says what the status means (``NotFound``, ``Conflict``,
    ``InvalidRequest``, ``Unauthorized``, ``Throttled``, ``ServerError``; ``api_error`` picks it), so
    ``except ApiError`` still catches every one."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body if isinstance(body, dict) else {"reason": body}
        reason = self.body.get("reason") or self.body.get("message")
        # One line, whatever answered (a proxy's HTML page, an empty 503).
        text = " ".join(str(reason).split())[:200] if reason else ""
        self.reason = text or f"HTTP {status}"
        self.field = self.body.get("field")
        super().__init__(f"{self.field}: {self.reason}" if self.field else self.reason)


class InvalidRequest(ApiError):
    """400, 413, 415 or 422: the request itself is wrong (``field`` names what); sending it again as it
    is will be refused again."""


class Unauthorized(ApiError):
    """401 or 403: no valid credentials, or API Gateway refused the signature or the API key."""


class NotFound(ApiError):
    """404: no such job or run, or it is another owner's (``field``: ``job_id``, ``run_id``)."""


class Conflict(ApiError):
    """409: a live job has that name, the Idempotency-Key was used for another body, the job's status
    does not allow it, or it changed concurrently (``field`` says which)."""


class Throttled(ApiError):
    """429: the request's rate was refused, not its content; retry after ``retry_after`` seconds (the
    ``Retry-After`` header, when sent) with the same Idempotency-Key."""

    def __init__(self, status: int, body: Any, retry_after: float | None = None) -> None:
        super().__init__(status, body)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the API (or API Gateway in front of it) failed; the request may be retried."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: InvalidRequest,
    415: InvalidRequest,
    422: InvalidRequest,
}


def api_error(status: int, body: Any, retry_after: str | None = None) -> ApiError:
    """The ``ApiError`` subclass for ``status`` (plain ``ApiError`` for a status none names)."""
    if status == 429:
        try:
            seconds = float(retry_after) if retry_after else None
        except ValueError:
            seconds = None  # an HTTP date: rare from API Gateway, and a retry will say again
        return Throttled(status, body, seconds)
    if status >= 500:
        return ServerError(status, body)
    return _BY_STATUS.get(status, ApiError)(status, body)


class ConfigError(PunctualError):
    pass


class ConnectionFailed(PunctualError):
    pass
