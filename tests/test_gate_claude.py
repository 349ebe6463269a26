"""The Claude Code transcript gate on real transcripts: epochs, goals, lag, background tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import StateDir
from fixtures.gate.claude_kit import ClaudeWorld, claude_lines, goal_marker
from fixtures.gate.kit import fast_settings, gate, last_decision, later, where

TOOL_SESSION = "bcd90786-c5dc-4556-ab76-41b75d464f9d"
TOOL_PROMPT = "b522e1c8-ef06-4602-a43c-969646624918"
BG_SESSION = "24849645-57ba-4266-96e1-e64ebcd119f0"
BG_PROMPT_1 = "3d72d93b-7f44-4b34-ae1e-01c9a56abd57"
BG_PROMPT_2 = "89692b89-b063-4fbc-8aae-2fc73e86f853"
ERR_SESSION = "ff6390f8-de8d-4904-a4d4-bbcff7bd4ca5"
ERR_PROMPT = "5bae760a-e813-4ede-bc16-c0daf1b84e94"


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> ClaudeWorld:
    return ClaudeWorld(isolated_env["claude_dir"] / "projects" / "-w", state)


def _tool_session(world: ClaudeWorld, extra: list[dict[str, Any]] | None = None, cut: int | None = None) -> str:
    recs = claude_lines("print-tool.jsonl")[:cut] + (extra or [])
    world.transcript(TOOL_SESSION, recs)
    world.session_record(TOOL_SESSION, 1, TOOL_PROMPT)
    return world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1)


def test_plain_stop_settles_then_promotes(world: ClaudeWorld, state: StateDir) -> None:
    """A main-agent Stop waits a short settle time for the transcript, then promotes as done."""
    key = _tool_session(world)
    gate(state, fast_settings())
    assert last_decision(state, key)["last"]["reason"] == "transcript-settling"
    gate(state, fast_settings(), later(1))
    rec = state.read("outbox", key)
    assert rec is not None and rec["outcome"] == "done" and rec["verdict"] == "idle"


def test_transcript_lag_waits_for_the_final_record(world: ClaudeWorld, state: StateDir) -> None:
    """The transcript may end at a tool result when Stop fires: the gate waits, then promotes once it lands."""
    key = _tool_session(world, cut=8)
    gate(state, fast_settings(), later(1))
    assert last_decision(state, key)["last"]["reason"] == "transcript-lag"
    world.append(TOOL_SESSION, claude_lines("print-tool.jsonl")[8:])
    gate(state, fast_settings(), later(1))
    assert where(state, key) == "outbox"


def test_missing_transcript_waits_then_appears(world: ClaudeWorld, state: StateDir) -> None:
    """At Stop time the transcript file may not exist yet (first flush): wait, never decide on nothing."""
    world.session_record(TOOL_SESSION, 1, TOOL_PROMPT)
    key = world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1)
    gate(state, fast_settings(), later(1))
    assert last_decision(state, key)["last"]["reason"] == "transcript-lag"
    world.transcript(TOOL_SESSION, claude_lines("print-tool.jsonl"))
    gate(state, fast_settings(), later(1))
    assert where(state, key) == "outbox"


@pytest.mark.parametrize("anchored", [True, False])
def test_background_task_completion_supersedes_the_first_prompt(
    world: ClaudeWorld, state: StateDir, anchored: bool
) -> None:
    """A background task's completion re-enters as a new prompt: only that later prompt notifies."""
    world.transcript(BG_SESSION, claude_lines("print-background.jsonl"))
    if anchored:
        world.session_record(BG_SESSION, 2, BG_PROMPT_2)
    first = world.submit(BG_SESSION, BG_PROMPT_1, epoch=1 if anchored else 0)
    second = world.submit(BG_SESSION, BG_PROMPT_2, epoch=2 if anchored else 0)
    gate(state, fast_settings(), later(1))
    assert where(state, first) == "suppressed" and last_decision(state, first)["reason"] == "superseded"
    assert where(state, second) == "outbox" and state.count("outbox") == 1


def test_stop_failure_is_terminal_and_notifies_as_failed(world: ClaudeWorld, state: StateDir) -> None:
    """StopFailure (API error 529) is terminal by definition: promoted at once with outcome failed."""
    world.transcript(ERR_SESSION, claude_lines("print-apierror529.jsonl"))
    world.session_record(ERR_SESSION, 1, ERR_PROMPT)
    key = world.submit(
        ERR_SESSION, ERR_PROMPT, epoch=1, source="claude-stopfailure", outcome="failed", error="server_error"
    )
    gate(state, fast_settings())
    rec = state.read("outbox", key)
    assert rec is not None and rec["outcome"] == "failed" and rec["error"] == "server_error"


def test_goal_met_marker_written_after_stop_is_waited_for(world: ClaudeWorld, state: StateDir) -> None:
    """met:false holds the candidate; the met:true marker written after Stop returns releases it as 'goal met'."""
    key = _tool_session(world, extra=[goal_marker(met=False, uuid="m1")])
    gate(state, fast_settings(), later(1))
    assert last_decision(state, key)["last"]["reason"] == "goal-active"
    world.append(TOOL_SESSION, [goal_marker(met=True, uuid="m2")])
    gate(state, fast_settings(), later(1))
    rec = state.read("outbox", key)
    assert rec is not None and rec["goal"] == "met" and rec["outcome"] == "done"


def test_goal_failed_notifies_as_blocked_failure(world: ClaudeWorld, state: StateDir) -> None:
    """failed:true (impossible goal) is terminal-blocked: notified with outcome failed, error 'goal blocked'."""
    key = _tool_session(world, extra=[goal_marker(met=False, failed=True, uuid="m1")])
    gate(state, fast_settings(), later(1))
    rec = state.read("outbox", key)
    assert rec is not None and (rec["outcome"], rec["error"], rec["goal"]) == ("failed", "goal blocked", "blocked")


def test_goal_cleared_removes_candidate_without_receipt(world: ClaudeWorld, state: StateDir) -> None:
    """met:true + sentinel:true (/goal clear) removes the candidate with no sent/suppressed receipt."""
    key = _tool_session(world, extra=[goal_marker(met=True, sentinel=True, uuid="m1")])
    result = gate(state, fast_settings(), later(1))
    assert result.removed == 1 and where(state, key) is None
    log = (state.root / "notify.log").read_text()
    assert any(json.loads(line).get("msg") == "goal-cleared" for line in log.splitlines())


@pytest.mark.parametrize("sentinel", [False, True])
def test_marker_equal_to_prompt_baseline_is_ignored(world: ClaudeWorld, state: StateDir, sentinel: bool) -> None:
    """A historical terminal marker recorded as the prompt's baseline neither labels nor cancels the turn."""
    old = goal_marker(met=True, sentinel=sentinel, uuid="m0")
    recs = claude_lines("print-tool.jsonl")
    world.transcript(TOOL_SESSION, recs[:3] + [old] + recs[3:])
    baseline = {"uuid": "m0", "met": True, "failed": False, "sentinel": sentinel}
    world.session_record(TOOL_SESSION, 1, TOOL_PROMPT, baseline)
    key = world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1, baseline=baseline)
    gate(state, fast_settings(), later(1))
    rec = state.read("outbox", key)
    assert rec is not None and "goal" not in rec


def test_active_baseline_without_new_marker_holds(world: ClaudeWorld, state: StateDir) -> None:
    """A prompt anchored to an active goal is final only after a different terminal marker."""
    baseline = {"uuid": "m0", "met": False, "failed": False, "sentinel": False}
    world.transcript(TOOL_SESSION, claude_lines("print-tool.jsonl"))
    world.session_record(TOOL_SESSION, 1, TOOL_PROMPT, baseline)
    key = world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1, baseline=baseline)
    gate(state, fast_settings(), later(1))
    assert last_decision(state, key)["last"]["reason"] == "goal-active"


@pytest.mark.parametrize(
    ("candidate_epoch", "session", "expected"),
    [
        (1, (2, "p-newer"), "superseded"),
        (3, (2, TOOL_PROMPT), "claude-session-unverifiable"),
        (2, (2, "p-other"), "claude-session-unverifiable"),
        (1, "missing", "claude-session-unverifiable"),
        (1, "corrupt", "claude-session-unverifiable"),
        (0, "missing", "outbox"),
    ],
)
def test_prompt_epoch_race(
    world: ClaudeWorld, state: StateDir, candidate_epoch: int, session: object, expected: str
) -> None:
    """The candidate's prompt epoch is checked against the locked session record right before promotion."""
    world.transcript(TOOL_SESSION, claude_lines("print-tool.jsonl"))
    if isinstance(session, tuple):
        world.session_record(TOOL_SESSION, session[0], session[1])
    elif session == "corrupt":
        (state.root / "claude" / f"{claude_session_key(TOOL_SESSION)}.json").write_bytes(b'{"schema":1,"key":')
    key = world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=candidate_epoch)
    gate(state, fast_settings(), later(1))
    if expected == "outbox":
        assert where(state, key) == "outbox"
    else:
        assert where(state, key) == "suppressed" and last_decision(state, key)["reason"] == expected
    if session == "corrupt":
        assert state.count("dead") == 1


@pytest.mark.parametrize("mode", ["strict", "balanced"])
def test_transcript_never_appearing_is_unknown_evidence(world: ClaudeWorld, state: StateDir, mode: str) -> None:
    """A transcript that never appears: strict suppresses as unverifiable after the grace; balanced sends."""
    world.session_record(TOOL_SESSION, 1, TOOL_PROMPT)
    key = world.submit(TOOL_SESSION, TOOL_PROMPT, epoch=1)
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=30)
    gate(state, settings, later(10))
    assert where(state, key) == "pending"
    gate(state, settings, later(40))
    assert where(state, key) == ("suppressed" if mode == "strict" else "outbox")


def test_active_goal_of_a_silent_session_is_orphaned(world: ClaudeWorld, state: StateDir) -> None:
    """An active goal holds while the session writes; silent for the orphan bound, the prompt notifies once."""
    import os
    import time

    key = _tool_session(world, extra=[goal_marker(met=False, uuid="m1")])
    settings = fast_settings(subagent_orphan_seconds=60)
    gate(state, settings, later(1))
    assert last_decision(state, key)["last"]["reason"] == "goal-active"
    old = time.time() - 120
    os.utime(world.root / f"{TOOL_SESSION}.jsonl", (old, old))
    gate(state, settings, later(1))
    rec = state.read("outbox", key)
    assert rec is not None and rec["goal"] == "active-orphaned"
