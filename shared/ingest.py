"""Submitting evidence to the state directory: how every source turns a signal into state.

Hooks, the legacy notify and both scanners call these two functions, so a hook and a scanner
reporting the same turn converge on one record (same key) and a repeated signal never creates a
second notification. Standard library only (the hook path imports it).
"""

from __future__ import annotations

from donebell.shared.records import new_receipt
from donebell.shared.statedir import DEAD, OUTBOX, PENDING, SENT, SUPPRESSED, InvalidRecord, StateDir, now

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    from donebell.shared.record_types import Candidate, ReceiptReason

    Submitted = Literal["created", "merged", "duplicate", "suppressed"]

#: Evidence fields a later signal may fill in when the pending record does not have them yet.
_MERGEABLE = (
    "outcome",
    "error",
    "cwd",
    "transcript_path",
    "codex_home",
    "sqlite_home",
    "origin",
    "last_message",
    "has_user_message",
    "has_final_message",
    "classification",
    "parent_thread_id",
    "root_thread_id",
    "completed_at",
    "duration_ms",
)


def submit_candidate(state: StateDir, candidate: Candidate, *, refresh: bool = False) -> Submitted:
    """Create ``pending/<key>`` or merge into the existing pending record, under the key's lock.

    * absent everywhere -> created;
    * pending -> merged: the new source is added, missing evidence filled in (with ``refresh``,
      e.g. a repeated Claude Stop for the same prompt, the new values win), ``revision`` bumped;
    * outbox / sent / suppressed / dead -> duplicate: nothing changes (never a second notification),
      except a root's Codex Stop after a ``technical-turn`` receipt, which reopens the key (created).
    """
    key = candidate["key"]
    with state.mutation_lock(key):
        where = state.locate(key)
        if where is None:
            state.create(PENDING, candidate)
            return "created"
        if where == SUPPRESSED and _reopens(state, candidate):
            return "created"
        if where != PENDING:
            return "duplicate"
        try:
            current = state.read(PENDING, key)
        except InvalidRecord as exc:
            # The wreck goes to dead/ under a fresh key; this signal's evidence takes its place.
            state.dead_letter_invalid(PENDING, f"{key}.json", str(exc))
            state.create(PENDING, candidate)
            return "created"
        if current is None:  # promoted or finished between locate and read: it moved on
            return "duplicate"
        merged = merge_evidence(current, candidate, refresh=refresh)
        state.replace(PENDING, merged)
        return "merged"


def _reopens(state: StateDir, candidate: Candidate) -> bool:
    """A root's own Stop after a ``technical-turn`` receipt (nothing was sent) reopens the key.

    The technical-turn heuristic judges scanner/notify evidence without the agent's word; a Stop is
    that word, and the gate never applies the heuristic to a Stop. The candidate (marked
    ``reopened_from``) is created before the receipt is removed; after a crash in between, the gate
    finishes the reopening (:func:`finish_reopen`) instead of removing the candidate as debris.
    Called under the key's lock.
    """
    if candidate.get("source") != "codex-stop" or candidate.get("classification") == "subagent":
        return False
    key = candidate["key"]
    try:
        receipt = state.read(SUPPRESSED, key)
    except InvalidRecord:
        return False
    if receipt is None or receipt.get("reason") != "technical-turn":
        return False
    state.create(PENDING, {**candidate, "reopened_from": "technical-turn"})
    state.remove(SUPPRESSED, key)
    return True


def finish_reopen(state: StateDir, record: dict[str, Any]) -> bool:
    """Remove the ``technical-turn`` receipt a reopened candidate was meant to replace; True if done.

    For the gate's recovery of "both exist": a pending copy beside a receipt is crash debris, except
    a reopening interrupted between its two steps (then the receipt goes, the candidate stays).
    """
    if record.get("reopened_from") != "technical-turn":
        return False
    key = record["key"]
    with state.mutation_lock(key):
        if any(state.exists(folder, key) for folder in (OUTBOX, SENT, DEAD)):
            return False
        try:
            receipt = state.read(SUPPRESSED, key)
        except InvalidRecord:
            return False
        if receipt is None:
            return True  # nothing beside it any more: not debris
        if receipt.get("reason") != "technical-turn":
            return False
        state.remove(SUPPRESSED, key)
        state.log("info", "reopened candidate: its technical-turn receipt removed", key=key)
        return True


def merge_evidence(current: dict[str, Any], new: Mapping[str, Any], *, refresh: bool = False) -> dict[str, Any]:
    """``current`` with ``new``'s source and evidence folded in, revision bumped."""
    merged = dict(current)
    sources = list(merged.get("sources") or [])
    if new.get("source") and new["source"] not in sources:
        sources.append(new["source"])
    merged["sources"] = sources
    for name in _MERGEABLE:
        value = new.get(name)
        if value is None:
            continue
        if refresh or merged.get(name) in (None, "", "unknown"):
            merged[name] = value
    if refresh:
        for name, value in new.items():
            if name not in ("key", "created_at", "probe", "sources", "revision", "schema", "kind"):
                merged[name] = value
    merged["revision"] = int(merged.get("revision") or 1) + 1
    merged["updated_at"] = now()
    return merged


def submit_suppressed(state: StateDir, record: Mapping[str, Any], reason: ReceiptReason) -> Submitted:
    """Record that this key never notifies (e.g. a child thread): a ``suppressed/`` receipt.

    A pending candidate of the same key is finished into the receipt; a key already in the outbox
    or final is left alone (an outbox record is never demoted).
    """
    key = record["key"]
    with state.mutation_lock(key):
        where = state.locate(key)
        if where == PENDING:
            current = state.read(PENDING, key) or record
            state.finish(PENDING, SUPPRESSED, new_receipt(current, status="suppressed", reason=reason))
            return "suppressed"
        if where is not None:
            return "duplicate"
        state.create(SUPPRESSED, new_receipt(record, status="suppressed", reason=reason))
        return "suppressed"


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """``Submitted`` for runtime imports of the alias (typing is loaded on first access)."""
        if name == "Submitted":
            from typing import Literal

            return Literal["created", "merged", "duplicate", "suppressed"]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
