"""The turn-status contract (docs/agent-facts.md): did the newest relevant transcript event hand control back?

One small boundary used by both providers, so the gate, ``explain`` and tests never disagree about
provider event names::

    TurnStatus(is_done, key, activity_at)

* ``is_done``: the newest *recognized* event is a completion (Codex ``task_complete`` /
  ``turn_aborted`` and their older names; a Claude assistant record whose ``stop_reason`` ends the
  turn, or ``system/turn_duration``);
* ``key``: which turn it describes, from identifiers already in the record (``turn_id``, ``uuid``,
  ``id``, ``item_id``, ``call_id``); a bounded hash of the line only when the provider gave none;
* ``activity_at``: when that event happened (the record's own timestamp), epoch seconds.

The classifier scans a bounded tail in **reverse** and stops at the first recognized event: a newer
user event means *working* even after an older completion, and unknown records are skipped rather
than read as idle. Valid records with the wrong meaning are excluded: Claude ``isSidechain``
records (a subagent's chain, not the parent's turn) and ``isApiErrorMessage`` assistant records
(an API/rate-limit error envelope with a completion-like ``stop_sequence``). ``is_done`` says
control came back, not that the work succeeded.

Truth table shared by every adapter: ``tests/fixtures/turn_status_truth_table.json``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from donebell.shared.bounded_read import parse_record, read_tail

#: Synchronous-path cap of a tail read (hook-path transcript scans are capped at 1 MiB, docs/agent-facts.md).
TAIL_BYTES = 1 << 20

Verdict = Literal["done", "working"]


@dataclass(frozen=True)
class TurnStatus:
    """The newest recognized turn evidence of one transcript."""

    is_done: bool
    key: str | None
    activity_at: float | None
    event: str = "none"  # the provider event that decided it ("task_complete", "user", ...)


UNKNOWN = TurnStatus(False, None, None, "none")

# --- records (the bounded tail read itself: shared/bounded_read.py) ----------------------


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One JSONL record, or None if it is not valid UTF-8 JSON of an object."""
    return parse_record(line)


def parse_time(value: object) -> float | None:
    """Epoch seconds from an ISO-8601 string (``…Z``) or a number; None otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _fallback_key(line: bytes) -> str:
    return "h:" + hashlib.sha256(line).hexdigest()[:24]


def _first_id(*candidates: object) -> str | None:
    for value in candidates:
        if isinstance(value, str) and value:
            return value
    return None


# --- Codex ---------------------------------------------------------------------------------

#: Completion names, current and older (pre-0.1xx rollouts, app-server notifications, legacy notify).
CODEX_DONE = frozenset({"task_complete", "turn_aborted", "turn_complete", "turn/completed", "agent-turn-complete"})
CODEX_START = frozenset({"task_started", "turn_started", "turn/started"})
#: User-role messages that Codex itself injects; they are not a user starting a turn.
CODEX_INJECTED_PREFIXES = (
    "<environment_context>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<hook_prompt",
    "<user_instructions>",
    "<permissions",
    "# AGENTS.md",
)


def codex_user_text(content: object) -> str:
    """The text of a ``response_item`` message's content blocks, joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "".join(parts)


def is_real_codex_user_message(payload: dict[str, Any]) -> bool:
    """A ``response_item`` user message typed by a person (not a Codex-injected one)."""
    text = codex_user_text(payload.get("content")).lstrip()
    return bool(text) and not text.startswith(CODEX_INJECTED_PREFIXES)


def classify_codex(obj: dict[str, Any], line: bytes = b"") -> tuple[Verdict, str | None, float | None, str] | None:
    """``(verdict, key, at, event)`` for a recognized Codex record, else None (skip it)."""
    at = parse_time(obj.get("timestamp"))
    kind = obj.get("type")
    payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
    assert isinstance(payload, dict)
    if kind == "event_msg":
        ptype = payload.get("type")
        if ptype in CODEX_DONE:
            key = _first_id(payload.get("turn_id"), payload.get("id")) or _fallback_key(line)
            return "done", key, parse_time(payload.get("completed_at")) or at, str(ptype)
        if ptype in CODEX_START or ptype == "user_message":
            key = _first_id(payload.get("turn_id"), payload.get("id")) or _fallback_key(line)
            return "working", key, at, str(ptype)
        if ptype == "item_completed":
            item = payload.get("item") if isinstance(payload.get("item"), dict) else {}
            assert isinstance(item, dict)
            if item.get("type") == "UserMessage":
                return "working", _first_id(payload.get("turn_id"), item.get("id")) or _fallback_key(line), at, "user"
        return None
    if kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
        if is_real_codex_user_message(payload):
            return "working", _first_id(payload.get("id")) or _fallback_key(line), at, "user"
        return None
    # App-server notifications and the legacy notify payload use their own envelopes.
    method = obj.get("method")
    if method in CODEX_DONE or method in CODEX_START:
        params = obj.get("params") if isinstance(obj.get("params"), dict) else {}
        assert isinstance(params, dict)
        turn = params.get("turn") if isinstance(params.get("turn"), dict) else {}
        assert isinstance(turn, dict)
        key = _first_id(turn.get("id"), params.get("turnId")) or _fallback_key(line)
        return ("done" if method in CODEX_DONE else "working"), key, at, str(method)
    if kind in CODEX_DONE:
        return "done", _first_id(obj.get("turn-id"), obj.get("turn_id")) or _fallback_key(line), at, str(kind)
    return None


# --- Claude --------------------------------------------------------------------------------

#: ``message.stop_reason`` values that hand control back; ``tool_use`` / null mean "still going".
CLAUDE_DONE_STOP_REASONS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})


def classify_claude(obj: dict[str, Any], line: bytes = b"") -> tuple[Verdict, str | None, float | None, str] | None:
    """``(verdict, key, at, event)`` for a recognized Claude record, else None (skip it)."""
    if obj.get("isSidechain") is True:
        return None  # a subagent's chain never completes the parent conversation
    at = parse_time(obj.get("timestamp"))
    kind = obj.get("type")
    message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    assert isinstance(message, dict)
    if kind == "assistant":
        if obj.get("isApiErrorMessage") is True:
            return None  # an API-error envelope: a completion-shaped stop_sequence that is not one
        reason = message.get("stop_reason")
        if reason in CLAUDE_DONE_STOP_REASONS:
            key = _first_id(obj.get("uuid"), message.get("id")) or _fallback_key(line)
            return "done", key, at, str(reason)
        return None
    if kind == "user":
        key = _first_id(obj.get("uuid"), obj.get("promptId")) or _fallback_key(line)
        return "working", key, at, "user"
    if kind == "system" and obj.get("subtype") == "turn_duration":
        return "done", _first_id(obj.get("uuid")) or _fallback_key(line), at, "turn_duration"
    return None


# --- the scan -------------------------------------------------------------------------------

Classifier = Callable[[dict[str, Any], bytes], "tuple[Verdict, str | None, float | None, str] | None"]

ADAPTERS: dict[str, Classifier] = {"codex": classify_codex, "claude": classify_claude}


def status_of_lines(lines_newest_first: Iterable[bytes], provider: str) -> TurnStatus:
    """Reverse scan: the first recognized event decides; unparsable and unknown lines are skipped."""
    classify = ADAPTERS[provider]
    for line in lines_newest_first:
        obj = parse_line(line)
        if obj is None:
            continue
        found = classify(obj, line)
        if found is None:
            continue
        verdict, key, at, event = found
        return TurnStatus(verdict == "done", key, at, event)
    return UNKNOWN


def _reversed(lines: list[bytes]) -> Iterator[bytes]:
    return reversed(lines)


def turn_status(path: str | os.PathLike[str], provider: str, max_bytes: int = TAIL_BYTES) -> TurnStatus:
    """The :class:`TurnStatus` of a transcript/rollout file from its bounded tail.

    A missing or unreadable file is :data:`UNKNOWN` (not done).
    """
    try:
        lines = read_tail(path, max_bytes).complete_lines()
    except OSError:
        return UNKNOWN
    return status_of_lines(_reversed(lines), provider)
