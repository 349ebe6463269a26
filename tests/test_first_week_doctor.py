"""Issue 37, items 3 and 4: ``doctor`` lines describe the present, through the installed script.

Item 3 runs against the real ntfy 2.11 (deny-all): a test queued without a token, then a
read-only token, then the right one; the ``delivery`` line follows what the server says now,
never the first attempt's "needs an access token". Item 4 starts the real ``donebell run``
without a variable the shell has and asks doctor from that shell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.new_user import NewUser
from support.ntfy_real import RealNtfy
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for

TOPIC = "donebell-firstweek-doctor"


def doctor_check(user: NewUser, name: str) -> dict[str, Any]:
    run = user.cli("doctor", "--json", timeout=90)
    found = [c for c in json.loads(run.stdout)["checks"] if c["name"] == name]
    assert len(found) == 1, (name, run.stdout[-3000:])
    return dict(found[0])


def test_the_delivery_line_says_what_blocks_now_not_what_blocked_then(tmp_path: Path, deny_all_ntfy: RealNtfy) -> None:
    user = NewUser(tmp_path)
    read_only, good = deny_all_ntfy.token_add("reader"), deny_all_ntfy.token_add("donebell")
    try:
        user.setup(deny_all_ntfy.url, ("topic", TOPIC))
        queued = user.cli("test")
        assert queued.returncode == 1 and "access token" in queued.stdout, queued.stdout
        then = doctor_check(user, "delivery")
        assert "access token" in then["summary"]  # true then, and still true now

        assert user.cli("config", "set", "token", "-", stdin=read_only + "\n").returncode == 0
        access, delivery = doctor_check(user, "access"), doctor_check(user, "delivery")
        assert access["status"] == "fail" and "reader" in access["summary"]
        assert "access token" not in delivery["summary"], delivery
        assert "does not let user reader publish" in delivery["summary"]
        assert "ntfy access reader" in str(delivery["next_step"])

        assert user.cli("config", "set", "token", "-", stdin=good + "\n").returncode == 0
        delivery = doctor_check(user, "delivery")
        assert delivery["status"] == "warn", delivery
        assert "accepts donebell's credentials now" in delivery["summary"]
        assert "reader" not in delivery["summary"] and "access token" not in delivery["summary"]
    finally:
        user.cleanup()


def test_doctor_names_agent_variables_the_running_service_lacks(tmp_path: Path, srv: NtfyStandin) -> None:
    """Item 4: the service was started without ANTHROPIC_API_KEY; doctor, run from a shell that
    has it, names it (never its value), and not a variable both have."""
    user = NewUser(tmp_path)
    secret = "sk-ant-api03-" + "S" * 40
    try:
        user.setup(
            srv.url,
            ("topic", TOPIC),
            ("wake_allow_unauthenticated", "true"),
            ("wake_enabled", "true"),
        )
        user.start_run(OPENAI_BASE_URL="http://127.0.0.1:9/v1")
        wait_for(user.harness.ready, timeout=60, what="the supervisor ready")
        shell = {"ANTHROPIC_API_KEY": secret, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "CLAUDECODE": "1"}
        run = user.cli("doctor", "--json", timeout=90, **shell)
        [check] = [c for c in json.loads(run.stdout)["checks"] if c["name"] == "wake_env"]
        assert check["status"] == "warn", check
        assert check["details"] == {"missing": ["ANTHROPIC_API_KEY"], "compared_with": "the running service"}
        assert "import-environment ANTHROPIC_API_KEY" in check["next_step"]
        table = user.cli("doctor", timeout=90, **shell).stdout
        assert "wake_env" in table and "ANTHROPIC_API_KEY" in table
        assert secret not in run.stdout + table and "S" * 40 not in run.stdout + table
        same = user.cli("doctor", "--json", timeout=90, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
        [check] = [c for c in json.loads(same.stdout)["checks"] if c["name"] == "wake_env"]
        assert check["status"] == "ok", check
    finally:
        user.cleanup()
