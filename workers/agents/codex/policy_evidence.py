"""Codex's evidence for the delivery policies (``workers/delivery/policies/``).

* task time: ``stats.duration_ms`` the gate filled at promotion (the turn's ``task_complete``
  ``duration_ms`` plus those of its goal-continuation turns), else the record's own
  ``duration_ms``, else ``completed_at - started_at``;
* desk return: a newer candidate of the same root thread in ``pending/`` or ``outbox/``, or a turn
  start / user message appended to the rollout after the bytes the gate judged.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.statedir import OUTBOX, PENDING, InvalidRecord, StateDir

#: Rollout events that mean a new turn began (a user message, or any turn start).
_NEW_TURN = (b'"task_started"', b'"turn_started"', b'"user_message"')
ROLLOUT_READ_CAP = 4 << 20


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    stats = record.get("stats")
    for value in (stats.get("duration_ms") if isinstance(stats, dict) else None, record.get("duration_ms")):
        if (ms := _number(value)) is not None:
            return ms / 1000.0
    started, completed = _number(record.get("started_at")), _number(record.get("completed_at"))
    if started is not None and completed is not None and completed >= started:
        return completed - started
    return None


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    return _newer_candidate(state, record) or _rollout_moved_on(record)


def _root(record: dict[str, Any]) -> object:
    return record.get("root_thread_id") or record.get("thread_id")


def _newer_candidate(state: StateDir, record: dict[str, Any]) -> str | None:
    root = _root(record)
    if not root:
        return None
    created = record.get("created_at")
    for folder in (PENDING, OUTBOX):
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


def _number(value: object) -> float | None:
    """A finite-looking number as float, else None (bools and NaN are not numbers here)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None
