"""What a rollout tail says about one turn: its completion, anything after it, its markers, stats.

Pure functions over :class:`~donebell.workers.agents.codex.rollout.Tail` items (newest first), so the same
summary answers every candidate of a rollout (46 goal-continuation turns cost one scan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from donebell.workers.agents.codex.rollout import Item, Segment
from donebell.workers.agents.codex.rollout_lines import Lifecycle


@dataclass
class TurnView:
    """The facts about turn ``turn_id`` in the scanned part of its rollout."""

    turn_id: str
    terminal: Lifecycle | None = None  # our task_complete / turn_aborted
    started: Lifecycle | None = None  # our task_started
    newer: list[Lifecycle] = field(default_factory=list)  # other turns' events after ours (newest first)
    malformed_after: int = 0  # malformed lines newer than our last event
    oversized_after: int = 0
    user: bool = False  # a person's message inside our turn
    agent: bool = False  # an assistant message inside our turn (or last_agent_message)
    markers_complete: bool = False  # the whole turn (from its task_started) was scanned
    chain_start: Lifecycle | None = None  # first turn of a goal-continuation chain ending with ours
    stats: dict[str, Any] | None = None

    @property
    def found(self) -> bool:
        return self.terminal is not None or self.started is not None

    @property
    def later_started(self) -> Lifecycle | None:
        """The first turn started after ours (what makes ours an obsolete predecessor)."""
        starts = [e for e in self.newer if e.kind == "started"]
        return starts[-1] if starts else (self.newer[-1] if self.newer else None)


def view(items: list[Item], turn_id: str, *, at_file_start: bool = False) -> TurnView:
    """Summarize ``items`` (newest first) for ``turn_id``."""
    out = TurnView(turn_id)
    i = 0
    # 1. Everything newer than our turn's newest event.
    while i < len(items):
        item = items[i]
        if isinstance(item, Segment):
            out.malformed_after += item.malformed
            out.oversized_after += item.oversized
        elif item.turn_id == turn_id:
            break
        else:
            out.newer.append(item)
        i += 1
    if i >= len(items):
        out.malformed_after = sum(s.malformed for s in items if isinstance(s, Segment))
        return out
    first = items[i]
    assert isinstance(first, Lifecycle)
    if first.kind in ("complete", "aborted"):
        out.terminal = first
        out.agent = first.has_message
    tokens_end: int | None = None
    # 2. Our turn, back to its task_started.
    for j in range(i if out.terminal is None else i + 1, len(items)):
        item = items[j]
        if isinstance(item, Segment):
            out.user |= item.user
            out.agent |= item.agent
            if tokens_end is None:
                tokens_end = item.tokens
            continue
        if item.turn_id == turn_id and item.kind == "started":
            out.started = item
            out.markers_complete = True
            out.stats = _stats(items, j, out, tokens_end, at_file_start)
            break
    return out


def _stats(
    items: list[Item], start_index: int, out: TurnView, tokens_end: int | None, at_file_start: bool
) -> dict[str, Any]:
    """Duration and tokens of the task: our turn plus the goal-continuation turns before it."""
    duration = out.terminal.duration_ms if out.terminal and out.terminal.duration_ms is not None else 0
    turns = 1
    chain_start = items[start_index]
    assert isinstance(chain_start, Lifecycle)
    j = start_index + 1
    # A continuation turn (trigger "goal") belongs to the task the previous turn began.
    while chain_start.trigger == "goal" and j < len(items):
        item = items[j]
        if isinstance(item, Lifecycle):
            if item.kind in ("complete", "aborted"):
                duration += item.duration_ms or 0
                turns += 1
            elif item.kind == "started":
                chain_start = item
        j += 1
    out.chain_start = chain_start
    baseline: int | None = None
    for item in items[items.index(chain_start) + 1 :]:
        if isinstance(item, Segment) and item.tokens is not None:
            baseline = item.tokens
            break
    if baseline is None and at_file_start:
        baseline = 0
    total = tokens_end - baseline if tokens_end is not None and baseline is not None else None
    return {"duration_ms": duration, "total_tokens": total, "turns": turns}


def needs_more(items: list[Item], turn_id: str) -> bool:
    """True while the scan has not yet covered our turn's start and the segment before it."""
    v = view(items, turn_id)
    if v.started is None:
        return True
    start = v.chain_start or v.started
    index = next((k for k, item in enumerate(items) if item is start), len(items))
    # Satisfied once the previous turn's token count (the stats baseline) is in, or two older
    # lifecycle events show there is none to find.
    older = items[index + 1 :]
    if any(isinstance(item, Segment) and item.tokens is not None for item in older):
        return False
    return sum(isinstance(item, Lifecycle) for item in older) < 2
