"""What every hook run shares: its input, read defensively, and its context (state directory,
the few config keys it reads, its log).

**The input.** The payload comes from an agent we do not control, so it is read defensively:

* at most :data:`MAX_PAYLOAD_BYTES` are read (``cap + 1`` bytes tell "too large" apart from
  "exactly the cap"); a larger payload is refused, never truncated and parsed;
* the bytes are decoded as strict UTF-8 (a leading UTF-8 BOM is accepted, as Windows tools write
  one); invalid bytes refuse the payload instead of guessing with replacement characters, which
  could turn into different JSON text. The platform seam's ``hook_stdin`` choice: ``utf-8``
  (Linux, macOS) is just that; ``utf-8-or-utf-16`` (Windows, and portable mode anywhere) also
  decodes a payload that starts with a UTF-16 BOM as UTF-16, as a payload file saved by a Windows
  editor as "Unicode" and piped in by hand arrives (``type payload.json | donebell hook claude``).
  Without a BOM nothing is guessed: UTF-8 it is;
* the top level must be a JSON object; unknown fields are simply never looked at.

Every refusal is a :class:`PayloadError` whose message is a short reason for the log (it never
quotes the payload).

**The context.** The hook path reads its few config keys with :func:`config_schema.read_keys`:
the same field table and normalizer as role processes and the CLI (so ``"include_message": 1``
means true everywhere), but it never raises: a broken file reads as absent and an invalid value
as the key's default. Standard library only.
"""

from __future__ import annotations

import os
import sys

from donebell.shared import lean_json as json
from donebell.shared import platform
from donebell.shared.config.fields import FIELDS
from donebell.shared.config.schema import read_keys
from donebell.shared.statedir import StateDir, open_state_dir

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

MAX_PAYLOAD_BYTES = 1 << 20
#: Longest id (thread, turn, session, prompt) we accept; real ones are 36-character UUIDs.
MAX_ID_CHARS = 512
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: The config keys a hook reads (their defaults and types come from the field table).
HOOK_KEYS = (
    "enable_claude_code",
    "include_message",
    "chain_notify",
    "origin",
    "approvals_enabled",
    "wake_enabled",
    "approval_wait_seconds",
    "approval_wait_interactive_seconds",
)
#: Longest final-message text stored in a candidate (the rendered message is 3,500 bytes at most).
STORED_MESSAGE_LIMIT = 4000
#: How much of it a hook reads: redaction runs before the cut to STORED_MESSAGE_LIMIT, so a key
#: that straddles the cut is still whole when the redactor sees it.
MESSAGE_LIMIT = 2 * STORED_MESSAGE_LIMIT
#: Longest error text stored in a candidate.
ERROR_LIMIT = 300


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


def stdin_object() -> dict[str, Any]:
    """The JSON object the agent wrote to the hook's stdin, or :class:`PayloadError`."""
    return decode_object(read_stream(getattr(sys.stdin, "buffer", None)))


def decode_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw`` (strict UTF-8, optional BOM), or :class:`PayloadError`."""
    try:
        text = _payload_text(raw)
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


def _payload_text(raw: bytes) -> str:
    """The payload's text by the platform's ``hook_stdin`` choice (module docstring);
    ``UnicodeDecodeError`` (``.start``: the bad byte) for invalid bytes."""
    if raw.startswith(_UTF8_BOM):
        return raw[len(_UTF8_BOM) :].decode("utf-8")
    if raw[:2] in _UTF16_BOMS and platform.mechanism("hook_stdin") == "utf-8-or-utf-16":
        return raw.decode("utf-16")  # the BOM says the byte order, and is dropped
    return raw.decode("utf-8")


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


class HookContext:
    """One hook run: lazily opened state directory, light config, and log helpers."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._state: StateDir | None = None
        self._config: dict[str, Any] | None = None
        #: Keys whose configured value the loaders refuse (read as the default), with the reason.
        self.refused_config: dict[str, str] = {}
        #: Run once the signal is durable and the hook's signals are released: what the hook then
        #: prints instead of its usual output (a PermissionRequest waiting for the phone), or None.
        self.after: Callable[[], str | None] | None = None
        #: The agent whose hook runs (the entry point sets it): the kit reads its answer evidence.
        self.agent: Any = None
        #: Another agent that runs this agent's hooks for a task of its own (its hook-host variable
        #: is set; the entry point asks the registry), or None: the hook then reports nothing.
        self.hook_host: str | None = None
        #: A record was written that the delivery role must see: the entry point starts a
        #: delivery worker once the agent's hook returned (:meth:`request_delivery`).
        self.delivery_wanted = False

    def request_delivery(self) -> None:
        """Ask the hook's entry point to make sure a delivery worker runs, after the hook returns."""
        self.delivery_wanted = True

    @property
    def state(self) -> StateDir:
        if self._state is None:
            self._state = open_state_dir()
        return self._state

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = read_keys(FIELDS, HOOK_KEYS, self.refused_config)
        return self._config

    @property
    def include_message(self) -> bool:
        """Store the final message only when ``include_message`` is on (the privacy default is off)."""
        return self.config["include_message"] is True

    def excerpt(self, text: str | None) -> str | None:
        """``text`` as a candidate may store it: only with ``include_message``, secrets redacted."""
        return stored_excerpt(text, self.include_message)

    @property
    def claude_enabled(self) -> bool:
        """Claude hooks are on unless ``enable_claude_code`` is off."""
        return self.config["enable_claude_code"] is True

    @property
    def origin(self) -> str | None:
        """The configured machine label, or None (the sender then names this host)."""
        value = self.config["origin"]
        return value if isinstance(value, str) and value else None

    def log(self, level: str, message: str, **fields: Any) -> None:
        """One line in the state directory's log; stderr only if the state dir itself is unusable."""
        try:
            state = self.state
        except Exception as exc:  # noqa: BLE001 - the state dir is unusable: say so where we can
            sys.stderr.write(f"donebell hook {self.command}: {message} (state dir unusable: {exc})\n")
            return
        state.log(level, message, hook=self.command, **fields)


def stored_excerpt(text: str | None, include_message: bool) -> str | None:
    """Message text as a record may store it: None unless ``include_message``, secrets redacted, cut."""
    if text is None or not include_message:
        return None
    from donebell.shared.text.redaction import redact  # only when message text is kept

    return redact(text)[:STORED_MESSAGE_LIMIT]
