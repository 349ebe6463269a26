"""Tokens and Basic auth against the real ntfy server (2.11, deny-all), through real delivery workers.

Every outcome is the one docs/delivery.md's retry table promises for the status the real server
gave, and no credential appears in any output or state file.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.delivery_kit import Env
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, serve_module

pytestmark = pytest.mark.usefixtures("no_outside_config")

PASSWORD = "correct-horse-battery"
READER_PASSWORD = "reader-only-pw"


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def ntfy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[RealNtfy]:
    """deny-all; `donebell` may read and write `donebell-*`, `reader` may only read it."""
    for server in serve_module(tmp_path_factory.mktemp("ntfy-auth"), suite=request.param):
        server.user_add("donebell", PASSWORD)
        server.access("donebell", "donebell-*", "rw")
        server.user_add("reader", READER_PASSWORD)
        server.access("reader", "donebell-*", "read-only")
        yield server


def _deliver(env: Env) -> str:
    """One real `worker delivery --once` run over the queued record; its stdout + stderr."""
    run = env.run_cli("worker", "delivery", "--once")
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


def _outbox(env: Env) -> dict[str, Any]:
    [name] = [p.stem for p in (env.state.root / "outbox").glob("*.json")]
    record = env.state.read("outbox", name)
    assert record is not None
    return record


def _assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


def test_a_token_with_write_access_publishes(ntfy: RealNtfy, tmp_path: Path) -> None:
    """Bearer token of a user with rw on the topic: 200, a sent receipt, the message on the server."""
    token = ntfy.token_add("donebell")
    env = Env(tmp_path, server=ntfy.url, topic="donebell-token-ok", token=token)
    run = env.run_cli("test", "--json")
    assert run.returncode == 0, run.stderr
    [msg] = ntfy.poll("donebell-token-ok", token=token)
    assert msg["title"] == "donebell test"
    assert env.state.count("sent") == 1 and env.state.count("outbox") == 0
    _assert_no_secret(run.stdout + run.stderr + env.all_state_text(), token)


def test_a_wrong_token_gets_401_and_is_retried(ntfy: RealNtfy, tmp_path: Path) -> None:
    """An unknown token: ntfy answers 401 40101; the table says retry (the record waits in outbox/)."""
    wrong = "tk_" + "0" * 29
    env = Env(tmp_path, server=ntfy.url, topic="donebell-token-wrong", token=wrong)
    env.queue()
    out = _deliver(env)
    record = _outbox(env)
    assert record["last_http_status"] == 401 and record["attempts"] == 1 and record["next_attempt_at"]
    assert env.state.count("dead") == 0 and env.state.count("sent") == 0
    _assert_no_secret(out + env.all_state_text(), wrong)


def test_a_token_without_write_access_gets_403_and_is_retried(ntfy: RealNtfy, tmp_path: Path) -> None:
    """A valid token of a read-only user: ntfy answers 403 40301; retry, nothing sent, token hidden."""
    token = ntfy.token_add("reader")
    env = Env(tmp_path, server=ntfy.url, topic="donebell-token-ro", token=token)
    env.queue()
    out = _deliver(env)
    record = _outbox(env)
    assert record["last_http_status"] == 403 and record["attempts"] == 1
    assert ntfy.poll("donebell-token-ro", token=token) == []
    _assert_no_secret(out + env.all_state_text(), token)


def test_a_revoked_token_gets_401_and_the_record_waits(ntfy: RealNtfy, tmp_path: Path) -> None:
    """A token that worked, then `ntfy token remove`d: 401, retried, delivered once a good token is set."""
    token = ntfy.token_add("donebell")
    env = Env(tmp_path, server=ntfy.url, topic="donebell-token-revoked", token=token)
    env.queue()
    _deliver(env)
    assert env.state.count("sent") == 1
    ntfy.token_remove("donebell", token)
    env.queue()
    out = _deliver(env)
    assert _outbox(env)["last_http_status"] == 401
    fresh = ntfy.token_add("donebell")
    env.update_config(token=fresh)
    record = _outbox(env)
    env.state.replace("outbox", {**record, "next_attempt_at": 0})
    out += _deliver(env)
    assert env.state.count("sent") == 2 and env.state.count("outbox") == 0  # nothing was lost
    assert len(ntfy.poll("donebell-token-revoked", token=fresh)) == 2
    _assert_no_secret(out + env.all_state_text(), token, fresh)


def test_basic_auth_from_username_and_password(ntfy: RealNtfy, tmp_path: Path) -> None:
    """`username` + `password` become Basic auth, which ntfy accepts for the user's topics."""
    env = Env(tmp_path, server=ntfy.url, topic="donebell-basic", username="donebell", password=PASSWORD)
    run = env.run_cli("test", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(ntfy.poll("donebell-basic", token=ntfy.token_add("donebell"))) == 1
    basic = base64.b64encode(f"donebell:{PASSWORD}".encode()).decode()
    _assert_no_secret(run.stdout + run.stderr + env.all_state_text(), PASSWORD, basic)


def test_basic_auth_from_the_url_userinfo(ntfy: RealNtfy, tmp_path: Path) -> None:
    """`http://user:password@host` sends Basic auth; the receipt names the server without user-info."""
    server = ntfy.url.replace("http://", f"http://donebell:{PASSWORD}@")
    env = Env(tmp_path, server=server, topic="donebell-userinfo")
    run = env.run_cli("test", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(ntfy.poll("donebell-userinfo", token=ntfy.token_add("donebell"))) == 1
    [receipt_name] = [p.stem for p in (env.state.root / "sent").glob("*.json")]
    receipt = env.state.read("sent", receipt_name)
    assert receipt is not None and receipt["server"] == ntfy.url
    _assert_no_secret(run.stdout + run.stderr + env.all_state_text(), PASSWORD)


def test_a_wrong_password_gets_401_and_is_retried(ntfy: RealNtfy, tmp_path: Path) -> None:
    """Basic auth with a wrong password: 401, retried like a wrong token, the password never shown."""
    env = Env(tmp_path, server=ntfy.url, topic="donebell-basic-wrong", username="donebell", password="not-it-at-all")
    env.queue()
    out = _deliver(env)
    assert _outbox(env)["last_http_status"] == 401
    _assert_no_secret(out + env.all_state_text(), "not-it-at-all")
