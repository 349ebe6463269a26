"""Copilot CLI's second signal path (the session-log watcher) and the hook's own rules, on the
recorded runs: the real hook command, scanner, gate and delivery role, the ntfy stand-in."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.copilot_replay import Replay
from support.ntfy_standin import NtfyStandin


def replay(tmp_path: Path, srv: NtfyStandin, scenario: str) -> tuple[Replay, str]:
    topic = f"copilot-{secrets.token_hex(4)}"
    return Replay(tmp_path, scenario, srv.url, topic), topic


def test_a_task_whose_hooks_never_ran_is_notified_once_from_its_log(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-tool")
    run.write_log()  # Copilot ran without donebell's hooks: only its session log tells
    assert run.scan().returncode == 0
    assert run.scan().returncode == 0  # a second pass over the same log adds nothing
    run.deliver()
    (message,) = srv.messages(topic)
    assert message["title"] == run.project.name  # the project, as the hook's candidate names it


def test_hooks_and_log_together_are_still_one_notification(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-tool")
    run.play()
    run.write_log()
    run.scan()
    run.deliver()
    run.scan()
    run.deliver()
    assert len(srv.messages(topic)) == 1


def test_the_log_watcher_waits_for_background_work(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-background")
    first_stop = next(c for c in run.calls if c["event"] == "agentStop")["payload"]["timestamp"]
    run.write_log(float(first_stop) + 100)  # the shell still runs
    run.scan()
    run.deliver(until_idle=False)
    assert srv.messages(topic) == [] and run.folder("pending") == []
    run.write_log()
    run.scan()
    run.deliver()
    assert len(srv.messages(topic)) == 1


def test_a_subagents_stop_writes_nothing(tmp_path: Path, srv: NtfyStandin) -> None:
    run, _topic = replay(tmp_path, srv, "print-subagent")
    sub = next(c for c in run.calls if c["event"] == "agentStop" and "agentId" in c["payload"])
    run.hook(sub)
    assert run.folder("pending") == []


def test_permission_prompt_in_print_mode_is_no_request(tmp_path: Path, srv: NtfyStandin) -> None:
    run, _topic = replay(tmp_path, srv, "print-needs_approval-none")
    for call in run.calls:
        if call["event"] in ("permissionRequest", "notification"):
            run.hook(call)
    assert run.folder("outbox") == [] and run.folder("pending") == []


def test_the_dialogs_two_signals_are_one_request(tmp_path: Path, srv: NtfyStandin) -> None:
    run, _topic = replay(tmp_path, srv, "interactive-approval-dialog")
    prompt = next(c for c in run.calls if c["event"] == "notification")
    run.hook(prompt)
    run.hook(prompt)  # the same request again
    asked = run.folder("outbox")
    assert len(asked) == 1 and asked[0]["notice"] == "needs-you" and asked[0]["wants"] == "permission"
    assert "approval-marker" not in json.dumps(asked[0])  # the command is kept only with include_message


@pytest.mark.parametrize("payload", [b"", b"not json", b"[]", b'{"timestamp": 1}', b'{"sessionId": "s"}'])
def test_bad_input_is_logged_and_exits_0(tmp_path: Path, srv: NtfyStandin, payload: bytes) -> None:
    run, _topic = replay(tmp_path, srv, "print-simple")
    done = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "hook", "copilot", "agentStop"],
        input=payload,
        env=run.env(COPILOT_CLI="1"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == b""
    assert run.folder("pending") == []
    lines = [json.loads(line) for line in (run.state_dir / "notify.log").read_text().splitlines()]
    assert any(line.get("level") in ("warning", "info") and line.get("hook") for line in lines), lines


def test_the_log_watcher_leaves_sessions_older_than_the_replay_window(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = replay(tmp_path, srv, "print-tool")
    run.write_log()
    old = time.time() - 30 * 86400
    os.utime(run.log, (old, old))
    run.scan()
    assert run.folder("pending") == []
