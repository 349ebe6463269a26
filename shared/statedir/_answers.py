"""The answers to permission prompts (``wake/answers/<request key>.json``): one per request, ever.

The wake role records the phone's Allow or Deny; the waiting PermissionRequest hook closes the
request when it stops waiting (its wait ran out, or the prompt was answered at the terminal).
Both write by exclusive create, so whichever comes first is the only answer the request ever
gets: a tap after the hook gave up finds the request closed (``already-answered``), and a hook
giving up just after a tap finds the tap and honours it. Loaded on first use through
:meth:`StateDir.answer_box` (the hook imports it only with approvals on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import SCHEMA_VERSION, WAKE_ANSWERS, InvalidRecord, now

if TYPE_CHECKING:
    from donebell.shared.statedir import StateDir

#: What an answer record's ``decision`` may be: the phone's two, or the hook's "closed".
DECISIONS = ("allow", "deny", "closed")


class AnswerBox:
    """The answers of one state directory."""

    def __init__(self, state: StateDir) -> None:
        self.state = state
        state.ensure_folder(WAKE_ANSWERS)

    def answer(self, request: str, decision: str, **fields: Any) -> tuple[dict[str, Any], bool]:
        """Record ``decision`` for ``request`` unless it has an answer; ``(the answer, ours)``.

        An unreadable existing answer reads as ``closed``: never an allow by default.
        """
        assert decision in DECISIONS, decision
        record = {"schema": SCHEMA_VERSION, "kind": "answer", "key": request, "provider": "unknown"}
        record.update(decision=decision, created_at=now(), **fields)
        if self.state.create(WAKE_ANSWERS, record):
            return record, True
        return (self.read(request) or {"key": request, "decision": "closed", "reason": "unreadable"}), False

    def path(self, request: str) -> str:
        """Where the request's answer appears (a waiting hook watches its folder, ``approval_lean``)."""
        return self.state.path(WAKE_ANSWERS, f"{request}.json")

    def read(self, request: str) -> dict[str, Any] | None:
        """The request's answer, or None while it has none (a damaged one reads as closed)."""
        try:
            found = self.state.read(WAKE_ANSWERS, request)
        except InvalidRecord:
            return {"key": request, "decision": "closed", "reason": "unreadable"}
        if found is not None and found.get("decision") not in DECISIONS:
            return {**found, "decision": "closed", "reason": "unknown decision"}
        return found

    def expire(self, older_than: float) -> int:
        """Remove answers older than ``older_than`` (epoch seconds); how many (the maintenance role)."""
        removed = 0
        for key in self.state.keys(WAKE_ANSWERS):
            try:
                found = self.state.read(WAKE_ANSWERS, key)
            except InvalidRecord:
                found = None
            created = (found or {}).get("created_at")
            if not isinstance(created, (int, float)) or created < older_than:
                self.state.remove(WAKE_ANSWERS, key)
                removed += 1
        return removed
