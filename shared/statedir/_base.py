"""The bottom layer of the state directory: constants, errors, the record encoding, the clock and
the crash-point seam. It imports nothing of the package, so every layer above (``_files``,
``_records``, ``_roles``, ``_upkeep`` and the package's ``__init__``) imports downward only.

For crash testing, ``DONEBELL_CRASH_AT=N`` makes the process ``os._exit(86)`` at the N-th
filesystem operation (see :func:`_step`): one counter for every operation of the process, kept
here so that tests can set ``statedir._base._crash_at`` / ``statedir._base._op_count`` directly.

Hook path module: standard library only, no ``typing``.
"""

from __future__ import annotations

import os
import time

from donebell.shared import lean_json as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCHEMA_VERSION = 1

#: The queue folders' names (as Postfix's ``MAIL_QUEUE_*``): write ``PENDING``, not ``"pending"``.
PENDING = "pending"  # candidates the gate has not decided yet
OUTBOX = "outbox"  # idle-confirmed, to be sent
SENT = "sent"  # receipts of what was delivered
SUPPRESSED = "suppressed"  # receipts of what was decided against
DEAD = "dead"  # receipts of what could not be delivered, and unparsable files moved aside
WATCH = "watch"  # the scanners' cursors: watch/local, watch/remote/<root>, watch/claude
WATCH_LOCAL = "watch/local"
WATCH_REMOTE = "watch/remote"
WATCH_CLAUDE = "watch/claude"
CLAUDE = "claude"  # Claude session records (the prompt epoch)
HEALTH = "health"
LOCKS = "locks"
TMP = "tmp"
MUTATION_LOCKS = "mutation-locks"
WAKE = "wake"  # the wake role's: created by it (not by ``ensure``), with the folders below
WAKE_REPLIES = "wake/replies"  # replies to the Continue buttons
WAKE_CLAIMS = "wake/claims"
WAKE_ANSWERS = "wake/answers"  # answers to permission prompts
WAKE_SPAWN = "wake/spawn"  # the logs of the agent runs the wake role started

#: Folders in pipeline order: a key is looked up in this order (see :meth:`StateDir.locate`).
PIPELINE = (PENDING, OUTBOX, SENT, SUPPRESSED, DEAD)
RECEIPT_FOLDERS = (SENT, SUPPRESSED, DEAD)
FOLDERS = (*PIPELINE, WATCH, CLAUDE, MUTATION_LOCKS, TMP, HEALTH, LOCKS)
MUTATION_LOCK_SHARDS = 64
LOG_NAME = "notify.log"
#: Written once, when a call of ``ensure`` creates the root: ``{"created_at": …}``. The scanners
#: replay nothing that ended before it (a new or purged state directory has no news of the past).
BIRTH_NAME = "created.json"
LOG_MAX_BYTES = 1 << 20


class StateError(Exception):
    """Base class of the errors this package raises on purpose."""


class UnsafeStateDir(StateError):
    """The state directory (or one of its folders) is a symlink or not a directory.

    Raised instead of following the link: state is never written through a planted symlink.
    """


class StateDirReplaced(StateError, OSError):
    """This process's role lock is gone or is another file: the state directory it works in was
    deleted or replaced under it, so nothing more may be written there.

    An ``OSError`` (``ESTALE``) so that the handlers every write already has treat it as a failed
    write; the role then stops on its lost lock before its next pass.
    """


class InvalidRecord(StateError):
    """A file in a record folder does not parse, is not UTF-8, or lacks ``schema``/``key``.

    The caller moves it aside with :meth:`StateDir.dead_letter_invalid` and goes on.
    """


# --- deterministic crash points (test seam) -------------------------------------------

_crash_at = int(os.environ.get("DONEBELL_CRASH_AT", "0") or 0)
_op_count = 0


def _step() -> None:
    """Count one filesystem operation; die here if it is the one ``DONEBELL_CRASH_AT`` names."""
    global _op_count
    if _crash_at:
        _op_count += 1
        if _op_count == _crash_at:
            os._exit(86)


def operations_done() -> int:
    """How many counted filesystem operations this process made (for crash-point tests)."""
    return _op_count


# --- encoding -----------------------------------------------------------------------------


def encode(obj: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON, the on-disk form of every record."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=False).encode("utf-8")


def encode_volatile(obj: Mapping[str, Any]) -> bytes:
    """:func:`encode` for a file rewritten every few seconds (a health file): the same JSON but a
    float's shortest spelling (``1e-5``), by orjson, a tenth of the CPU (issue 38). What orjson
    refuses (a key that is not a string, an integer over 64 bits) takes :func:`encode`."""
    try:
        import orjson  # on first use: no hook writes a health file

        return orjson.dumps(obj)
    except (ImportError, TypeError, ValueError):
        return encode(obj)


def decode(data: bytes, *, expect_key: str | None = None) -> dict[str, Any]:
    """Parse a record; raise :class:`InvalidRecord` unless it is a complete one."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidRecord(f"not valid UTF-8 JSON: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise InvalidRecord("not a JSON object")
    if not isinstance(obj.get("schema"), int):
        raise InvalidRecord("missing schema version")
    if obj["schema"] > SCHEMA_VERSION:
        raise InvalidRecord(f"unknown schema version {obj['schema']}")
    if expect_key is not None and obj.get("key") != expect_key:
        raise InvalidRecord("key does not match the file name")
    return obj


def now() -> float:
    """Wall-clock seconds; the one clock records are stamped with (tests may shift it)."""
    return time.time() + _clock_offset()


def _clock_offset() -> float:
    raw = os.environ.get("DONEBELL_CLOCK_OFFSET")
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0
