"""Claude session record retention for the maintenance role (``claude/<sha256(session_id)>.json``).

The Claude hooks write one record per session (its prompt epoch, recent prompt ids, goal
baseline) and nothing else ever removed one, so ``claude/`` grew with every session ever run.
A record goes when it was not updated for :data:`SESSION_MAX_AGE_DAYS` and no ``pending/`` or
``outbox/`` record of that session still needs it (the gate judges a candidate's epoch against
it). Deleting one is safe by design: a session prompted again without its record starts above
every epoch still pending (``advance`` in ``workers/agents/claude/session.py``), the same as a lost record.
A record that does not load is dead-lettered, as the hook would do on meeting it. The removal
happens under the record's mutation lock after a re-read, so a hook that just rewrote it wins.
"""

from __future__ import annotations

from donebell.shared.statedir import CLAUDE, OUTBOX, PENDING, InvalidRecord, StateDir
from donebell.workers.kit.jsonl_tail import cursor_updated_at

DAY = 86400.0
SESSION_MAX_AGE_DAYS = 30.0


def _sessions_in_use(state: StateDir) -> set[str]:
    """Session ids of every Claude candidate or outbox record still in the pipeline."""
    used: set[str] = set()
    for folder in (PENDING, OUTBOX):
        for key in state.keys(folder):
            try:
                rec = state.read(folder, key)
            except InvalidRecord:
                continue  # the gate or the sender dead-letters it
            if rec and rec.get("provider") == "claude" and isinstance(rec.get("session_id"), str):
                used.add(rec["session_id"])
    return used


def expire_claude_sessions(state: StateDir, at: float) -> dict[str, int]:
    """One retention round over ``claude/``; returns ``{"expired_claude_sessions", "claude_invalid"}``."""
    cutoff = at - SESSION_MAX_AGE_DAYS * DAY
    expired = invalid = 0
    in_use: set[str] | None = None
    for key in state.keys(CLAUDE):
        try:
            rec = state.read(CLAUDE, key)
        except InvalidRecord as exc:
            with state.mutation_lock(key):
                state.dead_letter_invalid(CLAUDE, f"{key}.json", f"claude session record: {exc}")
            invalid += 1
            continue
        stamp = cursor_updated_at(rec) if rec else None
        if rec is None or (stamp is not None and stamp >= cutoff):
            continue
        if in_use is None:
            in_use = _sessions_in_use(state)  # read once, and only when something is old enough
        if rec.get("session_id") in in_use:
            continue
        with state.mutation_lock(key):
            try:
                again = state.read(CLAUDE, key)
            except InvalidRecord:
                continue
            again_stamp = cursor_updated_at(again) if again else None
            if again is not None and (again_stamp is None or again_stamp < cutoff) and state.remove(CLAUDE, key):
                expired += 1
    return {"expired_claude_sessions": expired, "claude_invalid": invalid}
