"""The one exception type handlers raise; codes come from specs/errors.yaml.

Generated subclasses (generated/errors.py) fix `code` per catalogue entry, so a
handler writes `raise NotFoundError("no such chart")`. The transports map a
ToolError to the catalogued status and body in one place each.

`ErrorCode` is the type of a code: under mypy the Literal of every code of the project's
catalogue (generated/error_codes.py), so `code="RATE_LIMTED"` fails the type check; at run time
a plain `str` (the runtime never imports the generated package; kumitate.project loads it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # the project's catalogue as a Literal type; never imported at run time
    from generated.error_codes import ErrorCode
else:
    ErrorCode = str


__all__ = ["STATUS_CODES", "ErrorCode", "ToolError"]

STATUS_CODES: dict[int, ErrorCode] = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    408: "REQUEST_TIMEOUT",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "VALIDATION_ERROR",
    429: "RATE_LIMITED",
    431: "HEADERS_TOO_LARGE",
    503: "SERVICE_UNAVAILABLE",
}
"""The catalogue code of an HTTP status that came without one: an answer a library gave on its own
(kumitate.transports.edge.errors) or a proxy's page a client received (kumitate.client). Each side picks its
own code for a status not listed here."""


class ToolError(Exception):
    """A catalogued failure: `code` names an entry of specs/errors.yaml."""

    code: ClassVar[ErrorCode] = "INTERNAL"
    # What a client (kumitate/client.py) read from the server's answer; unset where a handler raises it.
    status: int | None = None
    retryable: bool | None = None
    retry_after_s: float | None = None
    run_id: str | None = None
    trace_id: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]
        self.details = details or {}
        self.headers = headers or {}
        """Response headers the refusal needs on HTTP (e.g. WWW-Authenticate); the body never shows them."""
