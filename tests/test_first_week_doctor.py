"""Issue 37, items 3 and 4: ``doctor`` lines describe the present, through the installed script.

Item 3 runs against the real ntfy 2.11 (deny-all): a test queued without a token, then a
read-only token, then the right one; the ``delivery`` line follows what the server says now,
never the first attempt's "needs an access token".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.new_user import NewUser
from support.ntfy_real import RealNtfy, serve_module

TOPIC = "donebell-firstweek-doctor"


@pytest.fixture(scope="module")
def ntfy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    for server in serve_module(tmp_path_factory.mktemp("ntfy-firstweek-doctor"), default_access="deny-all"):
        server.user_add("donebell", "pw-donebell")
        server.access("donebell", "donebell-*", "rw")
        server.user_add("reader", "pw-reader")
        server.access("reader", "donebell-*", "read-only")
        yield server


def doctor_check(user: NewUser, name: str) -> dict[str, Any]:
    run = user.cli("doctor", "--json", timeout=90)
    found = [c for c in json.loads(run.stdout)["checks"] if c["name"] == name]
    assert len(found) == 1, (name, run.stdout[-3000:])
    return dict(found[0])


def test_the_delivery_line_says_what_blocks_now_not_what_blocked_then(tmp_path: Path, ntfy: RealNtfy) -> None:
    user = NewUser(tmp_path)
    read_only, good = ntfy.token_add("reader"), ntfy.token_add("donebell")
    try:
        user.setup(ntfy.url, ("topic", TOPIC))
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
