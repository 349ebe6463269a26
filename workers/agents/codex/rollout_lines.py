"""What one Codex rollout line says to the gate: a lifecycle event, a fact about its turn, or nothing.

The gate's reverse reader (``gate/rollout.py``) asks :func:`classify_line` about every complete
line it passes. Most lines are tool output or reasoning that cannot change a lifecycle decision;
a byte probe of the line's first KiB skips them without a JSON parse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from donebell.workers.agents.turn_status import CODEX_DONE, CODEX_START, is_real_codex_user_message, parse_time

#: Where the probes look: Codex writes the record type, payload type, item type and message role
#: first (serde tags), so a line's first KiB says what it is, however long its body.
PREFIX = 1024
#: Cheap byte probes: a line whose prefix holds none of these cannot change a lifecycle decision,
#: so it is never JSON-parsed (the reason probing a 200 MB file costs milliseconds, not seconds).
_INTERESTING = (
    b"task_started",
    b"task_complete",
    b"turn_aborted",
    b"turn_complete",
    b"turn_started",
    b"user_message",
    b"agent_message",
    b"UserMessage",
    b"AgentMessage",
    b"token_count",
    b'"role":"user"',
    b'"role":"assistant"',
)
_LIFECYCLE_WORDS = (b"task_started", b"task_complete", b"turn_aborted", b"turn_complete", b"turn_started")


@dataclass
class Lifecycle:
    """One turn-lifecycle record, reduced to what the gate uses."""

    kind: str  # "started" | "complete" | "aborted"
    turn_id: str | None
    offset: int
    at: float | None = None
    trigger: str | None = None  # started: turn_attribution.turn_trigger ("exec", "goal", ...)
    error: str | None = None  # complete: error.message of a failed turn
    duration_ms: int | None = None
    has_message: bool = False  # complete: a non-empty last_agent_message


#: A fact about the lines between lifecycle events: ``("user"|"agent", True)``, ``("tokens", n)``,
#: ``("malformed", why)`` or ``("oversized", 1)``.
Fact = tuple[str, Any]


def classify_line(line: bytes, offset: int) -> Lifecycle | Fact | None:
    """A lifecycle event, a fact ``(kind, value)``, or None for an irrelevant line."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return ("malformed", "invalid UTF-8")
    head = line[:PREFIX]
    if not any(word in head for word in _INTERESTING):
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return ("malformed", "invalid JSON")
    if not isinstance(obj, dict):
        return ("malformed", "not an object")
    payload = obj.get("payload")
    kind = obj.get("type")
    if kind == "event_msg" and not (isinstance(payload, dict) and isinstance(payload.get("type"), str)):
        # It names a lifecycle event but is not shaped like one: it may be a turn's start or end
        # that we cannot read, so it is malformed evidence, never an irrelevant line.
        return ("malformed", "event_msg payload not an object with a string type") if names_lifecycle(head) else None
    payload = payload if isinstance(payload, dict) else {}
    at = parse_time(obj.get("timestamp"))
    if kind == "event_msg":
        return _event(payload, offset, at)
    if kind == "response_item" and payload.get("type") == "message":
        role = payload.get("role")
        if role == "assistant":
            return ("agent", True)
        if role == "user" and is_real_codex_user_message(payload):
            return ("user", True)
    return None


def names_lifecycle(data: bytes) -> bool:
    """Do these bytes name a lifecycle event (current or older name)?"""
    return any(word in data for word in _LIFECYCLE_WORDS)


def _event(payload: dict[str, Any], offset: int, at: float | None) -> Lifecycle | Fact | None:
    """An ``event_msg`` record: a lifecycle event, a message or token fact, or None."""
    ptype = payload.get("type")
    if ptype in CODEX_START or ptype in CODEX_DONE:
        return _lifecycle(ptype, payload, offset, at)
    if ptype == "user_message":
        return ("user", True)
    if ptype == "agent_message":
        return ("agent", True)
    if ptype == "item_completed":
        item = payload.get("item")
        item_type = item.get("type") if isinstance(item, dict) else None
        if item_type == "UserMessage":
            return ("user", True)
        if item_type == "AgentMessage":
            return ("agent", True)
    if ptype == "token_count":
        info = payload.get("info")
        usage = info.get("total_token_usage") if isinstance(info, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        return ("tokens", total) if isinstance(total, int) else None
    return None


def _lifecycle(ptype: object, payload: dict[str, Any], offset: int, at: float | None) -> Lifecycle:
    """A turn's start or end (``ptype`` in CODEX_START or CODEX_DONE), reduced to what the gate uses."""
    turn = payload.get("turn_id")
    turn_id = turn if isinstance(turn, str) and turn else None
    if ptype in CODEX_START:
        attribution = payload.get("turn_attribution")
        trigger = attribution.get("turn_trigger") if isinstance(attribution, dict) else None
        return Lifecycle("started", turn_id, offset, at, trigger=trigger if isinstance(trigger, str) else None)
    err = payload.get("error")
    message = err.get("message") if isinstance(err, dict) else err
    last = payload.get("last_agent_message")
    duration = payload.get("duration_ms")
    return Lifecycle(
        "aborted" if ptype == "turn_aborted" else "complete",
        turn_id,
        offset,
        parse_time(payload.get("completed_at")) or at,
        error=str(message)[:300] if message else None,
        duration_ms=duration if isinstance(duration, int) else None,
        has_message=isinstance(last, str) and bool(last.strip()),
    )
