"""A Codex Stop without ``turn_id``: find the rollout turn it belongs to and merge it into that key.

Such a Stop gets a weak random key (``keys.identity``), while the rollout scanner reports the same
turn under its real key ``(thread, turn)``: left alone, the two would become two notifications
with two sequence ids. The gate therefore matches a weak candidate that names its thread to one
turn of that thread's rollout, *the turn whose lifecycle is nearest to the Stop's capture time*:
a Stop fires just before its turn's ``task_complete`` (tens of milliseconds), so the nearest event
is our terminal, or, while the turn is still open, our ``task_started`` (a previous turn's
terminal lies before it). The gate's verdict names the real key (``merged_into``) and the commit folds the weak candidate
into it (``workers/kit/weak_merge.py``), as for any agent's weak candidate.
"""

from __future__ import annotations

from donebell.workers.agents.codex.rollout import Item
from donebell.workers.agents.codex.rollout_lines import Lifecycle

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
