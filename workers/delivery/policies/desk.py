"""Desk grace: did the user start a new turn in the same thread after the gate's verdict?

Evidence, per provider (all read from the state directory or the agent's own files):

* Claude: the session record (``claude/``), advanced by every UserPromptSubmit: a prompt epoch
  above the candidate's, or another current prompt written after the verdict.
* Codex: a newer candidate of the same root thread in ``pending/`` or ``outbox/``, or a turn
  start / user message appended to the rollout after the bytes the gate judged.

None means "no sign of the user": the notification goes.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import InvalidRecord, StateDir

#: Rollout events that mean a new turn began (a user message, or any turn start).
_NEW_TURN = (b'"task_started"', b'"turn_started"', b'"user_message"')
ROLLOUT_READ_CAP = 4 << 20


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    """Why we believe the user came back to this thread, or None."""
    if record.get("provider") == "claude":
        return _claude_returned(state, record)
    return _newer_candidate(state, record) or _rollout_moved_on(record)


def _claude_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    session_id = record.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    try:
        session = state.read("claude", claude_session_key(session_id))
    except InvalidRecord:
        return None
    if session is None:
        return None
    epoch, current = record.get("claude_epoch"), session.get("epoch")
    if isinstance(epoch, int) and isinstance(current, int) and epoch > 0 and current > epoch:
        return f"a new prompt in the session (epoch {current} > {epoch})"
    updated, promoted = session.get("updated_at"), record.get("promoted_at")
    if (
        session.get("prompt_id") not in (None, record.get("prompt_id"))
        and isinstance(updated, (int, float))
        and isinstance(promoted, (int, float))
        and updated > promoted
    ):
        return "another prompt became current after the verdict"
    return None


def _root(record: dict[str, Any]) -> object:
    return record.get("root_thread_id") or record.get("thread_id")


def _newer_candidate(state: StateDir, record: dict[str, Any]) -> str | None:
    root = _root(record)
    if not root:
        return None
    created = record.get("created_at")
    for folder in ("pending", "outbox"):
        for key in state.keys(folder):
            if key == record["key"]:
                continue
            try:
                other = state.read(folder, key)
            except InvalidRecord:
                continue
            if not other or other.get("provider") != record.get("provider") or _root(other) != root:
                continue
            if other.get("turn_id") == record.get("turn_id"):
                continue
            born = other.get("created_at")
            if isinstance(born, (int, float)) and isinstance(created, (int, float)) and born > created:
                return f"a newer turn {str(other.get('turn_id') or key)[:12]} of the thread ({folder}/)"
    return None


def _rollout_moved_on(record: dict[str, Any]) -> str | None:
    path = record.get("transcript_path")
    seen = ((record.get("probe") or {}).get("observed") or {}).get("size")
    if not isinstance(path, str) or not path or not isinstance(seen, int):
        return None
    try:
        with open(path, "rb") as f:
            f.seek(seen)
            tail = f.read(ROLLOUT_READ_CAP)
    except OSError:
        return None
    for marker in _NEW_TURN:
        if marker in tail:
            return f"the rollout has a new {marker.decode().strip(chr(34))} after the judged turn"
    return None
