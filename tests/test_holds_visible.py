"""Why a notification waits is visible where the user looks (issue 24, item 7): a record held by
quiet hours, desk grace or a digest shows as `held` in `donebell log`, as `now: held by …` in
`donebell explain` and in `donebell status` (and does not make status report a late outbox).
Real delivery worker, real CLI processes on a real state directory."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from donebell.shared.text.short_id import short_id
from donebell.workers.delivery.policies.digest import new_digest
from support.delivery_kit import Env


def _window_around_now() -> str:
    """A local quiet window from an hour ago to an hour ahead."""
    start, end = time.localtime(time.time() - 3600), time.localtime(time.time() + 3600)
    return f"{start.tm_hour:02d}:{start.tm_min:02d}-{end.tm_hour:02d}:{end.tm_min:02d}"


def test_quiet_hours_hold_shows_in_log_explain_and_status(tmp_path: Path) -> None:
    env = Env(tmp_path, server="http://127.0.0.1:9", quiet_hours=_window_around_now())
    thread = str(uuid.uuid4())
    rec = env.queue(thread_id=thread)
    assert env.run_cli("worker", "delivery", "--once").returncode == 0
    assert env.state.locate(str(rec["key"])) == "outbox"  # held, not sent
    log = env.run_cli("log").stdout
    assert f"held       codex #{short_id(thread)}" in log and "held by quiet hours until" in log, log
    story = env.run_cli("explain", thread).stdout
    assert "now: held by quiet hours until" in story, story
    doc = json.loads(env.run_cli("status", "--json").stdout)
    assert doc["queue"]["held"] == 1 and doc["queue"]["holds"][0]["why"] == "quiet hours"
    assert doc["queue"]["oldest_outbox_age_seconds"] is None  # waiting on purpose is not falling behind
    assert "held: 1 notification(s) waiting on purpose; the next is held by quiet hours" in env.run_cli("status").stdout


def test_desk_grace_hold_shows_before_the_delivery_worker_runs(tmp_path: Path) -> None:
    env = Env(tmp_path, server="http://127.0.0.1:9", desk_grace_seconds=600)
    thread = str(uuid.uuid4())
    env.queue(thread_id=thread, promoted_at=time.time())
    log = env.run_cli("log").stdout
    assert "held by desk grace until" in log and "desk_grace_seconds 600" in log, log
    assert "now: held by desk grace until" in env.run_cli("explain", thread).stdout


def test_digest_members_show_as_held_for_the_digest(tmp_path: Path) -> None:
    env = Env(tmp_path, server="http://127.0.0.1:9")
    members = [env.queue(thread_id=str(uuid.uuid4())) for _ in range(2)]
    assert env.state.create("outbox", new_digest([str(m["key"]) for m in members], "burst"))
    lines = [line for line in env.run_cli("log").stdout.splitlines() if "held for a digest" in line]
    assert len(lines) == 2 and all("one notification for 2 tasks (burst)" in line for line in lines)
    assert json.loads(env.run_cli("status", "--json").stdout)["queue"]["held"] == 2
