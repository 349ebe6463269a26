"""The retry table, row by row, against the ntfy stand-in on 127.0.0.1 (real HTTP, no mocks)."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.ntfy.retry import backoff_seconds
from donebell.shared.statedir import now
from support.delivery_kit import Env, wire_bodies
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")

Fault = Callable[[NtfyStandin], None]


def _fail(status: int, code: int | None = None, **kw: Any) -> Fault:
    return lambda s: s.faults.fail(status, code, **kw)


RETRY_ROWS: dict[str, Fault] = {
    "500": _fail(500),
    "502-proxy-html": _fail(502, body=b"<html>Bad Gateway</html>", content_type="text/html"),
    "503": _fail(503),
    "401": _fail(401),
    "403": _fail(403),
    "408": _fail(408),
    "409": _fail(409),
    "425": _fail(425),
    "429-42901-burst": _fail(429, 42901),
    "429-42908-daily-quota": _fail(429, 42908),
    "429-42909-auth-failures": _fail(429, 42909),
    "accept-then-drop": lambda s: s.faults.accept_then_drop(),
    "accept-then-reset": lambda s: s.faults.accept_then_drop(reset=True),
}

DEAD_ROWS: dict[str, tuple[Fault, int]] = {
    "301-not-followed": (lambda s: s.faults.redirect(301), 301),
    "307-not-followed": (lambda s: s.faults.redirect(307), 307),
    "302-not-followed": (lambda s: s.faults.redirect(302), 302),
    "400-40009-topic": (_fail(400, 40009), 400),
    "400-40014-attachment": (_fail(400, 40014), 400),
    "404": (_fail(404), 404),
    "413-41303": (_fail(413, 41303), 413),
}


@pytest.mark.parametrize("row", list(RETRY_ROWS))
def test_retryable_answer_keeps_record_and_same_sequence_id(row: str, srv: NtfyStandin, tmp_path: Path) -> None:
    """A retryable answer updates attempts/last_error/next_attempt_at; the retry reuses the sequence_id."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    RETRY_ROWS[row](srv)
    role = env.role()
    t0 = now()
    role.pass_at(t0)
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and not env.state.exists("sent", rec["key"])
    assert kept["attempts"] == 1 and kept["last_error"]
    assert t0 < kept["next_attempt_at"] <= now() + env.settings().retry_max_seconds
    assert len(srv.requests) == 1
    role.pass_at(kept["next_attempt_at"] + 0.01)  # the clock reaches the retry time
    receipt = env.state.read("sent", rec["key"])
    assert receipt is not None and receipt["attempts"] == 2 and receipt["reason"] == "sent"
    assert not env.state.exists("outbox", rec["key"])
    assert [b["sequence_id"] for b in wire_bodies(srv)] == [rec["sequence_id"]] * 2
    role.teardown()


def test_retry_waits_for_next_attempt_at(srv: NtfyStandin, tmp_path: Path) -> None:
    """A record that is not due yet is not attempted by a pass."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    srv.faults.fail(503)
    role = env.role()
    role.pass_at(now())
    due = env.state.read("outbox", rec["key"])["next_attempt_at"]  # type: ignore[index]
    result = role.pass_at(due - 0.5)
    assert len(srv.requests) == 1 and env.state.exists("outbox", rec["key"])
    assert result.next_in is not None and 0 < result.next_in <= due - now() + 0.01
    role.teardown()


@pytest.mark.parametrize("row", list(DEAD_ROWS))
def test_permanent_answer_dead_letters_without_following(row: str, srv: NtfyStandin, tmp_path: Path) -> None:
    """3xx and the other 4xx dead-letter at once; a redirect is never followed (one request only)."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    fault, status = DEAD_ROWS[row]
    fault(srv)
    role = env.role()
    role.pass_at(now())
    dead = env.state.read("dead", rec["key"])
    assert dead is not None and dead["reason"] == "permanent-http-error" and dead["http_status"] == status
    assert not env.state.exists("outbox", rec["key"])
    assert len(srv.requests) == 1
    role.teardown()


@pytest.mark.parametrize("kind", ["dns", "connect", "tls", "timeout"])
def test_transport_failures_retry(kind: str, srv: NtfyStandin, tmp_path: Path) -> None:
    """DNS, connect, TLS and timeout failures are retried and named in last_error."""
    if kind == "dns":
        server = "http://donebell-no-such-host.invalid"
    elif kind == "connect":
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            server = f"http://127.0.0.1:{s.getsockname()[1]}"
    elif kind == "tls":
        server = srv.url.replace("http://", "https://")  # a TLS hello to a plain-HTTP server
    else:
        server = srv.url
        srv.faults.hang(max_seconds=5)
    env = Env(tmp_path, server=server, timeout_seconds=0.3)
    rec = env.queue()
    role = env.role()
    role.pass_at(now())
    srv.faults.clear()
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and kept["attempts"] == 1
    assert kept["last_error"].startswith(f"{kind}:")
    role.teardown()


def test_limit_codes_shape_the_backoff(srv: NtfyStandin, tmp_path: Path) -> None:
    """42908 waits (nearly) the full cap, 42901 at least the 5 s refill, 42909 at least a minute."""
    env = Env(tmp_path, server=srv.url, retry_max_seconds=600)
    role = env.role()
    waits = {}
    for code in (42908, 42901, 42909):
        rec = env.queue()
        srv.faults.fail(429, code)
        t0 = now()
        role.pass_at(t0)
        waits[code] = env.state.read("outbox", rec["key"])["next_attempt_at"] - t0  # type: ignore[index]
        env.state.remove("outbox", rec["key"])
        (env.state.root / "health" / "server-backoff.json").unlink()  # a new episode (server_backoff.py)
    assert 540 <= waits[42908] <= 601
    assert 5 <= waits[42901] <= 10
    assert 60 <= waits[42909] <= 73
    role.teardown()


def test_numeric_retry_after_honoured_within_cap(srv: NtfyStandin, tmp_path: Path) -> None:
    """A numeric Retry-After sets the wait, but never beyond retry_max_seconds."""
    env = Env(tmp_path, server=srv.url, retry_max_seconds=100)
    role = env.role()
    for header, expected in (("7", 7.0), ("5000", 100.0)):
        rec = env.queue()
        srv.faults.fail(503, headers={"Retry-After": header})
        t0 = now()
        role.pass_at(t0)
        wait = env.state.read("outbox", rec["key"])["next_attempt_at"] - t0  # type: ignore[index]
        assert expected <= wait <= expected + 1.0
        env.state.remove("outbox", rec["key"])
        (env.state.root / "health" / "server-backoff.json").unlink()  # a new episode (server_backoff.py)
    role.teardown()


def test_backoff_is_exponential_with_jitter_and_capped() -> None:
    """Attempt n waits between 2^(n-1) and 2^n seconds until the cap, which is never exceeded."""
    rng = random.Random(7)
    for n in range(1, 40):
        for _ in range(20):
            d = backoff_seconds(n, 900, rng=rng)
            step = 2.0 * 2 ** min(n - 1, 30)
            assert min(step / 2, 900) <= d <= min(step, 900)
    assert len({round(backoff_seconds(3, 900, rng=rng), 6) for _ in range(20)}) > 10  # really jittered


def test_max_attempts_dead_letters(srv: NtfyStandin, tmp_path: Path) -> None:
    """With max_attempts: 2 the second failed attempt dead-letters with reason max-attempts."""
    env = Env(tmp_path, server=srv.url, max_attempts=2)
    rec = env.queue()
    srv.faults.fail(503, count=2)
    role = env.role()
    role.pass_at(now())
    assert env.state.read("outbox", rec["key"])["attempts"] == 1  # type: ignore[index]
    role.pass_at(now() + 3600)
    dead = env.state.read("dead", rec["key"])
    assert dead is not None and dead["reason"] == "max-attempts" and dead["attempts"] == 2
    assert "503" in dead["last_error"]
    role.teardown()


def test_max_attempts_zero_retries_forever(srv: NtfyStandin, tmp_path: Path) -> None:
    """max_attempts: 0 keeps retrying however many attempts were made, at the capped delay."""
    env = Env(tmp_path, server=srv.url, max_attempts=0, retry_max_seconds=900)
    rec = env.queue(attempts=10_000)
    srv.faults.fail(500)
    role = env.role()
    t0 = now()
    role.pass_at(t0)
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and kept["attempts"] == 10_001
    assert 450 <= kept["next_attempt_at"] - t0 <= 901
    role.teardown()


def test_clock_jump_back_is_clamped(srv: NtfyStandin, tmp_path: Path) -> None:
    """A next_attempt_at far beyond the cap (the clock jumped back) is clamped to now + cap and stored."""
    env = Env(tmp_path, server=srv.url, retry_max_seconds=60)
    rec = env.queue(attempts=3, next_attempt_at=now() + 10 * 86400)
    role = env.role()
    t0 = now()
    result = role.pass_at(t0)
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and t0 + 59 <= kept["next_attempt_at"] <= t0 + 61
    assert result.next_in is not None and result.next_in <= 61
    role.pass_at(t0 + 61)  # and it is really sent once that time comes
    assert env.state.exists("sent", rec["key"]) and len(srv.requests) == 1
    role.teardown()


def test_clock_jump_forward_sends_at_once(srv: NtfyStandin, tmp_path: Path) -> None:
    """A next_attempt_at long in the past (the clock jumped forward) is simply due."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue(attempts=2, next_attempt_at=now() - 6 * 3600)
    role = env.role()
    role.pass_at(now())
    assert env.state.exists("sent", rec["key"])
    role.teardown()
