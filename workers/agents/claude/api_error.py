"""The kind of a Claude Code API error that StopFailure calls ``unknown`` (docs/agent-facts.md).

Claude Code maps an API error to StopFailure's ``error`` enum, and a 400 (among others) maps to
``unknown``, while the turn's last message names it: ``API Error: 400 {"type":"error","error":
{"type":"invalid_request_error","message":…}}`` (the synthetic assistant message, also in the
transcript with ``apiErrorStatus``); Claude Code 2.1.197 and 2.1.332 write ``API Error: 400
Invalid Request Error`` (the status and the API's message). A push saying ``failed: unknown`` leaves the user
guessing; :func:`error_kind` gives the kind instead: ``invalid_request_error (HTTP 400)`` from the
API's JSON, else that one ``API Error:`` line, redacted and cut to 80 characters.

No ``re`` at import: the Claude hook imports it (lazily, for an unknown error only).
"""

from __future__ import annotations

PREFIX = "API Error: "
TYPE_KEY = '"type":"'
#: The longest error type kept; the API's are all shorter (``invalid_request_error``).
TYPE_MAX = 40
#: The longest ``API Error:`` line kept (one line of a phone notification).
LINE_MAX = 80


def _status(text: str) -> int | None:
    """The HTTP status after ``API Error: `` (three digits), or None."""
    at = text.find(PREFIX)
    digits = text[at + len(PREFIX) : at + len(PREFIX) + 3] if at >= 0 else ""
    following = text[at + len(PREFIX) + 3 : at + len(PREFIX) + 4] if at >= 0 else ""
    if len(digits) == 3 and digits.isdigit() and not following.isdigit():
        return int(digits)
    return None


def _error_type(text: str) -> str | None:
    """The first ``"type":"…_error"`` (or similar) in the API's JSON that is not ``error`` itself."""
    start = 0
    compact = text.replace('": "', '":"')
    while (at := compact.find(TYPE_KEY, start)) >= 0:
        start = at + len(TYPE_KEY)
        end = compact.find('"', start)
        word = compact[start:end] if end > start else ""
        if (
            word != "error"
            and 0 < len(word) <= TYPE_MAX
            and all(c.isascii() and (c.isalnum() or c == "_") for c in word)
        ):
            return word
    return None


def _api_line(text: str) -> str | None:
    """What follows ``API Error: `` on its line (``400 Invalid Request Error``), secrets redacted,
    cut to :data:`LINE_MAX` characters; None without that prefix."""
    at = text.find(PREFIX)
    if at < 0:
        return None
    line = text[at + len(PREFIX) :].splitlines()[0] if text[at + len(PREFIX) :].strip() else ""
    from donebell.shared.text.redaction import redact

    line = " ".join(redact(line).split())
    return (line[: LINE_MAX - 1] + "…" if len(line) > LINE_MAX else line) or None


def error_kind(error: str | None, *texts: str | None, status: int | None = None) -> str:
    """``error`` unless it is missing or ``unknown`` and one of ``texts`` (the last message, the
    error details) names the API error: then ``<type> (HTTP <status>)`` from the API's JSON, else
    the ``API Error:`` line (``400 Invalid Request Error``), else ``HTTP <status>``. ``status``:
    the transcript's ``apiErrorStatus`` when known."""
    if error and error != "unknown":
        return error
    found_type, line = None, None
    for text in texts:
        if not isinstance(text, str) or not text:
            continue
        text = text[:4096]  # the kind is at the start; a huge message is not scanned
        status = status if status is not None else _status(text)
        found_type = found_type or _error_type(text)
        line = line or _api_line(text)
    if found_type and status:
        return f"{found_type} (HTTP {status})"
    return line or (f"HTTP {status}" if status else found_type or "unknown")
