"""Network faults through the whole pipeline: hook -> gate -> delivery against the ntfy stand-in.

Every failure class of the retry table (docs/delivery.md) leaves the turn in ``outbox/`` with its
attempt written down, or, for a permanent one, in ``dead/`` with the reason: never silently gone.
Once the fault clears, every retried turn is delivered; a turn the server stored before the fault
(accept-then-drop, a timeout after storing) arrives twice with the same ``sequence_id``, and only
those do.
"""

from __future__ import annotations

import collections
import socket
from collections.abc import Callable
from typing import Any

import pytest
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence

#: Answers of the server, each consumed by one POST: (name, fault, "retry"|"dead", stored by the server).
ANSWERS: list[tuple[str, Callable[[NtfyStandin], None], str, bool]] = [
    ("500", lambda s: s.faults.fail(500), "retry", False),
    (
        "502 proxy html",
        lambda s: s.faults.fail(502, body=b"<html>bad gateway</html>", content_type="text/html"),
        "retry",
        False,
    ),
    ("503", lambda s: s.faults.fail(503), "retry", False),
    ("401", lambda s: s.faults.fail(401), "retry", False),
    ("403", lambda s: s.faults.fail(403), "retry", False),
    ("408", lambda s: s.faults.fail(408), "retry", False),
    ("409", lambda s: s.faults.fail(409), "retry", False),
    ("425", lambda s: s.faults.fail(425), "retry", False),
    ("429 42901", lambda s: s.faults.fail(429, 42901), "retry", False),
    ("429 42908", lambda s: s.faults.fail(429, 42908), "retry", False),
    ("503 Retry-After", lambda s: s.faults.fail(503, headers={"Retry-After": "1"}), "retry", False),
    ("500 after storing", lambda s: s.faults.fail(500, store=True), "retry", True),
    ("accept then drop", lambda s: s.faults.accept_then_drop(), "retry", True),
    ("accept then reset", lambda s: s.faults.accept_then_drop(reset=True), "retry", True),
    ("301", lambda s: s.faults.redirect(301), "dead", False),
    ("302", lambda s: s.faults.redirect(302), "dead", False),
    ("307", lambda s: s.faults.redirect(307), "dead", False),
    ("308", lambda s: s.faults.redirect(308), "dead", False),
    ("400", lambda s: s.faults.fail(400, 40009), "dead", False),
    ("404", lambda s: s.faults.fail(404), "dead", False),
    ("413", lambda s: s.faults.fail(413, 41303), "dead", False),
]


def _promoted(rig: Rig, n: int) -> list[Turn]:
    """``n`` finished root turns, promoted to outbox/ by a real gate pass (nothing sent yet)."""
    return rig.hooked(n)


def _outbox(rig: Rig, turn: Turn) -> dict[str, Any]:
    rec: dict[str, Any] | None = rig.state.read("outbox", turn.key)
    assert rec is not None
    return rec


def test_every_answer_class_of_the_retry_table_keeps_or_dead_letters_the_turn(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """21 server answers (5xx, retryable 4xx, 429 codes, Retry-After, store-then-error/drop/reset, 3xx,
    other 4xx), one per turn: retried turns wait in outbox/ with their error, 3xx is never followed,
    permanent ones are dead-lettered; after the faults clear every retried turn is delivered."""
    rig = make_rig(retry_max_seconds=30.0)
    turns = _promoted(rig, len(ANSWERS))
    for _, fault, _, _ in ANSWERS:
        fault(standin)

    first = rig.deliver_once()
    assert first.rc == 0, first.output
    # The first answer is a 500: the whole outbox backs off after that one POST (server_backoff.py).
    assert len(standin.requests) == 1
    backoff_file = rig.state_dir / "health" / "server-backoff.json"
    # Forget the server-wide wait (as a restart would) to meet every answer; the clock goes back 2 s a
    # run, so no record retried in this loop becomes due again and takes another record's answer.
    for run in range(1, len(ANSWERS)):
        if not standin.faults.pending:
            break
        backoff_file.unlink(missing_ok=True)
        assert rig.deliver_once(env={"DONEBELL_CLOCK_OFFSET": str(-2 * run)}).rc == 0

    assert len(standin.requests) == len(ANSWERS)  # one POST each: no redirect was followed
    fates = collections.Counter(rig.where(t.key)[0] for t in turns)
    assert fates == {
        "outbox": sum(1 for a in ANSWERS if a[2] == "retry"),
        "dead": sum(1 for a in ANSWERS if a[2] == "dead"),
    }
    for turn in turns:
        if rig.where(turn.key) == ["outbox"]:
            rec = _outbox(rig, turn)
            assert rec["attempts"] == 1 and rec["last_error"], rec
            assert 0 < rec["next_attempt_at"] - rec["last_attempt_at"] <= 30.0
        else:
            dead = rig.state.read("dead", turn.key)
            assert dead is not None and dead["reason"] == "permanent-http-error"
    stored = {m["sequence_id"] for m in standin.messages(rig.topic)}

    assert standin.faults.pending == 0
    retried = [t for t in turns if rig.where(t.key) == ["outbox"]]
    rig.settle([t.key for t in retried], scan=False, env={"DONEBELL_CLOCK_OFFSET": "60"})

    sent = messages_by_sequence(standin.messages(rig.topic))
    for turn in retried:
        assert rig.where(turn.key) == ["sent"]
        assert sent[turn.sequence_id] == (2 if turn.sequence_id in stored else 1)
    duplicates = sorted(sid for sid, n in sent.items() if n > 1)
    assert len(duplicates) == sum(1 for a in ANSWERS if a[3])
    record(
        "network_answers",
        classes=len(ANSWERS),
        retried=len(retried),
        dead_lettered=fates["dead"],
        lost=0,
        duplicates=len(duplicates),
        duplicate_sequence_ids=duplicates,
    )


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


TRANSPORT = ["dns", "connect refused", "tls to plain http", "slow, not stored", "slow, stored", "hang"]


@pytest.mark.parametrize("case", TRANSPORT)
def test_transport_failures_keep_the_turn_until_the_network_returns(
    make_rig: Callable[..., Rig], standin: NtfyStandin, case: str
) -> None:
    """DNS failure (.invalid), connection refused, TLS to a plain-HTTP port, a slow server past
    timeout_seconds (stored or not) and a hung server: the turn waits in outbox/ with the failure's
    kind, then is delivered once the server is reachable (twice, same sequence_id, only if stored)."""
    rig = make_rig(timeout_seconds=0.5, retry_max_seconds=30.0)
    plain = f"http://127.0.0.1:{standin.port}"
    cases: dict[str, tuple[str, Callable[[], None], str, bool]] = {
        "dns": ("http://donebell-reliability.invalid", lambda: None, "dns", False),
        "connect refused": (f"http://127.0.0.1:{_closed_port()}", lambda: None, "connect", False),
        "tls to plain http": (f"https://127.0.0.1:{standin.port}", lambda: None, "tls", False),
        "slow, not stored": (plain, lambda: standin.faults.delay(2.0, store=False), "timeout", False),
        "slow, stored": (plain, lambda: standin.faults.delay(2.0, store=True), "timeout", True),
        "hang": (plain, lambda: standin.faults.hang(max_seconds=5.0), "timeout", False),
    }
    server, fault, kind, stored = cases[case]
    (turn,) = _promoted(rig, 1)
    rig.update_config(server=server)
    fault()

    assert rig.deliver_once().rc == 0

    rec = _outbox(rig, turn)
    assert rec["attempts"] == 1 and str(rec["last_error"]).startswith(kind), rec["last_error"]
    standin.faults.clear()
    rig.update_config(server=standin.url)
    rig.settle([turn.key], scan=False, env={"DONEBELL_CLOCK_OFFSET": "60"})
    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 2 if stored else 1}
    record(
        f"network_transport_{case}",
        error=str(rec["last_error"])[:60],
        lost=0,
        duplicates=int(stored),
        duplicate_sequence_ids=[turn.sequence_id] if stored else [],
    )
