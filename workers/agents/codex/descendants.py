"""Does a Codex root still have active descendants? (Recursive; the child's own rollout decides.)

Children come from ``state_5.thread_spawn_edges``, from ``threads.source`` (``codex exec``
children may have no edge row) and from recent rollouts whose ``session_meta`` names the parent.
An edge's ``status`` stays ``open`` after the child finished (docs/agent-facts.md), so it is never
trusted: each child's rollout tail is read instead.

Child states (``ChildState.state``):

``finished``   newest lifecycle record is a terminal one with a string turn id.
``running``    newest lifecycle record is ``task_started``, or nothing but session_meta yet.
``partial``    a trailing record without its newline: being written (transient busy).
``invalid``    malformed lifecycle JSON, invalid UTF-8 or a terminal without a string turn id:
               permanent invalid evidence; the root fails closed (strict *and* balanced).
``unknown``    no rollout found / unreadable: unknown evidence (probe grace applies).
``orphaned``   running/partial/invalid but silent for ``subagent_orphan_seconds``: no longer holds
               the root (a liveness trade-off, not proof the child succeeded).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from donebell.workers.agents.codex.rollout import Segment, TailCache
from donebell.workers.agents.codex.rollout_lines import Lifecycle
from donebell.workers.agents.codex.sources import Homes, child_ids, children_on_disk, find_rollout
from donebell.workers.kit.gate_context import GateContext

MAX_DEPTH = 8
MAX_CHILDREN = 256


@dataclass
class ChildState:
    thread_id: str
    state: str
    path: Path | None
    since: float | None  # when its current state began (task_started time, else file mtime)
    deadline: float | None  # when it becomes orphaned (mtime + subagent_orphan_seconds)
    evidence: str
    depth: int = 1


def tails(ctx: GateContext) -> TailCache:
    cache = ctx.persistent.get("tails")
    if cache is None:
        cache = ctx.persistent["tails"] = TailCache()
    assert isinstance(cache, TailCache)
    return cache


def inspect_child(ctx: GateContext, thread_id: str, path: Path | None, depth: int) -> ChildState:
    """The state of one child from its rollout tail."""
    orphan = ctx.settings.subagent_orphan_seconds
    if path is None:
        return ChildState(thread_id, "unknown", None, None, None, "child rollout not found", depth)
    try:
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        return ChildState(thread_id, "unknown", path, None, None, f"child rollout unreadable: {exc.strerror}", depth)
    deadline = mtime + orphan
    tail = tails(ctx).get(str(path))
    if tail is None or tail.error:
        return ChildState(
            thread_id, "unknown", path, None, None, f"child rollout unreadable: {tail and tail.error}", depth
        )
    newest = next((item for item in tail.items if isinstance(item, Lifecycle)), None)
    head = tail.items[0]
    assert isinstance(head, Segment)
    if newest is not None and newest.kind != "started" and newest.turn_id and not head.malformed and not tail.partial:
        return ChildState(thread_id, "finished", path, newest.at, None, f"{newest.kind} {newest.turn_id}", depth)
    if head.malformed or (newest is not None and newest.kind != "started" and not newest.turn_id):
        state = "invalid"
        why = "malformed/invalid UTF-8 lifecycle record" if head.malformed else "terminal record without a turn id"
    elif tail.partial:
        state, why = "partial", "trailing record still being written"
    elif newest is not None:
        state, why = "running", f"task_started {newest.turn_id}"
    else:
        state, why = "running", "no turn record yet (unknown-active tail)"
    since = newest.at if newest is not None and newest.at else mtime
    if ctx.now >= deadline:
        return ChildState(thread_id, "orphaned", path, since, deadline, f"{why}; silent {ctx.now - mtime:.0f}s", depth)
    return ChildState(thread_id, state, path, since, deadline, why, depth)


def descendants(ctx: GateContext, h: Homes, root: str) -> tuple[list[ChildState], list[str]]:
    """Every known descendant of ``root`` with its state (breadth first), plus notes."""
    notes: list[str] = []
    out: list[ChildState] = []
    seen = {root}
    frontier = [(root, 0)]
    since = ctx.now - ctx.settings.subagent_orphan_seconds
    while frontier and len(out) < MAX_CHILDREN:
        parent, depth = frontier.pop(0)
        if depth >= MAX_DEPTH:
            notes.append(f"descendant depth limit {MAX_DEPTH} reached under {parent}")
            continue
        ids, more = child_ids(ctx, h, parent)
        notes.extend(more)
        on_disk = children_on_disk(ctx, h, parent, since)
        for child in sorted(ids | set(on_disk)):
            if child in seen:
                continue
            seen.add(child)
            path = on_disk.get(child) or find_rollout(ctx, h, child)
            out.append(inspect_child(ctx, child, path, depth + 1))
            frontier.append((child, depth + 1))
    return out, sorted(set(notes))
