"""The Codex logical-idle gate with subagents: a running child holds its root, a finished one releases
it, an orphaned or unreadable child times out or keeps the root pending, and a known subagent's own
candidate is suppressed (real rollouts and SQLite databases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import StateDir
from fixtures.gate.kit import (
    CHILD_THREAD,
    PARENT_THREAD,
    PARENT_TURN,
    CodexWorld,
    fast_settings,
    gate,
    last_decision,
    later,
    lines_of,
    where,
)


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


def _family(
    world: CodexWorld, child_recs: list[dict[str, Any]] | bytes, *, edge: bool = True, thread_row: bool = True
) -> str:
    world.write_rollout(PARENT_THREAD, lines_of("subagent-parent.jsonl"))
    world.write_rollout(CHILD_THREAD, child_recs)
    world.add_thread(PARENT_THREAD)
    if thread_row:
        world.add_thread(
            CHILD_THREAD, source=f'{{"subagent":{{"thread_spawn":{{"parent_thread_id":"{PARENT_THREAD}","depth":1}}}}}}'
        )
    if edge:
        world.add_edge(PARENT_THREAD, CHILD_THREAD)
    return world.submit(PARENT_THREAD, PARENT_TURN)


def test_running_child_delays_root_and_finished_child_releases_it(world: CodexWorld, state: StateDir) -> None:
    """A child ending in task_started holds the root (edge still 'open'); its task_complete releases it."""
    child = lines_of("subagent-child.jsonl")
    key = _family(world, child[:9])
    gate(state, fast_settings())
    decision = last_decision(state, key)
    assert decision["folder"] == "pending" and decision["last"]["reason"] == "child-running"
    assert decision["record"]["probe"]["waiting_for"]["child"] == CHILD_THREAD
    world.write_rollout(CHILD_THREAD, child)
    gate(state, fast_settings())
    assert where(state, key) == "outbox"


def test_orphaned_child_times_out(world: CodexWorld, state: StateDir) -> None:
    """A child silent for subagent_orphan_seconds no longer holds its root."""
    key = _family(world, lines_of("subagent-child.jsonl")[:9])
    gate(state, fast_settings(subagent_orphan_seconds=60))
    assert where(state, key) == "pending"
    world.age(CHILD_THREAD, 120)
    gate(state, fast_settings(subagent_orphan_seconds=60))
    assert where(state, key) == "outbox"
    assert "orphaned" in state.read("outbox", key)["probe"]["history"][-1]["evidence"]  # type: ignore[index]


@pytest.mark.parametrize("found_by", ["threads.source", "session_meta"])
def test_child_without_edge_row_still_holds_root(world: CodexWorld, state: StateDir, found_by: str) -> None:
    """`codex exec` children may have no edge row: threads.source or the child's session_meta finds them."""
    child = lines_of("subagent-child.jsonl")
    key = _family(world, child[:9], edge=False, thread_row=found_by == "threads.source")
    gate(state, fast_settings())
    assert last_decision(state, key)["last"]["reason"] == "child-running"
    world.write_rollout(CHILD_THREAD, child)
    gate(state, fast_settings())
    assert where(state, key) == "outbox"


BAD_CHILD_TAILS = {
    "malformed-json": b'{"timestamp":"x","type":"event_msg","payload":{"type":"task_complete","turn_id":\n',
    "invalid-utf8": b'{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t\xff\xfe"}}\n',
    "missing-turn-id": b'{"type":"event_msg","payload":{"type":"task_complete","turn_id":null}}\n',
    "partial-line": b'{"type":"event_msg","payload":{"type":"task_compl',
}


@pytest.mark.parametrize("mode", ["strict", "balanced"])
@pytest.mark.parametrize("bad", sorted(BAD_CHILD_TAILS))
def test_bad_child_evidence_keeps_root_pending(world: CodexWorld, state: StateDir, mode: str, bad: str) -> None:
    """Malformed / invalid-UTF-8 / turn-id-less / half-written child evidence never releases the root, even after the probe grace."""
    from fixtures.gate.kit import dump

    child = dump(lines_of("subagent-child.jsonl")[:9]) + BAD_CHILD_TAILS[bad]
    key = _family(world, child)
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=5)
    gate(state, settings)
    gate(state, settings, later(600))
    decision = last_decision(state, key)
    assert decision["folder"] == "pending"
    expected = "child-partial" if bad == "partial-line" else "child-invalid"
    assert decision["last"]["reason"] == expected


def test_known_subagent_candidate_is_suppressed(world: CodexWorld, state: StateDir) -> None:
    """A child's legacy notify (classification unknown at capture) is suppressed as subagent."""
    world.write_rollout(CHILD_THREAD, lines_of("subagent-child.jsonl"))
    from fixtures.gate.kit import CHILD_TURN

    key = world.submit(CHILD_THREAD, CHILD_TURN, source="codex-notify", classification="unknown")
    gate(state, fast_settings())
    assert where(state, key) == "suppressed" and last_decision(state, key)["reason"] == "subagent"
