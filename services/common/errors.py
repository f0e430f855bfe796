"""One error hierarchy for the whole service. The API maps each class to an HTTP status."""

from __future__ import annotations


class OpsloreError(Exception):
    """Root of every error raised on purpose by opslore."""

    status = 500
    code = "internal"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(OpsloreError):
    status = 422
    code = "invalid"


class Unauthenticated(OpsloreError):
    status = 401
    code = "unauthenticated"


class Forbidden(OpsloreError):
    status = 403
    code = "forbidden"


class NotFound(OpsloreError):
    status = 404
    code = "not_found"


class Conflict(OpsloreError):
    """An optimistic check failed or the target changed state: re-read and retry."""

    status = 409
    code = "conflict"


class Unavailable(OpsloreError):
    """A dependency (Kafka, PostgreSQL) did not answer; nothing was written."""

    status = 503
    code = "unavailable"


class TooLarge(OpsloreError):
    """The request or one of its parts exceeds a size limit; nothing was written. Retrying cannot help."""

    status = 413
    code = "too_large"
