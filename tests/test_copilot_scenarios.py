"""Copilot CLI, end to end on its recorded runs: the real hook command, the real gate and delivery
role, the ntfy stand-in; each scenario's exact notifications (docs/gate.md, "Copilot CLI")."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from support.copilot_replay import Replay
from support.hooks_harness import claude_events
from support.ntfy_standin import NtfyStandin


def replay(tmp_path: Path, srv: NtfyStandin, scenario: str, **config: object) -> tuple[Replay, str]:
    topic = f"copilot-{secrets.token_hex(4)}"
    return Replay(tmp_path, scenario, srv.url, topic, **config), topic


def finished(tmp_path: Path, srv: NtfyStandin, scenario: str) -> list[dict[str, object]]:
    """Play the whole run, flush the log, deliver: the stand-in's messages."""
    run, topic = replay(tmp_path, srv, scenario)
    run.play()
    run.write_log()
    result = run.deliver()
    assert result.returncode == 0, result.stderr
    return srv.messages(topic)


@pytest.mark.parametrize(
    "scenario", ["print-simple", "print-tool", "print-subagent", "print-detached", "interactive-simple"]
)
def test_one_done_notification_per_task(tmp_path: Path, srv: NtfyStandin, scenario: str) -> None:
    messages = finished(tmp_path, srv, scenario)
    assert len(messages) == 1, messages
    assert all("failed" not in str(m.get("title", "")).lower() for m in messages)


def test_a_resumed_session_is_a_new_task_with_its_own_notification(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-resume")
    run.play_until("sessionEnd")
    stamp = run.calls[run.played - 1]["payload"]["timestamp"]
    run.write_log(float(stamp) + 200)
    run.deliver()
    assert len(srv.messages(topic)) == 1
    run.play()
    run.write_log()
    run.deliver()
    assert len(srv.messages(topic)) == 2


def test_the_tui_permission_dialog_is_one_needs_you_push(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "interactive-approval-dialog", desk_grace_seconds=0)
    run.play_until("notification")  # permissionRequest, then permission_prompt: the dialog is open
    run.deliver()
    asked = srv.messages(topic)
    assert len(asked) == 1 and "permission" in str(asked[0]).lower(), asked
    run.play()
    run.write_log()
    run.deliver()
    assert len(srv.messages(topic)) == 2  # then the task's own done


def test_print_mode_denies_by_itself_so_its_prompt_notification_is_no_push(tmp_path: Path, srv: NtfyStandin) -> None:
    messages = finished(tmp_path, srv, "print-needs_approval-none")
    assert len(messages) == 1 and "permission" not in str(messages[0].get("title", "")).lower(), messages


@pytest.mark.parametrize("scenario", ["print-background", "print-bgagent"])
def test_background_work_holds_the_task_until_its_completion_turn(
    tmp_path: Path, srv: NtfyStandin, scenario: str
) -> None:
    run, topic = replay(tmp_path, srv, scenario)
    run.play_until("sessionEnd")  # agentStop and sessionEnd of the root while the work still runs
    stamp = run.calls[run.played - 1]["payload"]["timestamp"]
    run.write_log(float(stamp) + 100)  # what the CLI had flushed 100 ms later
    run.deliver(until_idle=False)
    run.deliver(until_idle=False)
    assert srv.messages(topic) == []
    assert [r["reason"] for r in run.folder("suppressed")] and run.folder("pending"), "held, not dropped"
    run.play()
    run.write_log()
    run.deliver()
    assert len(srv.messages(topic)) == 1


def test_a_stop_hook_block_is_one_more_turn_not_a_second_notification(tmp_path: Path, srv: NtfyStandin) -> None:
    messages = finished(tmp_path, srv, "print-stopblock")
    assert len(messages) == 1


@pytest.mark.parametrize("scenario", ["print-apierror529", "print-apierror400"])
def test_an_api_error_is_one_failure_notification(tmp_path: Path, srv: NtfyStandin, scenario: str) -> None:
    messages = finished(tmp_path, srv, scenario)
    assert len(messages) == 1
    assert "fail" in (str(messages[0].get("title")) + str(messages[0].get("message"))).lower()


def test_an_interrupt_is_stopped_never_done(tmp_path: Path, srv: NtfyStandin) -> None:
    messages = finished(tmp_path, srv, "print-abort")
    assert len(messages) == 1
    text = (str(messages[0].get("title")) + str(messages[0].get("message"))).lower()
    assert "stopped" in text and "done" not in text


def test_a_claude_hook_run_by_copilot_is_not_a_second_notification(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "claude-project-tool-trusted")
    for call in run.calls:
        run.hook(call, ["hook", "claude"])
    run.write_log()
    run.deliver()
    assert srv.messages(topic) == []
    assert run.folder("pending") == [] and run.folder("outbox") == []


def test_a_dialog_answered_at_the_terminal_within_the_desk_grace_is_no_push(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "interactive-approval-dialog", desk_grace_seconds=1)
    run.play_until("notification")
    run.play()  # the user answered the dialog at the terminal; the task went on and ended
    run.write_log()
    run.deliver()
    messages = srv.messages(topic)
    assert len(messages) == 1 and "permission" not in str(messages[0]).lower(), messages
    assert [r["reason"] for r in run.folder("suppressed") if r.get("notice") == "needs-you"] == ["answered-at-desk"]


def test_explain_and_log_name_the_agent(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-simple")
    run.play()
    run.write_log()
    run.deliver()
    (sent,) = run.folder("sent")
    story = run.cli("explain", sent["key"], check=True).stdout
    assert "Copilot CLI session" in story and "copilot --resume=" in story
    assert "notified   copilot" in run.cli("log", "--last", "5", check=True).stdout


def test_a_session_that_ends_before_any_prompt_is_no_notification(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-simple")
    start = run.calls[0]["payload"]["timestamp"]  # the sessionStart hook: before the prompt
    run.write_log(float(start))
    ended = {"event": "sessionEnd", "payload": {**run.calls[-1]["payload"], "timestamp": start}, "env": {}}
    run.hook(ended)
    run.deliver()
    assert srv.messages(topic) == []
    assert [r["reason"] for r in run.folder("suppressed")] == ["technical-turn"]


def test_claude_code_started_from_a_copilot_shell_still_counts(tmp_path: Path, srv: NtfyStandin) -> None:
    """Its own hooks inherit ``COPILOT_CLI=1`` but send Claude Code's payloads (no ``timestamp``)."""
    run, topic = replay(tmp_path, srv, "print-simple")
    for payload in claude_events("print-tool"):
        run.hook({"event": "claude", "payload": payload, "env": {"COPILOT_CLI": "1"}}, ["hook", "claude"])
    assert [r["provider"] for r in run.folder("pending")] == ["claude"]
