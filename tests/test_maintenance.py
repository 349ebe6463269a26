"""Maintenance: deletes only what has expired, through StateDir, and only after its start-up gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate, new_receipt, to_outbox
from donebell.shared.statedir import LOG_MAX_BYTES, StateDir, now
from support.supervisor_proc import Harness, harness
from support.waiting import wait_for

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptStatus

DAY = 86400.0


def _receipt(state: StateDir, folder: ReceiptStatus, name: str, age_days: float) -> str:
    key = event_key("codex", name, "turn")
    state.create(folder, new_receipt({"key": key, "provider": "codex"}, status=folder, reason="sent"))
    _age(state.record_path(folder, key), age_days)
    return key


def _age(path: Path, days: float) -> None:
    stamp = now() - days * DAY
    os.utime(path, (stamp, stamp))


def _config(isolated_env: dict[str, Path], **values: Any) -> None:
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps({"topic": "donebell-test", **values}))


def _worker(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "worker", "maintenance", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_cleanup_deletes_expired_receipts_and_debris_only(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """Old sent/suppressed/dead receipts, old tmp files and foreign lock shards go; everything else stays."""
    _config(isolated_env, sent_retention_days=14, dead_retention_days=30)
    old_sent = _receipt(state, "sent", "old-sent", 15)
    new_sent = _receipt(state, "sent", "new-sent", 13)
    old_supp = _receipt(state, "suppressed", "old-supp", 15)
    old_dead = _receipt(state, "dead", "old-dead", 31)
    young_dead = _receipt(state, "dead", "young-dead", 20)  # past sent retention, not dead retention
    raw = state.root / "dead" / f"{old_dead}.raw"
    raw.write_bytes(b"original bytes")
    # still in the outbox (a crash between receipt and removal): its receipt must stay
    in_flight = _receipt(state, "sent", "in-flight", 40)
    state.create("outbox", to_outbox(new_candidate(key=in_flight, provider="codex", source="test"), verdict="idle"))
    stray = state.root / "sent" / "notes.txt"
    stray.write_text("not a record")
    _age(stray, 100)
    old_tmp, new_tmp = state.root / "tmp" / "a.1.tmp", state.root / "tmp" / "b.2.tmp"
    old_tmp.write_bytes(b"")
    new_tmp.write_bytes(b"")
    os.utime(old_tmp, (now() - 7 * 3600, now() - 7 * 3600))
    (state.root / "mutation-locks" / "shard-07.lock").write_bytes(b"")
    (state.root / "mutation-locks" / "shard-64.lock").write_bytes(b"")
    (state.root / "mutation-locks" / "legacy-abc.lock").write_bytes(b"")
    (state.root / "notify.log").write_bytes(b"x" * (LOG_MAX_BYTES + 10))

    res = _worker("--once")
    assert res.returncode == 0, res.stderr
    assert state.keys("sent") == [in_flight, new_sent]  # oldest first
    assert state.keys("suppressed") == []
    assert state.keys("dead") == [young_dead]
    assert not raw.exists()
    assert stray.exists() and new_tmp.exists() and not old_tmp.exists()
    assert sorted(p.name for p in (state.root / "mutation-locks").iterdir()) == ["shard-07.lock"]
    assert (state.root / "notify.log.1").stat().st_size >= LOG_MAX_BYTES
    assert old_sent not in state.keys("sent") and old_supp not in state.keys("suppressed")
    health = state.read_health("maintenance") or {}
    assert health["last_cleanup"]["expired_sent"] == 1 and health["last_cleanup"]["expired_dead"] == 2


def test_a_fresh_orphan_raw_is_kept(state: StateDir) -> None:
    """A .raw whose letter is not written yet (or was lost) stays until it is itself old."""
    raw = state.root / "dead" / f"{event_key('codex', 'fresh', 'x')}.raw"
    raw.write_bytes(b"x")
    os.utime(raw, (now() - 90 * DAY, now() - 90 * DAY))  # an old file renamed in just now: ctime is fresh
    assert state.expire("dead", now() - 30 * DAY) == 0 and raw.exists()


def test_an_old_orphan_raw_expires_by_its_own_age(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """A .raw left without its letter (crash between the two unlinks) goes once it is itself expired."""
    _config(isolated_env, dead_retention_days=30)
    raw = state.root / "dead" / f"{event_key('codex', 'orphan', 'x')}.raw"
    raw.write_bytes(b"x")
    assert _worker("--once", DONEBELL_CLOCK_OFFSET=str(29 * DAY)).returncode == 0
    assert raw.exists()
    assert _worker("--once", DONEBELL_CLOCK_OFFSET=str(31 * DAY)).returncode == 0
    assert not raw.exists()


def test_zero_retention_keeps_receipts_for_ever(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """sent_retention_days=0 and dead_retention_days=0 mean: never expire."""
    _config(isolated_env, sent_retention_days=0, dead_retention_days=0)
    keys = [_receipt(state, "sent", "a", 400), _receipt(state, "dead", "b", 400)]
    assert _worker("--once").returncode == 0
    assert state.keys("sent") + state.keys("dead") == keys


def test_expire_refuses_a_non_receipt_folder(state: StateDir) -> None:
    """expire() never deletes from pending/ or outbox/: those records are work, not receipts."""
    with pytest.raises(Exception, match="receipt folders only"):
        state.expire("pending", now())


def test_gate_waits_for_the_delay_and_for_delivery_and_scanners(
    state: StateDir, isolated_env: dict[str, Path], sleeper: dict[str, Any]
) -> None:
    """Under a live supervisor, nothing is deleted before the delay, nor while delivery has not settled."""
    _config(isolated_env)
    expired = _receipt(state, "sent", "expired", 20)
    roles = {
        "delivery": {"state": "starting", **sleeper},
        "local-scanner": {"state": "throttled"},
        "remote-scanner": {"state": "disabled"},
    }
    state.write_health("supervisor", {"role": "supervisor", **sleeper, "started_at": now(), "roles": roles})
    state.write_health("delivery", {"role": "delivery", **sleeper, "state": "starting", "passes": 0})
    proc = subprocess.Popen(
        [sys.executable, "-m", "donebell.supervisor.cli", "worker", "maintenance"],
        env={**os.environ, "DONEBELL_MAINTENANCE_DELAY_SECONDS": "1.5"},
    )
    try:
        wait_for(
            lambda: "waiting for delivery" in str((state.read_health("maintenance") or {}).get("gate")),
            what="gate waiting for delivery",
        )
        assert now() - state.read_health("supervisor")["started_at"] >= 1.5  # type: ignore[index]
        assert state.keys("sent") == [expired]
        state.write_health("delivery", {"role": "delivery", **sleeper, "state": "ready", "passes": 1})
        wait_for(lambda: state.keys("sent") == [], what="cleanup after delivery settled")
        # The pass writes its health after the whole cleanup, a moment after the receipt went.
        wait_for(lambda: (state.read_health("maintenance") or {}).get("gate") == "open", what="gate open in health")
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path) as h:
        yield h


def test_under_the_supervisor_cleanup_starts_only_after_the_delay(h: Harness) -> None:
    """With the real supervisor, the first cleanup happens no earlier than the delay after its start."""
    h.state.ensure()
    expired = _receipt(h.state, "sent", "expired", 20)
    kept = _receipt(h.state, "sent", "kept", 1)
    roles = "delivery,local-scanner,maintenance"
    h.start(DONEBELL_SUPERVISOR_ROLES=roles, DONEBELL_MAINTENANCE_DELAY_SECONDS="2")
    wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    assert expired in h.state.keys("sent")
    cleanup = wait_for(lambda: h.health("maintenance").get("last_cleanup"), what="first cleanup")
    assert cleanup["at"] - h.supervisor_json()["started_at"] >= 2.0
    assert h.state.keys("sent") == [kept]
