"""The real ntfy server's limits (2.11): what it answers and what the delivery role does with it.

Each answer gets docs/delivery.md's retry-table outcome and nothing is lost: a refused record ends
in `dead/` with the server's code (a receipt that `explain` shows), a rate-limited one is sent
once the server's bucket refills, and nothing is sent twice.

ntfy 2.11 answers 507 only to a UnifiedPush publish (``up=1``) on a topic without a subscriber,
which donebell never makes; a full attachment cache answers 413 41301, met here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import now
from donebell.workers.delivery.server_backoff import ServerBackoff
from support.delivery_kit import Env
from support.ntfy_real import RealNtfy, serve_module

pytestmark = pytest.mark.usefixtures("no_outside_config")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    """A 1 KiB message limit (so 2 KiB of JSON) and an attachment cache that is already full."""
    root = tmp_path_factory.mktemp("ntfy-small")
    yield from serve_module(
        root,
        default_access=None,
        message_size_limit="1k",
        attachment_cache_dir=root / "attachments",
        attachment_total_size_limit="1",
        base_url="http://127.0.0.1",  # attachments need one; nothing here follows it
    )


@pytest.fixture(scope="module")
def throttled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    """A visitor request bucket of 3, refilled one per 2 s (a slow pass on a busy machine stays inside it)."""
    yield from serve_module(
        tmp_path_factory.mktemp("ntfy-throttled"),
        default_access=None,
        visitor_request_limit_burst=3,
        visitor_request_limit_replenish="2s",
    )


def _dead(env: Env) -> dict[str, Any]:
    [name] = [p.stem for p in (env.state.root / "dead").glob("*.json")]
    receipt = env.state.read("dead", name)
    assert receipt is not None
    return receipt


@pytest.mark.parametrize(
    ("chars", "code"),
    [(1500, 41301), (3000, 41303)],
    ids=["attachment-cache-full-41301", "json-body-too-large-41303"],
)
def test_a_message_over_the_size_limit_is_dead_lettered_with_ntfys_code(
    chars: int, code: int, small: RealNtfy, tmp_path: Path
) -> None:
    """Over the message limit ntfy makes the body an attachment (cache full: 41301) or refuses the
    JSON (41303), both 413: dead, `permanent-http-error`, the code kept; the next record still goes."""
    topic = f"donebell-size-{code}"
    env = Env(tmp_path, server=small.url, topic=topic, include_message=True, max_message_chars=4000)
    env.queue(last_message="x" * chars)
    role = env.role()
    role.pass_at(now())
    receipt = _dead(env)
    assert receipt["reason"] == "permanent-http-error"
    assert (receipt["http_status"], receipt["ntfy_code"]) == (413, code)
    assert env.state.count("outbox") == 0 and small.poll(topic) == []
    env.queue(last_message="short enough")
    role.pass_at(now())
    assert env.state.count("sent") == 1 and [m["message"] for m in small.poll(topic)][0].startswith("short enough")
    role.teardown()
    explain = env.run_cli("explain", str(receipt["key"]))
    assert "[dead] reason permanent-http-error" in explain.stdout  # the refusal stays visible: nothing vanished


def test_the_request_limit_429_backs_off_and_everything_arrives_once(throttled: RealNtfy, tmp_path: Path) -> None:
    """Five records against a bucket of three: ntfy answers 429 42901; the outbox backs off (at least
    5 s, the table's row), then sends the rest; five messages on the server, five receipts, no repeat."""
    topic = "donebell-throttled"
    env = Env(tmp_path, server=throttled.url, topic=topic)
    for _ in range(5):
        env.queue()
    role = env.role()
    t0 = now()
    role.pass_at(t0)
    assert env.state.count("sent") == 3
    waiting = [env.state.read("outbox", p.stem) for p in (env.state.root / "outbox").glob("*.json")]
    limited = [r for r in waiting if r and r.get("last_http_status") == 429]
    assert len(limited) == 1 and "42901" in str(limited[0]["last_error"])
    assert limited[0]["next_attempt_at"] >= t0 + 5
    assert ServerBackoff.load(env.state).until >= t0 + 5  # the whole outbox waits, not only that record
    clock = t0
    deadline = time.monotonic() + 60
    while env.state.count("outbox") and time.monotonic() < deadline:
        time.sleep(2.2)  # the real bucket refills one request per 2 s
        clock += 30  # ...and the pass clock runs past the backoff
        role.pass_at(clock)
    role.teardown()
    time.sleep(2.5)  # a token in the bucket for the read-back
    assert env.state.count("sent") == 5 and env.state.count("outbox") == 0 and env.state.count("dead") == 0
    assert len(throttled.poll(topic)) == 5
