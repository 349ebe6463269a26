"""Hook input discipline: bounded, strict-UTF-8 JSON objects from stdin or an argv element.

The payload comes from an agent we do not control, so it is read defensively:

* at most :data:`MAX_PAYLOAD_BYTES` are read (``cap + 1`` bytes tell "too large" apart from
  "exactly the cap"); a larger payload is refused, never truncated and parsed;
* the bytes are decoded as strict UTF-8 (a leading UTF-8 BOM is accepted, as Windows tools write
  one; the platform seam's ``hook_stdin`` also takes a UTF-16 BOM's text on Windows); invalid
  bytes refuse the payload instead of guessing with replacement characters, which
  could turn into different JSON text;
* the top level must be a JSON object; unknown fields are simply never looked at.

Every refusal is a :class:`PayloadError` whose message is a short reason for the log (it never
quotes the payload). Standard library only.
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.platform import hook_stdin

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any, BinaryIO

MAX_PAYLOAD_BYTES = 1 << 20
#: Longest id (thread, turn, session, prompt) we accept; real ones are 36-character UUIDs.
MAX_ID_CHARS = 512


class PayloadError(Exception):
    """The hook input cannot be used; ``str()`` is the reason (for the log, no payload text)."""


def read_stream(stream: BinaryIO | None, cap: int = MAX_PAYLOAD_BYTES) -> bytes:
    """Up to ``cap`` bytes of ``stream``; :class:`PayloadError` if there are more.

    A terminal on stdin (someone typing the command by hand) reads as empty instead of waiting.
    """
    if stream is None:
        return b""
    try:
        if os.isatty(stream.fileno()):
            return b""
    except (OSError, ValueError):
        pass
    data = stream.read(cap + 1)
    if len(data) > cap:
        raise PayloadError(f"payload larger than {cap} bytes")
    return data


def decode_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw`` (strict UTF-8, optional BOM), or :class:`PayloadError`."""
    try:
        text = hook_stdin.decode(raw)  # the platform's decoding: strict UTF-8 (or a UTF-16 BOM's)
    except UnicodeDecodeError as exc:
        raise PayloadError(f"payload is not valid {exc.encoding.upper()} (byte {exc.start})") from None
    if not text.strip():
        raise PayloadError("empty payload")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PayloadError(f"payload is not JSON ({type(exc).__name__})") from None
    if not isinstance(obj, dict):
        raise PayloadError(f"payload is a JSON {type(obj).__name__}, not an object")
    return obj


def argv_object(text: str, cap: int = MAX_PAYLOAD_BYTES) -> dict[str, Any]:
    """The JSON object in one argv element (the legacy Codex ``notify`` passes it that way).

    Python decoded the OS bytes with ``surrogateescape``; re-encoding strictly refuses the
    invalid bytes that decoding smuggled in.
    """
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError("argument is not valid UTF-8") from None
    if len(raw) > cap:
        raise PayloadError(f"argument larger than {cap} bytes")
    return decode_object(raw)


def text_field(payload: dict[str, Any], name: str, limit: int = MAX_ID_CHARS) -> str | None:
    """``payload[name]`` if it is a non-empty, storable string of at most ``limit`` characters.

    Anything else (absent, wrong type, too long, a lone surrogate from a ``\\ud800`` escape that
    cannot be written as UTF-8) counts as missing.
    """
    value = payload.get(name)
    if not isinstance(value, str) or not value or len(value) > limit:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def message_field(payload: dict[str, Any], name: str, limit: int) -> str | None:
    """Free text (a final message) clipped to ``limit`` characters; None if absent or unstorable."""
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        return None
    value = value[:limit]
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value
