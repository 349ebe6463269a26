"""Remote gate test kit: candidates as the remote-scanner writes them, the probe worker processes
of a root, the last probe decision of a record, and a clean slate of persistent probe pools per test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from donebell.shared import ingest, records
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.gate import _PERSISTENT
from donebell.workers.gate.remote_pool import SYNC_WINDOW_SECONDS

WORKER_MODULE = "donebell.workers.gate.remote_worker"
#: A pass may wait this long for remote answers; everything else in it is local work.
PASS_LIMIT = SYNC_WINDOW_SECONDS + 0.5


def probe_workers(root: Path | str) -> list[psutil.Process]:
    """Live (non-zombie) probe worker processes of ``root``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if WORKER_MODULE in cmdline and str(root) in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def wait_probe_workers_gone(root: Path | str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while probe_workers(root):
        assert time.monotonic() < deadline, f"probe workers of {root} still alive"
        time.sleep(0.05)


def submit_remote_candidate(state: StateDir, root: Path, thread: str, turn: str, rollout: Path, **extra: Any) -> str:
    """A candidate as the remote-scanner's child writes it: every path inside the root."""
    key = event_key("codex", thread, turn)
    values: dict[str, Any] = {
        "thread_id": thread,
        "turn_id": turn,
        "classification": "root",
        "root_thread_id": thread,
        "codex_home": str(root),
        "sqlite_home": str(root),
        "transcript_path": str(rollout),
        "origin": "wsl-test",
        "outcome": "done",
        **extra,
    }
    ingest.submit_candidate(state, records.new_candidate(key=key, provider="codex", source="remote-scanner", **values))
    return key


def remote_rollout(root: Path, thread: str) -> Path:
    """Where the remote Codex wrote it: today's folder (the gate's bounded search finds it there too)."""
    return root / "sessions" / time.strftime("%Y/%m/%d", time.gmtime()) / f"rollout-2026-11-30T09-56-38-{thread}.jsonl"


def last_record(state: StateDir, key: str) -> dict[str, Any]:
    folder = state.locate(key)
    assert folder is not None
    rec = state.read(folder, key)
    assert rec is not None
    history = (rec.get("probe") or {}).get("history") or rec.get("probe_history") or []
    return {"folder": folder, "record": rec, "reason": rec.get("reason"), "last": history[-1] if history else {}}


def fresh_probe_pools() -> Iterator[None]:
    """The body of each module's autouse fixture: no persistent probe pool before the test, and its
    own closed (its workers killed) afterwards."""
    _PERSISTENT.clear()
    yield
    for persistent in _PERSISTENT.values():
        pool = persistent.get("remote_pool")
        if pool is not None:
            pool.close()
    _PERSISTENT.clear()
