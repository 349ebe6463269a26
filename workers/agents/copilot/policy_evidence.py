"""The delivery policies' Copilot evidence, read from the session log (never on the hook path)."""

from __future__ import annotations

from typing import Any

from donebell.shared.bounded_read import read_tail
from donebell.workers.agents.copilot.events import iso_ms, read_log

#: How much of the log's end is searched for a permission request's outcome.
ANSWER_TAIL = 4 << 20


def _log_of(record: dict[str, Any]) -> str | None:
    path = record.get("answer_path") or record.get("transcript_path")
    return path if isinstance(path, str) and path else None


def user_returned(record: dict[str, Any]) -> str | None:
    """A task started after the record's task: the user typed the next prompt."""
    path, interaction = _log_of(record), record.get("interaction_id")
    if path is None or not isinstance(interaction, str):
        return None
    log = read_log(path)
    task = log.task(interaction)
    newer = log.newer_than(task) if task is not None else None
    return f"a later prompt in the session (task {newer.interaction_id})" if newer else None


def answered_at_terminal(record: dict[str, Any]) -> str | None:
    """A ``permission.completed`` logged after the request was made (or a newer task)."""
    path, asked = _log_of(record), record.get("promoted_at") or record.get("created_at")
    if path is None or not isinstance(asked, (int, float)):
        return None
    try:
        lines = read_tail(path, ANSWER_TAIL).complete_lines()
    except OSError:
        return None
    import json

    for line in reversed(lines):
        if b'"permission.completed"' not in line and b'"user.message"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        at = iso_ms(event.get("timestamp")) if isinstance(event, dict) else None
        if at is None or at < asked * 1000.0:
            return None
        if event.get("type") == "permission.completed":
            return "the permission request was answered at the terminal"
        return "a new prompt in the session"
    return None
