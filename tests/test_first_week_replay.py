"""Issue 37, item 1: a first run pushes nothing that ended before the state folder existed.

Real rollouts (recorded from Codex 0.171) and a real Claude Code 2.1.332 transcript are on disk,
ended seconds ago, before ``config init``; the installed ``donebell run`` then starts on a state
folder that never ran: nothing reaches the ntfy stand-in. A restart of that folder still recovers
a task that ended while it was down (the replay window), and after ``uninstall --purge`` the new
folder again pushes none of the old ones.
"""

from __future__ import annotations

import time
from pathlib import Path

from support.claude_fixtures import place
from support.new_user import NewUser
from support.ntfy_standin import NtfyStandin
from support.scanner_kit import fixture_lines, rollout_path
from support.waiting import wait_for


def _write_rollout(user: NewUser, name: str) -> Path:
    path = rollout_path(user.codex, name)
    path.write_bytes(b"".join(fixture_lines(name, own_end=True)))  # ended ~5 s ago, well inside the replay window
    return path


def _quiet_first_run(user: NewUser, srv: NtfyStandin) -> None:
    """Start ``donebell run``, let the scanner look at every file twice and the gate decide."""
    user.start_run()
    wait_for(user.scanned, timeout=60, what="two local-scanner passes")
    time.sleep(3.0)  # idle grace, the gate and the delivery: a push would be out by now
    assert srv.messages() == [], [m.get("message") for m in srv.messages()]


def test_a_new_state_folder_pushes_no_task_that_ended_before_it(tmp_path: Path, srv: NtfyStandin) -> None:
    user = NewUser(tmp_path)
    try:
        _write_rollout(user, "simple-exec")
        _write_rollout(user, "error-http500-task_complete-with-error")
        place(user.claude, "simple", project="-home-dev-old")
        time.sleep(0.05)  # the folder is created strictly after the last task ended
        user.setup(srv.url, ("idle_grace_seconds", "0.5"))
        _quiet_first_run(user, srv)
        assert not [e for e in user.json_lines("log", "--last", "0") if e["kind"] == "notified"]

        # A restart of the same folder still recovers a task that ended while it was down.
        user.stop_run()
        _write_rollout(user, "tool-exec-command")
        user.start_run()
        [pushed] = srv.wait_for_messages(1, timeout=60)
        time.sleep(2.0)
        assert len(srv.messages()) == 1, "only the task that ended after the folder was created"
        assert "#" in str(pushed.get("message"))

        # After a purge, the folder is new again: nothing old comes back.
        user.stop_run()
        purged = user.cli("uninstall", "--purge", "--yes")
        assert purged.returncode == 0, purged.stdout + purged.stderr
        assert not user.state.root.exists()
        user.setup(srv.url, ("idle_grace_seconds", "0.5"))
        srv.reset()
        _quiet_first_run(user, srv)
    finally:
        user.cleanup()
