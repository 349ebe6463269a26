"""``donebell hook claude`` on the real Claude Code 2.1.197 payloads: epochs, Stop rules, StopFailure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import claude_session_key, event_key
from support.hooks_harness import HookEnv, claude_event, claude_events


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    return HookEnv(tmp_path)


def _session(hooks: HookEnv, session_id: str) -> dict[str, Any]:
    record = hooks.state.read("claude", claude_session_key(session_id))
    assert record is not None
    return record


def test_stop_with_running_background_task_writes_nothing(hooks: HookEnv) -> None:
    """Stop with a running background shell is not final: no candidate, no receipt, only a log line."""
    stop = claude_event("print-background", "Stop", 0)
    assert stop["background_tasks"][0]["status"] == "running"
    hooks.claude(claude_event("print-background", "UserPromptSubmit", 0))
    hooks.claude(stop)
    assert hooks.counts() == {"pending": 0, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}
    assert "1 background_tasks still active" in hooks.log_messages()


def test_background_run_yields_one_candidate_for_the_final_prompt(hooks: HookEnv) -> None:
    """The whole recorded background run (two prompts, two Stops) leaves one candidate: the second prompt's."""
    events = claude_events("print-background")
    for payload in events:
        hooks.claude(payload)
    final_stop = [p for p in events if p["hook_event_name"] == "Stop"][-1]
    rec = hooks.only("pending")
    assert rec["key"] == event_key("claude", final_stop["session_id"], final_stop["prompt_id"])
    assert (rec["source"], rec["outcome"], rec["claude_epoch"]) == ("claude-stop", "done", 2)
    assert rec["claude_session_state"] == "current"
    assert hooks.counts()["suppressed"] == 0  # the first Stop (task still running) never became a candidate
    assert _session(hooks, final_stop["session_id"])["epoch"] == 2


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"background_tasks": None}, "background_tasks missing"),
        ({"session_crons": None}, "session_crons missing"),
        (
            {"session_crons": [{"id": "c1", "schedule": "*/5 * * * *", "recurring": True, "prompt": "p"}]},
            "1 session_crons",
        ),
        ({"prompt_id": None}, "no prompt_id"),
        ({"session_id": None}, "no session_id"),
    ],
)
def test_stop_without_empty_registries_or_ids_fails_closed(hooks: HookEnv, change: dict[str, Any], reason: str) -> None:
    """A Stop missing an id or a registry, or with an active cron, writes nothing so the prompt can still finish."""
    stop = claude_event("print-tool", "Stop")
    for name, value in change.items():
        if value is None:
            del stop[name]
        else:
            stop[name] = value
    hooks.claude(stop)
    assert hooks.counts()["pending"] == 0 and reason in hooks.log_messages()


def test_stop_failure_is_a_terminal_candidate(hooks: HookEnv) -> None:
    """The recorded 529 run (UserPromptSubmit, SessionEnd, StopFailure) leaves one failed candidate with its error."""
    hooks.write_config(include_message=True)
    for payload in claude_events("print-apierror529"):
        hooks.claude(payload)
    failure = claude_event("print-apierror529", "StopFailure")
    rec = hooks.only("pending")
    assert rec["key"] == event_key("claude", failure["session_id"], failure["prompt_id"])
    assert (rec["source"], rec["outcome"], rec["error"]) == ("claude-stopfailure", "failed", "server_error")
    assert rec["last_message"].startswith("API Error: 529") and rec["claude_epoch"] == 1


def test_stop_failure_without_prompt_id_gets_a_weak_identity(hooks: HookEnv) -> None:
    """StopFailure is terminal even without prompt_id: a weak-identity candidate rather than nothing."""
    failure = claude_event("print-apierror529", "StopFailure")
    del failure["prompt_id"]
    hooks.claude(failure)
    rec = hooks.only("pending")
    assert rec["weak_identity"] is True and rec["outcome"] == "failed"


def test_user_prompt_submit_supersedes_the_older_candidate(hooks: HookEnv) -> None:
    """A new prompt finishes the session's older pending candidate as 'superseded' and advances the epoch."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    stop = claude_event("print-tool", "Stop")
    hooks.claude(prompt)
    hooks.claude(stop)
    old_key = hooks.only("pending")["key"]
    hooks.claude({**prompt, "prompt_id": "second-prompt"})
    receipt = hooks.only("suppressed")
    assert (receipt["key"], receipt["reason"], receipt["superseded_by_epoch"]) == (old_key, "superseded", 2)
    assert hooks.counts()["pending"] == 0
    session = _session(hooks, prompt["session_id"])
    assert (session["epoch"], session["prompt_id"]) == (2, "second-prompt")
    assert session["recent_prompt_ids"] == [prompt["prompt_id"], "second-prompt"]


def test_other_sessions_are_left_alone(hooks: HookEnv) -> None:
    """A prompt in one session never touches another session's pending candidate."""
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    hooks.claude(claude_event("print-tool", "Stop"))
    hooks.claude(claude_event("print-subagent", "UserPromptSubmit"))
    assert hooks.counts()["pending"] == 1 and hooks.counts()["suppressed"] == 0


def test_repeated_stop_refreshes_the_pending_record(hooks: HookEnv) -> None:
    """A second Stop of the same prompt (stop_hook_active) refreshes the one record and bumps its revision."""
    hooks.write_config(include_message=True)
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    stop = claude_event("print-tool", "Stop")
    hooks.claude(stop)
    hooks.claude({**stop, "stop_hook_active": True, "last_assistant_message": "newer text"})
    rec = hooks.only("pending")
    assert rec["revision"] == 2 and rec["last_message"] == "newer text" and rec["stop_hook_active"] is True


def test_late_stop_of_an_older_prompt_is_ignored(hooks: HookEnv) -> None:
    """A Stop for a prompt that is no longer the latest writes nothing (the newer prompt owns the session)."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    hooks.claude(prompt)
    hooks.claude({**prompt, "prompt_id": "second-prompt"})
    hooks.claude(claude_event("print-tool", "Stop"))
    assert hooks.counts()["pending"] == 0 and "older prompt ignored" in hooks.log_messages()


def test_stop_of_an_unannounced_prompt_advances_the_epoch(hooks: HookEnv) -> None:
    """A Stop whose UserPromptSubmit was never seen starts that prompt's epoch itself (and supersedes older ones)."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    stop = claude_event("print-tool", "Stop")
    hooks.claude(prompt)
    hooks.claude(stop)
    hooks.claude({**stop, "prompt_id": "unannounced"})
    rec = hooks.only("pending")
    assert (rec["prompt_id"], rec["claude_epoch"], rec["claude_session_state"]) == ("unannounced", 2, "advanced")
    assert hooks.only("suppressed")["reason"] == "superseded"


def test_stop_without_any_prompt_record_is_epoch_zero(hooks: HookEnv) -> None:
    """With no UserPromptSubmit ever seen (hook added mid-session) the Stop is an epoch-0 compatibility candidate."""
    hooks.claude(claude_event("print-tool", "Stop"))
    rec = hooks.only("pending")
    assert (rec["claude_epoch"], rec["claude_session_state"], rec["goal_baseline"]) == (0, "no-session", None)


def test_subagent_events_and_others_are_ignored(hooks: HookEnv) -> None:
    """The recorded subagent run (SubagentStart/Stop, tool events, SessionEnd) yields only the main Stop's candidate."""
    for payload in claude_events("print-subagent"):
        hooks.claude(payload)
    assert hooks.counts()["pending"] == 1 and hooks.only("pending")["source"] == "claude-stop"
    assert "claude hook event ignored" in hooks.log_messages()


def test_events_from_inside_a_subagent_are_ignored(hooks: HookEnv) -> None:
    """A Stop or UserPromptSubmit carrying agent_id never touches the main session."""
    hooks.claude({**claude_event("print-tool", "UserPromptSubmit"), "agent_id": "a1"})
    hooks.claude({**claude_event("print-tool", "Stop"), "agent_id": "a1"})
    assert hooks.counts()["pending"] == 0 and not list((hooks.state_dir / "claude").glob("*.json"))


def test_disabled_claude_code_is_a_no_op(hooks: HookEnv) -> None:
    """enable_claude_code: false makes every Claude hook a no-op that still exits 0."""
    hooks.write_config(enable_claude_code=False)
    for payload in claude_events("print-tool"):
        hooks.claude(payload)
    assert hooks.counts()["pending"] == 0 and not list((hooks.state_dir / "claude").iterdir())


def test_idle_notification_only_marks_the_pending_candidate(hooks: HookEnv) -> None:
    """Notification idle_prompt adds evidence to the prompt's pending candidate; other types are ignored."""
    hooks.claude(claude_event("print-tool", "UserPromptSubmit"))
    stop = claude_event("print-tool", "Stop")
    hooks.claude(stop)
    base = {k: stop[k] for k in ("session_id", "transcript_path", "cwd", "prompt_id")}
    hooks.claude({**base, "hook_event_name": "Notification", "notification_type": "permission_prompt"})
    assert hooks.only("pending")["revision"] == 1
    hooks.claude({**base, "hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "m"})
    rec = hooks.only("pending")
    assert rec["revision"] == 2 and "claude-notification" in rec["sources"] and rec["idle_notified_at"]
    assert rec["source"] == "claude-stop"
    hooks.claude({**base, "prompt_id": "other", "hook_event_name": "Notification", "notification_type": "idle_prompt"})
    assert hooks.counts()["pending"] == 1  # an accelerator never creates a candidate


def test_goal_baseline_is_the_newest_marker_in_the_tail(hooks: HookEnv) -> None:
    """UserPromptSubmit records the newest main-thread goal_status marker of the transcript as the baseline."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    path = hooks.claude_transcript(prompt["session_id"])
    markers = [
        {"type": "goal_status", "met": False, "sentinel": True, "condition": "tests pass"},
        {"type": "goal_status", "met": True, "condition": "tests pass", "reason": "done", "iterations": 2},
    ]
    with path.open("ab") as f:
        for n, attachment in enumerate(markers):
            record = {"type": "attachment", "isSidechain": False, "uuid": f"goal-{n}", "timestamp": f"t{n}"}
            f.write(json.dumps({**record, "attachment": attachment}).encode() + b"\n")
        f.write(b'{"type":"attachment","attachment":{"type":"goal_status","met":false')  # being written
    hooks.claude({**prompt, "transcript_path": str(path)})
    session = _session(hooks, prompt["session_id"])
    baseline = session["goal_baseline"]
    assert (baseline["uuid"], baseline["met"], baseline["sentinel"], baseline["failed"]) == (
        "goal-1",
        True,
        False,
        False,
    )
    assert path.read_bytes()[baseline["offset"] :].startswith(b'{"type": "attachment"')
    assert session["goal_scan"]["status"] == "found"
    hooks.claude(claude_event("print-tool", "Stop"))
    assert hooks.only("pending")["goal_baseline"] == baseline


def test_missing_transcript_gives_no_baseline(hooks: HookEnv) -> None:
    """At UserPromptSubmit the transcript may not exist yet: baseline null, scan status 'missing'."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    hooks.claude(prompt)
    session = _session(hooks, prompt["session_id"])
    assert session["goal_baseline"] is None and session["goal_scan"]["status"] == "missing"


def test_corrupt_session_record_is_dead_lettered_and_replaced(hooks: HookEnv) -> None:
    """A corrupt claude/ record goes to dead/ and the next prompt starts above every pending epoch."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    hooks.claude(prompt)
    hooks.claude(claude_event("print-tool", "Stop"))
    key = claude_session_key(prompt["session_id"])
    (hooks.state_dir / "claude" / f"{key}.json").write_bytes(b'{"schema": 1, "key": "tru')
    hooks.claude({**prompt, "prompt_id": "second-prompt"})
    assert _session(hooks, prompt["session_id"])["epoch"] == 2
    assert hooks.only("dead")["reason"] == "invalid-record"
    assert hooks.only("suppressed")["reason"] == "superseded"


def test_stop_with_a_corrupt_session_record_starts_a_fresh_epoch(hooks: HookEnv) -> None:
    """A Stop finding a corrupt session record repairs it (dead letter) and anchors to a fresh epoch, not epoch 0."""
    prompt = claude_event("print-tool", "UserPromptSubmit")
    hooks.claude(prompt)
    key = claude_session_key(prompt["session_id"])
    (hooks.state_dir / "claude" / f"{key}.json").write_bytes(b"\x00garbage")
    hooks.claude(claude_event("print-tool", "Stop"))
    rec = hooks.only("pending")
    assert (rec["claude_epoch"], rec["claude_session_state"]) == (1, "advanced")
    assert _session(hooks, prompt["session_id"])["prompt_id"] == prompt["prompt_id"]
    assert hooks.only("dead")["reason"] == "invalid-record"
