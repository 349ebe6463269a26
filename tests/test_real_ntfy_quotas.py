"""The rest of the retry table's rows that the real ntfy server (2.11) can produce for donebell:
the daily message quota (429 42908), the auth-failure limit (429 42909), a message refused as an
attachment (400 40014) and a server that is not running (connection refused).

Each gets docs/delivery.md's outcome, and every record is delivered or kept (nothing lost).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared.statedir import now
from donebell.workers.delivery.server_backoff import ServerBackoff
from support.delivery_kit import Env
from support.ntfy_real import RealNtfy, serve_module

pytestmark = pytest.mark.usefixtures("no_outside_config")


@pytest.fixture(scope="module")
def quota(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    """Two messages a day per visitor."""
    yield from serve_module(tmp_path_factory.mktemp("ntfy-quota"), default_access=None, visitor_message_daily_limit=2)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    """A 1 KiB message limit and no attachment cache (ntfy's default)."""
    yield from serve_module(tmp_path_factory.mktemp("ntfy-small"), default_access=None, message_size_limit="1k")


def _waiting(env: Env) -> list[dict[str, Any]]:
    records = [env.state.read("outbox", p.stem) for p in (env.state.root / "outbox").glob("*.json")]
    return [r for r in records if r]


def test_the_daily_quota_42908_waits_most_of_the_cap(quota: RealNtfy, tmp_path: Path) -> None:
    """The third message of the day gets 429 42908: retried after 90-100 % of `retry_max_seconds`."""
    env = Env(tmp_path, server=quota.url, topic="donebell-quota", retry_max_seconds=600)
    for _ in range(3):
        env.queue()
    role = env.role()
    t0 = now()
    role.pass_at(t0)
    role.teardown()
    assert env.state.count("sent") == 2
    [limited] = _waiting(env)
    assert limited["last_http_status"] == 429 and "42908" in str(limited["last_error"])
    assert t0 + 0.9 * 600 <= limited["next_attempt_at"] <= t0 + 600 + 1
    assert env.state.count("dead") == 0  # kept: it goes tomorrow


def test_a_message_ntfy_would_attach_is_a_400_dead_letter(small: RealNtfy, tmp_path: Path) -> None:
    """Over the 1 KiB message limit without an attachment cache: 400 40014, dead, the code kept."""
    env = Env(tmp_path, server=small.url, topic="donebell-attach", include_message=True, max_message_chars=4000)
    env.queue(last_message="y" * 1500)
    role = env.role()
    role.pass_at(now())
    role.teardown()
    [name] = [p.stem for p in (env.state.root / "dead").glob("*.json")]
    receipt = env.state.read("dead", name)
    assert receipt is not None and receipt["reason"] == "permanent-http-error"
    assert (receipt["http_status"], receipt["ntfy_code"]) == (400, 40014)


def test_too_many_auth_failures_42909_waits_a_minute(tmp_path: Path) -> None:
    """After 30 bad credentials from this address ntfy answers 429 42909 even to a good token:
    the record is retried no sooner than a minute later (the bucket refills one per minute)."""
    with RealNtfy(tmp_path / "ntfy", default_access="deny-all") as server:
        server.user_add("donebell", "pw-for-donebell")
        server.access("donebell", "donebell-*", "rw")
        token = server.token_add("donebell")
        for _ in range(30):  # someone else on this address with a wrong token (2.11 allows 30)
            httpx.post(f"{server.url}/donebell-x", headers={"Authorization": "Bearer tk_" + "9" * 29}, timeout=5)
        env = Env(tmp_path / "env", server=server.url, topic="donebell-authfail", token=token)
        env.queue()
        role = env.role()
        t0 = now()
        role.pass_at(t0)
        role.teardown()
        [limited] = _waiting(env)
        assert limited["last_http_status"] == 429 and "42909" in str(limited["last_error"])
        assert limited["next_attempt_at"] >= t0 + 60
        assert token not in env.all_state_text()


def test_a_stopped_server_is_retried_and_gets_the_record_when_back(tmp_path: Path) -> None:
    """Connection refused (ntfy stopped): a server-wide backoff, the record kept; after the restart
    on the same port it is delivered once."""
    server = RealNtfy(tmp_path / "ntfy", default_access=None).start()
    try:
        server.stop()
        env = Env(tmp_path / "env", server=server.url, topic="donebell-down")
        env.queue()
        role = env.role()
        t0 = now()
        role.pass_at(t0)
        [waiting] = _waiting(env)
        assert waiting["attempts"] == 1 and waiting.get("last_http_status") is None
        assert ServerBackoff.load(env.state).until > t0
        server.start()
        role.pass_at(t0 + 3600)
        role.teardown()
        assert env.state.count("sent") == 1 and len(server.poll("donebell-down")) == 1
    finally:
        server.stop()
