"""The Codex logical-idle gate on real rollouts and SQLite databases (strict, balanced, off).

Subagents (children holding or releasing their root) are in test_gate_codex_children.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from fixtures.gate.kit import (
    ABORT_THREAD,
    ABORT_TURN,
    ERROR_THREAD,
    ERROR_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    ev,
    fast_settings,
    gate,
    last_decision,
    later,
    lines_of,
    turn_records,
    where,
)


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


def test_stop_after_task_complete_promotes_with_outcome_and_stats(world: CodexWorld, state: StateDir) -> None:
    """A root Stop whose task_complete is in the rollout becomes one outbox record with duration and tokens."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    result = gate(state, fast_settings())
    assert result.promoted == 1 and where(state, key) == "outbox"
    rec = state.read("outbox", key)
    assert rec is not None
    assert rec["verdict"] == "idle" and rec["outcome"] == "done"
    assert rec["stats"] == {"duration_ms": 1444, "total_tokens": 110}
    assert rec["probe"]["history"][-1]["decision"] == "promote"


def test_stop_before_task_complete_waits_then_promotes(world: CodexWorld, state: StateDir) -> None:
    """Codex runs Stop before writing task_complete: the candidate waits for it, then promotes."""
    recs = lines_of("simple-exec.jsonl")
    world.write_rollout(SIMPLE_THREAD, recs[:-1])
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    result = gate(state, fast_settings())
    assert result.waiting == 1 and where(state, key) == "pending"
    assert last_decision(state, key)["last"]["reason"] == "awaiting-completion"
    assert result.next_due is not None and result.next_due <= time.time() + 1
    assert world.rollout_path(SIMPLE_THREAD) in result.watch_paths
    world.append(SIMPLE_THREAD, recs[-1:])
    assert gate(state, fast_settings()).promoted == 1 and where(state, key) == "outbox"


def test_real_notify_turn_without_event_msg_user_message_is_not_technical(world: CodexWorld, state: StateDir) -> None:
    """Real 0.171 rollouts have no event_msg/user_message; a notify candidate of a real turn still promotes."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.add_thread(SIMPLE_THREAD)
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN, source="codex-notify")
    assert gate(state, fast_settings()).promoted == 1 and where(state, key) == "outbox"


@pytest.mark.parametrize(
    ("source", "expected"), [("codex-notify", "suppressed"), ("scanner", "suppressed"), ("codex-stop", "outbox")]
)
def test_technical_turn_suppressed_for_legacy_sources_only(
    world: CodexWorld, state: StateDir, source: str, expected: str
) -> None:
    """A turn without a user message is technical for notify/scanner candidates; a root Stop bypasses it."""
    world.write_rollout(SIMPLE_THREAD, [world.root(SIMPLE_THREAD), *turn_records("t-tech", user=False)])
    world.add_thread(SIMPLE_THREAD)
    key = world.submit(SIMPLE_THREAD, "t-tech", source=source)
    gate(state, fast_settings())
    assert where(state, key) == expected
    if expected == "suppressed":
        assert last_decision(state, key)["reason"] == "technical-turn"


def test_later_task_started_supersedes_the_earlier_turn(world: CodexWorld, state: StateDir) -> None:
    """A later task_started makes the earlier completion an obsolete predecessor: superseded."""
    world.write_rollout(SIMPLE_THREAD, [*lines_of("simple-exec.jsonl"), ev("task_started", "t-next")])
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    gate(state, fast_settings())
    assert where(state, key) == "suppressed" and last_decision(state, key)["reason"] == "superseded"


def test_goal_auto_continuation_coalesces_into_one_notification(world: CodexWorld, state: StateDir) -> None:
    """46-turns-style goal continuation: every turn notifies, but only the last one (after the goal ends) is sent."""
    turns = ["t-user", *[f"t-goal-{i}" for i in range(6)]]
    recs = [world.root(SIMPLE_THREAD)]
    for i, turn in enumerate(turns):
        recs += turn_records(
            turn, trigger="exec" if i == 0 else "goal", user=i == 0, tokens=100 * (i + 1), duration_ms=10
        )
    world.write_rollout(SIMPLE_THREAD, recs)
    world.add_thread(SIMPLE_THREAD)
    world.set_goal(SIMPLE_THREAD, "active")
    sources = ["codex-stop", "codex-notify", "scanner"]
    # The last (message-less) continuation turn comes from the scanner: a terminal goal exempts it.
    keys = [world.submit(SIMPLE_THREAD, turn, source=sources[(i + 2) % 3]) for i, turn in enumerate(turns)]
    gate(state, fast_settings())
    assert [where(state, k) for k in keys[:-1]] == ["suppressed"] * (len(turns) - 1)
    assert where(state, keys[-1]) == "pending"
    assert last_decision(state, keys[-1])["last"]["reason"] == "goal-active"
    world.set_goal(SIMPLE_THREAD, "budget_limited")
    assert gate(state, fast_settings()).promoted == 1
    assert state.count("outbox") == 1
    rec = state.read("outbox", keys[-1])
    assert rec is not None and rec["stats"] == {"duration_ms": 70, "total_tokens": 700}


@pytest.mark.parametrize("status", ["complete", "paused", "blocked", "usage_limited", "budget_limited"])
def test_non_active_goal_statuses_release(world: CodexWorld, state: StateDir, status: str) -> None:
    """Every goal status other than active lets the root notification through."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.set_goal(SIMPLE_THREAD, status)
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    gate(state, fast_settings())
    assert where(state, key) == "outbox"


def test_active_goal_holds_and_unavailable_goal_db_does_not(world: CodexWorld, state: StateDir) -> None:
    """An active goal holds the candidate; a missing goals database alone is not 'active'."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    world.set_goal(SIMPLE_THREAD, "active")
    gate(state, fast_settings())
    assert where(state, key) == "pending"
    assert gate(state, fast_settings(goal_aware=False)).promoted == 1
    (world.home / "goals_1.sqlite").unlink()
    key2 = world.submit(SIMPLE_THREAD, "t-two")
    world.append(SIMPLE_THREAD, turn_records("t-two"))
    gate(state, fast_settings())
    assert where(state, key2) == "outbox"
    assert "goal database unavailable" in state.read("outbox", key2)["probe"]["history"][-1]["evidence"]  # type: ignore[index]


def test_failed_turn_notifies_as_failure(world: CodexWorld, state: StateDir) -> None:
    """task_complete with an error field (HTTP 500) is promoted with outcome failed and the error text."""
    world.write_rollout(ERROR_THREAD, lines_of("error-http500-task_complete-with-error.jsonl"))
    world.add_thread(ERROR_THREAD)
    key = world.submit(ERROR_THREAD, ERROR_TURN, source="scanner")
    gate(state, fast_settings())
    rec = state.read("outbox", key)
    assert rec is not None and rec["outcome"] == "failed" and "high demand" in rec["error"]


def test_sigint_abort_notifies_as_stopped(world: CodexWorld, state: StateDir) -> None:
    """turn_aborted (SIGINT) is promoted with outcome stopped."""
    world.write_rollout(ABORT_THREAD, lines_of("abort-sigint-turn_aborted.jsonl"))
    world.add_thread(ABORT_THREAD)
    key = world.submit(ABORT_THREAD, ABORT_TURN, source="scanner")
    gate(state, fast_settings())
    rec = state.read("outbox", key)
    assert rec is not None and rec["outcome"] == "stopped"


@pytest.mark.parametrize(("mode", "expected"), [("strict", "suppressed"), ("balanced", "outbox")])
def test_sigkill_without_terminal_record(world: CodexWorld, state: StateDir, mode: str, expected: str) -> None:
    """SIGKILL leaves no terminal record: strict suppresses it as unverifiable after the grace; balanced may send."""
    world.write_rollout(ABORT_THREAD, lines_of("abort-sigint-turn_aborted.jsonl")[:10])
    key = world.submit(ABORT_THREAD, ABORT_TURN)
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=30)
    gate(state, settings)
    assert where(state, key) == "pending"
    world.age(ABORT_THREAD, 60)
    gate(state, settings, later(31))
    assert where(state, key) == expected
    if mode == "strict":
        assert last_decision(state, key)["reason"] == "unverifiable"
    else:
        assert state.read("outbox", key)["verdict"] == "balanced"  # type: ignore[index]


def test_unknown_classification_retried_then_unverifiable(world: CodexWorld, state: StateDir) -> None:
    """No rollout and no thread row: retried with growing intervals, then strict suppresses as unverifiable."""
    key = world.submit("0000-missing", "t1", source="codex-notify", classification="unknown")
    settings = fast_settings(idle_probe_grace_seconds=60, unknown_retry_max_seconds=8)
    now = time.time()
    delays = []
    for step in range(4):
        run = gate(state, settings, now + step)
        assert run.next_due is not None
        delays.append(run.next_due - (now + step))
    assert delays == sorted(delays) and max(delays) <= 8.001
    gate(state, settings, now + 61)
    assert where(state, key) == "suppressed" and last_decision(state, key)["reason"] == "unverifiable"


def test_quiet_window_holds_until_rollout_unchanged(world: CodexWorld, state: StateDir) -> None:
    """The rollout must stay unchanged for idle_grace_seconds before promotion."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    settings = fast_settings(idle_grace_seconds=5)
    gate(state, settings)
    assert last_decision(state, key)["last"]["reason"] == "quiet-window"
    gate(state, settings, later(6))
    assert where(state, key) == "outbox"


def test_off_mode_promotes_every_candidate_at_once(world: CodexWorld, state: StateDir) -> None:
    """idle_detection_mode off queues each accepted completion immediately, even before task_complete."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl")[:-1])
    world.set_goal(SIMPLE_THREAD, "active")
    keys = [world.submit(SIMPLE_THREAD, SIMPLE_TURN), world.submit(SIMPLE_THREAD, "t2", source="codex-notify")]
    assert gate(state, fast_settings(idle_detection_mode="off")).promoted == 2
    assert all(where(state, k) == "outbox" for k in keys)
    assert state.read("outbox", keys[0])["verdict"] == "off"  # type: ignore[index]


def test_unrelated_roots_are_independent(world: CodexWorld, state: StateDir) -> None:
    """Coalescing is per root thread: a busy root never delays another root."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.write_rollout(ERROR_THREAD, lines_of("error-http500-task_complete-with-error.jsonl")[:-1])
    done = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    busy = world.submit(ERROR_THREAD, ERROR_TURN)
    gate(state, fast_settings())
    assert where(state, done) == "outbox" and where(state, busy) == "pending"


def test_balanced_fallback_still_sends_one_per_root(world: CodexWorld, state: StateDir) -> None:
    """Without rollout evidence, balanced promotes after the grace, but only the newest candidate of a root."""
    settings = fast_settings(idle_detection_mode="balanced", idle_probe_grace_seconds=10)
    older = world.submit("0000-no-rollout", "t1", source="codex-notify")
    time.sleep(0.01)
    newer = world.submit("0000-no-rollout", "t2", source="codex-notify")
    gate(state, settings)
    assert state.count("pending") == 2
    gate(state, settings, later(11))
    assert where(state, newer) == "outbox" and where(state, older) == "suppressed"
    assert last_decision(state, older)["reason"] == "superseded"
    assert state.read("outbox", newer)["verdict"] == "balanced"  # type: ignore[index]


def test_unknown_provider_is_unverifiable_after_the_grace(state: StateDir) -> None:
    """A candidate of a provider without a gate is never sent in strict mode."""
    from donebell.shared import ingest, records

    rec = records.new_candidate(key="ab" * 32, provider="other", source="x")
    ingest.submit_candidate(state, rec)
    settings = fast_settings(idle_probe_grace_seconds=10)
    gate(state, settings)
    assert where(state, rec["key"]) == "pending"
    gate(state, settings, later(11))
    assert last_decision(state, rec["key"])["reason"] == "unverifiable"


def test_active_goal_of_a_silent_thread_is_orphaned(world: CodexWorld, state: StateDir) -> None:
    """`codex exec` exits with the goal still active (continuation aborted): after the orphan bound it notifies once."""
    recs = [
        *lines_of("simple-exec.jsonl"),
        *turn_records("t-cont", trigger="goal", user=False, final=False, terminal="turn_aborted"),
    ]
    world.write_rollout(SIMPLE_THREAD, recs)
    world.add_thread(SIMPLE_THREAD)
    world.set_goal(SIMPLE_THREAD, "active")
    first = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    cont = world.submit(SIMPLE_THREAD, "t-cont", source="scanner")
    settings = fast_settings(subagent_orphan_seconds=60)
    gate(state, settings)
    assert where(state, first) == "suppressed" and last_decision(state, cont)["last"]["reason"] == "goal-active"
    world.age(SIMPLE_THREAD, 120)
    gate(state, settings)
    rec = state.read("outbox", cont)
    assert (
        rec is not None and rec["outcome"] == "stopped" and "orphaned goal" in rec["probe"]["history"][-1]["evidence"]
    )
