"""The wake queue in the state directory: records keyed by message id, claims, cursor, expiry."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import iter_wake_records


def test_records_claims_cursor_and_expiry(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state").ensure()
    assert list(iter_wake_records(state)) == [] and not (tmp_path / "state" / "wake").exists()  # readers create nothing
    queue = state.wake_queue()
    record, new = queue.receive("msg1", {"provider": "codex"})
    again, new_again = queue.receive("msg1", {"provider": "codex"})
    assert new and not new_again and again["key"] == record["key"]
    queue.advance(record, "refused", reason="replay")
    queue.advance(record, "failed")
    stored = queue.read(record["key"])
    assert stored is not None and "reason" not in stored  # a reason belongs to its own step
    assert [h.get("reason") for h in stored["history"]] == [None, "replay", None]
    assert queue.claim("nonce-1", owner="a") and queue.claim("nonce-1", owner="a")  # redone after a crash
    assert not queue.claim("nonce-1", owner="b")
    assert queue.cursor() is None
    queue.set_cursor("abcDEF123456")
    assert queue.cursor() == "abcDEF123456"
    claim_files = list((tmp_path / "state" / "wake" / "claims").iterdir())
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in claim_files)
    open_one, _ = queue.receive("msg2", {})
    assert queue.expire(time.time() - 3600) == 0  # nothing is old yet
    old = time.time() - 7200
    for p in claim_files:
        os.utime(p, (old, old))
    stored["updated_at"] = old
    state.replace("wake/replies", stored)
    assert queue.expire(time.time() - 3600) == 2  # the finished record and the claim; never an open one
    assert [r["message_id"] for r in iter_wake_records(state)] == ["msg2"]
