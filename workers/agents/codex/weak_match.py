"""A Codex Stop without ``turn_id``: find the rollout turn it belongs to and merge it into that key.

Such a Stop gets a weak random key (``keys.identity``), while the rollout scanner reports the same
turn under its real key ``(thread, turn)``: left alone, the two would become two notifications
with two sequence ids. The gate therefore matches a weak candidate that names its thread to one
turn of that thread's rollout, *the turn whose lifecycle is nearest to the Stop's capture time*:
a Stop fires just before its turn's ``task_complete`` (tens of milliseconds), so the nearest event
is our terminal, or, while the turn is still open, our ``task_started`` (a previous turn's
terminal lies before it). The weak candidate is then folded into ``pending/<real key>``
(:func:`merge_into`, the same :func:`~donebell.shared.ingest.submit_candidate` every source uses)
and finished with a ``merged`` receipt; the real key is judged as any candidate with a Stop.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.rollout import Item
from donebell.workers.agents.codex.rollout_lines import Lifecycle

MERGED = "merged"
#: Lifecycle events looked at: the nearest is almost always among the last few turns.
MATCH_EVENTS = 8


def enough(items: list[Item]) -> bool:
    """Scan need: :data:`MATCH_EVENTS` lifecycle events (or the file start)."""
    return sum(isinstance(item, Lifecycle) for item in items) >= MATCH_EVENTS


def nearest_turn(items: list[Item], captured_at: float) -> Lifecycle | None:
    """The terminal or still-open start nearest in time to ``captured_at`` (newest on a tie)."""
    events = [item for item in items if isinstance(item, Lifecycle) and item.turn_id]
    closed = {e.turn_id for e in events if e.kind != "started"}
    usable = [e for e in events if e.kind != "started" or e.turn_id not in closed]
    if not usable:
        return None
    timed = [e for e in usable if e.at is not None]
    if not timed:
        return usable[0]  # newest first: without times, the latest turn
    return min(timed, key=lambda e: abs(float(e.at or 0.0) - captured_at))


def merge_into(state: StateDir, weak: dict[str, Any], fields: dict[str, Any]) -> str:
    """Fold the weak candidate ``weak`` into the real key named in ``fields``; the submit result.

    Called outside the weak key's mutation lock (the hook never holds two, nor does the gate), and
    before the weak candidate is finished: a crash in between leaves it pending, and the next
    pass merges again (a source already merged changes nothing).
    """
    turn_id = fields["turn_id"]
    candidate = {
        name: value for name, value in weak.items() if name not in ("probe", "revision", "updated_at", "sources")
    }
    candidate.update(
        key=event_key("codex", weak["thread_id"], turn_id), turn_id=turn_id, weak_identity=False, revision=1
    )
    candidate["sources"] = [weak.get("source")]
    candidate["merged_from"] = weak["key"]
    result: str = submit_candidate(state, candidate)
    state.log("info", "weak Stop merged into its turn's key", key=candidate["key"], weak_key=weak["key"], result=result)
    return result
