"""Issue 37, item 2: failed ``donebell test`` runs do not pile up; at most one test arrives.

Through the installed console script: tests that cannot get through (the stand-in's injected 503s;
the real ntfy 2.11 refusing a wrong, a missing and a read-only token) each stay queued only until
a newer test replaces them, and a test not sent before ``--expire-after`` expires with a
``suppressed/`` receipt instead of arriving late.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.new_user import NewUser
from support.ntfy_real import RealNtfy
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for

TOPIC = "donebell-firstweek"


def _receipts(user: NewUser, folder: str) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((user.state.root / folder).glob("*.json"))]


def _drained(user: NewUser) -> bool:
    return not list((user.state.root / "outbox").glob("*.json"))


def test_tests_that_failed_are_replaced_and_only_the_newest_arrives(tmp_path: Path, srv: NtfyStandin) -> None:
    user = NewUser(tmp_path)
    try:
        user.setup(srv.url, ("topic", TOPIC))
        srv.faults.fail(503, count=3)
        for n in range(3):
            failed = user.cli("test")
            assert failed.returncode == 1, failed.stdout + failed.stderr
            assert "stays queued" in failed.stdout and "then it expires" in failed.stdout
            assert ("replaced 1 older test notification(s) still queued" in failed.stdout) == (n > 0)
        sent = user.cli("test")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        user.start_run()  # the service retries whatever is still queued
        wait_for(lambda: _drained(user), timeout=30, what="the outbox drained")
        time.sleep(2.0)
        assert len(srv.messages(TOPIC)) == 1
        replaced = [r for r in _receipts(user, "suppressed") if r["reason"] == "test-replaced"]
        assert len(replaced) == 3
        lines = user.cli("log", "--last", "0").stdout
        assert lines.count("test-replaced: a newer `donebell test` replaced this queued test") == 3
    finally:
        user.cleanup()


def test_a_test_not_sent_in_time_expires_with_a_receipt_and_never_arrives(tmp_path: Path, srv: NtfyStandin) -> None:
    user = NewUser(tmp_path)
    try:
        user.setup(srv.url, ("topic", TOPIC))
        srv.faults.fail(503, count=100)
        failed = user.cli("test", "--expire-after", "2")
        assert failed.returncode == 1 and "then it expires" in failed.stdout
        time.sleep(2.5)
        srv.faults.clear()  # the server is back, after the test's moment has passed
        user.start_run()
        wait_for(lambda: _drained(user), timeout=30, what="the outbox drained")
        time.sleep(2.0)
        assert srv.messages(TOPIC) == []
        [expired] = _receipts(user, "suppressed")
        assert expired["reason"] == "test-expired" and expired["test"] is True
        assert "test-expired: this test was not sent before it expired" in user.cli("log").stdout
    finally:
        user.cleanup()


def test_against_the_real_server_three_refused_tests_then_one_arrives(tmp_path: Path, deny_all_ntfy: RealNtfy) -> None:
    """The issue's run: a wrong, a missing and a read-only token, then the right one: one push."""
    user = NewUser(tmp_path)
    good, read_only = deny_all_ntfy.token_add("donebell"), deny_all_ntfy.token_add("reader")
    try:
        user.setup(deny_all_ntfy.url, ("topic", TOPIC))
        for token in ("tk_" + "x" * 29, None, read_only):
            if token is None:
                assert user.cli("config", "unset", "token").returncode == 0
            else:
                assert user.cli("config", "set", "token", "-", stdin=token + "\n").returncode == 0
            refused = user.cli("test")
            assert refused.returncode == 1 and "stays queued" in refused.stdout, refused.stdout + refused.stderr
        assert user.cli("config", "set", "token", "-", stdin=good + "\n").returncode == 0
        sent = user.cli("test")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        user.start_run()
        wait_for(lambda: _drained(user), timeout=30, what="the outbox drained")
        time.sleep(2.0)
        assert len(deny_all_ntfy.poll(TOPIC, token=good)) == 1
    finally:
        user.cleanup()
