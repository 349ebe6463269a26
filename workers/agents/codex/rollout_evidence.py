"""From rollout records to evidence: per-turn presence facts, terminal records, candidates.

Codex 0.171 writes no ``event_msg/user_message``: the user's turn shows as a ``response_item``
``role: user`` message (``provenance.type: "user"``) and an ``item_completed{UserMessage}``
(docs/agent-facts.md). Codex also injects user-role messages of its own (``<environment_context>``,
``<turn_aborted>``, ``<subagent_notification>``, ``<hook_prompt …>``): those are not the user's.

Terminal records: ``event_msg/task_complete`` (outcome ``done``, or ``failed`` when it carries
``error``) and ``event_msg/turn_aborted`` (``stopped``). A root thread's terminal record becomes a
candidate under the same key the hooks use (``event_key("codex", session_meta.id, turn_id)``); a
child thread's becomes a ``subagent`` receipt. Only presence facts are kept in cursors; message
text reaches a candidate only when ``include_message`` is on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from donebell.shared.ingest import Submitted, submit_candidate, submit_suppressed
from donebell.shared.keys import identity
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir, now
from donebell.shared.text.redaction import redact, redact_optional
from donebell.workers.agents.codex.identity import classify_session_meta
from donebell.workers.kit.jsonl_tail import Cursor

#: Texts Codex itself puts in user-role messages (checked only when no provenance says who wrote it).
INJECTED_PREFIXES = (
    "<environment_context>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<hook_prompt",
    "<user_instructions>",
    "<skills_instructions>",
    "# AGENTS.md instructions",
)
TURNS_KEPT = 8  # open turns remembered per cursor (a thread runs one at a time; slack for odd files)
_TURN_ID = re.compile(rb'"turn_id":"([^"\\]{1,200})"')


@dataclass
class Terminal:
    """A turn-ending record as read from the rollout."""

    turn_id: str | None
    outcome: str  # done | failed | stopped
    error: str | None
    last_message: str | None
    completed_at: float | None
    duration_ms: int | None
    has_user_message: bool | None  # None: the turn began before the part we read
    has_final_message: bool
    turn_trigger: str | None
    invalid_lines: int
    start: int
    end: int


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]


def _injected(content: object) -> bool:
    texts = _texts(content)
    return bool(texts) and all(t.lstrip().startswith(INJECTED_PREFIXES) for t in texts)


def is_user_message(payload: dict[str, Any]) -> bool:
    """True for a ``response_item`` message the user wrote (not one Codex injected)."""
    if payload.get("type") != "message" or payload.get("role") != "user":
        return False
    passthrough = payload.get("internal_chat_message_metadata_passthrough")
    if isinstance(passthrough, dict) and isinstance(passthrough.get("content_item_metadata"), list):
        kinds = [
            m.get("provenance", {}).get("type")
            for m in passthrough["content_item_metadata"]
            if isinstance(m, dict) and isinstance(m.get("provenance"), dict)
        ]
        if kinds:
            return "user" in kinds
    return not _injected(payload.get("content"))


def _epoch(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _error_text(error: object) -> str | None:
    if error is None or error is False:
        return None
    if isinstance(error, dict):
        msg = error.get("message") or error.get("codex_error_info") or "error"
        return str(msg)[:300]
    return str(error)[:300]


class TurnTracker:
    """Feeds parsed rollout records into a cursor's per-turn state; returns terminal records."""

    def __init__(self, cursor: Cursor) -> None:
        self.cur = cursor

    def _turn(self, turn_id: object) -> dict[str, Any] | None:
        tid = turn_id if isinstance(turn_id, str) and turn_id else self.cur.current_turn
        if tid is None:
            return None
        turn = self.cur.turns.get(tid)
        if turn is None:
            # Evidence for a turn whose start we did not read: presence of a user message unknown.
            turn = self.cur.turns[tid] = {"user": None, "assistant": False, "invalid": 0, "started": False}
            self._bound()
        return turn

    def _bound(self) -> None:
        while len(self.cur.turns) > TURNS_KEPT:
            self.cur.turns.pop(next(iter(self.cur.turns)))

    def _mark_user(self, turn_id: object) -> None:
        turn = self._turn(turn_id)
        if turn is not None:
            turn["user"] = True

    def _mark_assistant(self, turn_id: object) -> None:
        turn = self._turn(turn_id)
        if turn is not None:
            turn["assistant"] = True

    def note_invalid(self) -> None:
        turn = self._turn(None)
        if turn is not None:
            turn["invalid"] = int(turn.get("invalid") or 0) + 1

    def feed(self, rec: dict[str, Any], start: int, end: int) -> Terminal | None:
        kind, payload = rec.get("type"), rec.get("payload")
        if not isinstance(payload, dict):
            return None
        if kind == "session_meta":
            ident = classify_session_meta(payload)
            self.cur.meta = {
                "thread_id": ident.thread_id,
                "classification": ident.classification,
                "parent_thread_id": ident.parent_thread_id,
                "root_thread_id": ident.root_session_id,
                "cwd": ident.cwd,
                "evidence": ident.evidence,
            }
            self.cur.thread_id = ident.thread_id or self.cur.thread_id
            return None
        if kind == "response_item":
            turn_id = (payload.get("internal_chat_message_metadata_passthrough") or {}).get("turn_id")
            if is_user_message(payload):
                self._mark_user(turn_id)
            elif payload.get("type") == "message" and payload.get("role") == "assistant":
                self._mark_assistant(turn_id)
            return None
        if kind != "event_msg":
            return None
        ptype = payload.get("type")
        if ptype == "task_started":
            tid = payload.get("turn_id")
            if isinstance(tid, str) and tid:
                attribution = payload.get("turn_attribution")
                trigger = attribution.get("turn_trigger") if isinstance(attribution, dict) else None
                self.cur.turns.pop(tid, None)
                self.cur.turns[tid] = {
                    "user": False,
                    "assistant": False,
                    "invalid": 0,
                    "started": True,
                    "trigger": trigger if isinstance(trigger, str) else None,
                }
                self.cur.current_turn = tid
                self._bound()
        elif ptype == "item_completed":
            item = payload.get("item")
            itype = item.get("type") if isinstance(item, dict) else None
            if itype == "UserMessage" and not _injected(item.get("content")):  # type: ignore[union-attr]
                self._mark_user(payload.get("turn_id"))
            elif itype == "AgentMessage":
                self._mark_assistant(payload.get("turn_id"))
            if isinstance(payload.get("thread_id"), str) and not self.cur.thread_id:
                self.cur.thread_id = payload["thread_id"]
        elif ptype == "user_message":  # Codex before 0.17x
            if not _injected(payload.get("message")):
                self._mark_user(payload.get("turn_id"))
        elif ptype == "agent_message":
            self._mark_assistant(payload.get("turn_id"))
        elif ptype in ("task_complete", "turn_aborted"):
            return self._terminal(rec, payload, start, end)
        return None

    def _terminal(self, rec: dict[str, Any], payload: dict[str, Any], start: int, end: int) -> Terminal:
        tid = payload.get("turn_id") if isinstance(payload.get("turn_id"), str) else None
        turn = self.cur.turns.pop(tid, None) if tid else None
        if turn is None and tid is None and self.cur.current_turn:
            turn = self.cur.turns.pop(self.cur.current_turn, None)
        if tid is None or tid == self.cur.current_turn:
            self.cur.current_turn = None
        turn = turn or {"user": None, "assistant": False, "invalid": 0}
        error = _error_text(payload.get("error")) if payload.get("type") == "task_complete" else None
        if payload.get("type") == "turn_aborted":
            outcome, final = "stopped", bool(turn.get("assistant"))
        else:
            outcome = "failed" if error else "done"
            last = payload.get("last_agent_message")
            final = (
                bool(last.strip())
                if isinstance(last, str)
                else ("last_agent_message" not in payload and bool(turn.get("assistant")))
            )
        last_message = payload.get("last_agent_message")
        duration = payload.get("duration_ms")
        self.cur.terminals += 1
        return Terminal(
            turn_id=tid,
            outcome=outcome,
            error=error,
            last_message=last_message if isinstance(last_message, str) else None,
            completed_at=_epoch(payload.get("completed_at")) or _epoch(rec.get("timestamp")),
            duration_ms=duration if isinstance(duration, int) and not isinstance(duration, bool) else None,
            has_user_message=turn.get("user"),
            has_final_message=final,
            turn_trigger=turn.get("trigger"),
            invalid_lines=int(turn.get("invalid") or 0),
            start=start,
            end=end,
        )


def sniff_oversized(tracker: TurnTracker, sniff: bytes) -> str:
    """Classify an oversized line from its first bytes; marks a user message it plainly is."""
    if b'"type":"task_complete"' in sniff or b'"type":"turn_aborted"' in sniff:
        return "terminal"
    if b'"type":"item_completed"' in sniff and b'"type":"UserMessage"' in sniff:
        m = _TURN_ID.search(sniff)
        tracker._mark_user(m.group(1).decode("utf-8", "replace") if m else None)
        return "user-message"
    return "other"


@dataclass(frozen=True)
class SourceContext:
    """Where evidence came from: stamped on every candidate of one scanner."""

    source: str  # "scanner" | "remote-scanner"
    codex_home: str
    sqlite_home: str
    origin: str | None
    include_message: bool


def submit_terminal(
    state: StateDir, ctx: SourceContext, cursor: Cursor, term: Terminal, fallback_classification: str | None = None
) -> Submitted:
    """Turn one terminal record into a pending candidate (root/unknown) or a subagent receipt."""
    meta = cursor.meta or {}
    thread_id = meta.get("thread_id") or cursor.thread_id
    key, weak = identity("codex", thread_id, term.turn_id)
    classification = meta.get("classification") or fallback_classification or "unknown"
    if classification == "unknown" and fallback_classification in ("root", "subagent"):
        classification = fallback_classification
    fields: dict[str, Any] = {
        "thread_id": thread_id,
        "turn_id": term.turn_id,
        "cwd": meta.get("cwd"),
        "transcript_path": cursor.path,
        "codex_home": ctx.codex_home,
        "sqlite_home": ctx.sqlite_home,
        "origin": ctx.origin,
        "outcome": term.outcome,
        "error": redact_optional(term.error),
        "classification": classification,
        "parent_thread_id": meta.get("parent_thread_id"),
        "root_thread_id": meta.get("root_thread_id") or (thread_id if classification == "root" else None),
        "has_user_message": term.has_user_message,
        "has_final_message": term.has_final_message,
        "completed_at": term.completed_at,
        "duration_ms": term.duration_ms,
        "turn_trigger": term.turn_trigger,
        "rollout_offset": term.start,
        "rollout_end": term.end,
    }
    if term.invalid_lines:
        fields["invalid_lines"] = term.invalid_lines
    if ctx.include_message and term.last_message:
        fields["last_message"] = redact(term.last_message)
    candidate = new_candidate(key=key, provider="codex", source=ctx.source, weak_identity=weak, **fields)
    candidate["probe"]["first_seen_at"] = now()
    if classification == "subagent":
        candidate.pop("last_message", None)
        return submit_suppressed(state, candidate, "subagent")
    return submit_candidate(state, candidate)
