"""`donebell explain` reads well (issue 24, item 7): the full thread or session id with the command
that resumes it, each record's events in time order (captured, ready, sent), and a `donebell test`
record named as such. Real delivery worker, real stand-in server, real CLI processes."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

from support.delivery_kit import Env
from support.ntfy_standin import NtfyStandin


def _stamps(story: str) -> list[str]:
    return re.findall(r"^    (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)  ", story, re.MULTILINE)


def test_a_codex_thread_shows_its_full_id_and_how_to_resume_it(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    thread = str(uuid.uuid4())
    env.queue(thread_id=thread, created_at=time.time() - 5)
    assert env.run_cli("worker", "delivery", "--once").returncode == 0
    [message] = srv.messages()
    story = env.run_cli("explain", f"#{message['message'][-8:]}").stdout
    assert f"Codex thread {thread}  (resume: `codex resume {thread}`)" in story, story
    captured, ready, sent = (story.index(word) for word in ("captured (", "ready: moved to the outbox", "sent (HTTP"))
    assert captured < ready < sent, story  # in time order
    assert f"message id {message['id']}" in story
    stamps = _stamps(story)
    assert len(stamps) == 3 and stamps == sorted(stamps)


def test_a_claude_session_shows_how_to_resume_it(tmp_path: Path) -> None:
    env = Env(tmp_path, server="http://127.0.0.1:9")
    session = str(uuid.uuid4())
    env.queue(provider="claude", session_id=session, prompt_id=str(uuid.uuid4()))
    story = env.run_cli("explain", session).stdout
    assert f"Claude Code session {session}  (resume: `claude --resume {session}`)" in story, story


def test_a_test_notification_is_named_as_such(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    assert env.run_cli("test").returncode == 0
    [message] = srv.messages()
    story = env.run_cli("explain", message["id"]).stdout
    assert "• test notification (`donebell test`) [sent]" in story, story
    assert "turn ?" not in story and "verdict test" not in story
