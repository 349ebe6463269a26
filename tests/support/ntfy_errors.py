"""ntfy's `errHTTP` catalogue (server/errors.go, v2.13): the codes a publisher or poller can meet.

Every error is answered as `{"code","http","error"[,"link"]}` + newline with Content-Type
application/json, and never with Retry-After or WWW-Authenticate.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from .ntfy_go import go_json

DOCS = "https://ntfy.sh/docs"


class NtfyError(Exception):
    """An `errHTTP`: the HTTP status, ntfy's code, its text and an optional docs link."""

    def __init__(self, status: int, code: int, error: str, link: str = "") -> None:
        super().__init__(f"{status} {code} {error}")
        self.status, self.code, self.error, self.link = status, code, error, link

    def wrap(self, reason: str) -> NtfyError:
        """`errHTTP.Wrap`: "<text>; <reason>", e.g. for invalid actions."""
        return NtfyError(self.status, self.code, f"{self.error}; {reason}", self.link)

    def body(self) -> bytes:
        doc: dict[str, Any] = {"code": self.code, "http": self.status, "error": self.error}
        if self.link:  # `json:"link,omitempty"`
            doc["link"] = self.link
        return go_json(doc)


# code: (HTTP status, text, docs path). ⚠ 40049 comes from a third-party re-implementation of 2.16.
_CATALOGUE: dict[int, tuple[int, str, str]] = {
    40000: (400, "invalid request", ""),
    40001: (400, "e-mail notifications are not enabled", "/config/#e-mail-notifications"),
    40002: (400, "cannot disable cache for delayed message", ""),
    40003: (400, "delayed e-mail notifications are not supported", ""),
    40004: (400, "invalid delay parameter: unable to parse delay", "/publish/#scheduled-delivery"),
    40005: (400, "invalid delay parameter: too small, please refer to the docs", "/publish/#scheduled-delivery"),
    40006: (400, "invalid delay parameter: too large, please refer to the docs", "/publish/#scheduled-delivery"),
    40007: (400, "invalid priority parameter", "/publish/#message-priority"),
    40008: (400, "invalid since parameter", "/subscribe/api/#fetch-cached-messages"),
    40009: (400, "invalid request: topic invalid", ""),
    40010: (400, "invalid request: topic name is not allowed", ""),
    40011: (400, "invalid request: message must be UTF-8 encoded", ""),
    40013: (400, "invalid request: attachment URL is invalid", "/publish/#attachments"),
    40014: (400, "invalid request: attachments not allowed", "/config/#attachments"),
    40016: (400, "invalid request: client not using the websocket protocol", "/subscribe/api/#websockets"),
    40017: (400, "invalid request: request body must be message JSON", "/publish/#publish-as-json"),
    40018: (400, "invalid request: actions invalid", "/publish/#action-buttons"),
    40021: (400, "invalid request: icon URL is invalid", "/publish/#icons"),
    40024: (400, "invalid request: request body must be valid JSON", ""),
    40032: (400, "invalid request: calling is disabled", "/config/#phone-calls"),
    40049: (400, "invalid request: sequence ID invalid", "/publish/#updating-deleting-notifications"),
    40101: (401, "unauthorized", "/publish/#authentication"),
    40301: (403, "forbidden", "/publish/#authentication"),
    40401: (404, "page not found", ""),
    41301: (413, "attachment too large, or bandwidth limit reached", "/publish/#limitations"),
    41303: (413, "JSON body too large", ""),
    42901: (429, "limit reached: too many requests", "/publish/#limitations"),
    42902: (429, "limit reached: too many emails", "/publish/#limitations"),
    42904: (
        429,
        "limit reached: the total number of topics on the server has been reached, please contact the admin",
        "/publish/#limitations",
    ),
    42905: (429, "limit reached: daily bandwidth reached", "/publish/#limitations"),
    42908: (429, "limit reached: daily message quota reached", "/publish/#limitations"),
    42909: (429, "limit reached: too many auth failures", "/publish/#limitations"),
    50001: (500, "internal server error", ""),
    50701: (507, "cannot publish to UnifiedPush topic without previously active subscriber", ""),
}

# The code ntfy itself uses for a status, for a test that injects only a status.
_DEFAULT_CODE = {400: 40000, 401: 40101, 403: 40301, 404: 40401, 413: 41301, 429: 42901, 500: 50001, 507: 50701}


def err(code: int) -> NtfyError:
    """The catalogue error for an ntfy code, e.g. `err(40024)`."""
    status, text, path = _CATALOGUE[code]
    return NtfyError(status, code, text, DOCS + path if path else "")


def injected_error(
    status: int, code: int | None = None, error: str | None = None, link: str | None = None
) -> NtfyError:
    """An error a test injects. A known code keeps ntfy's text and link; a status ntfy never sends
    by itself (502, 408, 425...) gets code `status*100+1` and the HTTP reason phrase, lower-case."""
    if code is None:
        code = _DEFAULT_CODE.get(status, status * 100 + 1)
    if code in _CATALOGUE:
        known = err(code)
        text, ref = known.error, known.link
    else:
        try:
            text, ref = HTTPStatus(status).phrase.lower(), ""
        except ValueError:
            text, ref = "error", ""
    return NtfyError(status, code, text if error is None else error, ref if link is None else link)
