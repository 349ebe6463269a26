"""A synthetic Codex home: a real ``state_5.sqlite`` thread index and archived rollouts.

The index is built from the real schema (``support.codex_sqlite``); rollouts are
small but well-formed JSONL files (``session_meta`` + ``task_complete``) under
``archived_sessions/YYYY/MM/DD/``, as many as asked, with matching archived ``threads`` rows.
Used by the supervisor tests and ``benchmarks/bench_footprint.py``.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

from support.codex_sqlite import create_schema


def make_codex_home(root: Path, archived: int = 0, day: str = "2025/01/15") -> Path:
    """Create ``root`` as a Codex home with ``archived`` archived rollouts; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / "archived_sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(root / "state_5.sqlite")
    try:
        create_schema(db)
        rows = []
        for n in range(archived):
            tid = str(uuid.UUID(int=n + 1))
            path = folder / f"rollout-2025-01-15T10-00-00-{tid}.jsonl"
            meta = {"type": "session_meta", "payload": {"id": tid, "cwd": "/work/p", "source": "cli"}}
            done = {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": f"turn-{n}"}}
            path.write_text(json.dumps(meta) + "\n" + json.dumps(done) + "\n")
            rows.append((tid, str(path), 1736935200, 1736935200, "cli", "/work/p", f"thread {n}", 1))
        db.executemany(
            "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, cwd, title, archived,"
            " model_provider, sandbox_policy, approval_mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'openai', '{}', 'never')",
            rows,
        )
        db.commit()
    finally:
        db.close()
    return root


def index_threads(home: Path, threads: list[tuple[str, Path]]) -> None:
    """Add a ``state_5.threads`` row per ``(thread id, rollout)`` in ``home``, as Codex indexes a
    root ``exec`` thread: a WAL database whose rows carry a title, the first message and a preview
    of a real task's size (what a scan of the table reads), created with the real schema if new."""
    path = home / "state_5.sqlite"
    new = not path.exists()
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        if new:
            create_schema(db)
        ask = "Fix the failing parser test and explain the cause. " * 6
        db.executemany(
            "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,"
            " sandbox_policy, approval_mode, first_user_message, preview, cli_version)"
            " VALUES (?, ?, 1764800000, 1764800000, 'exec', 'openai', '/work/project', ?, ?, 'never', ?, ?, '0.171.0')",
            [(tid, str(rollout), ask[:80], '{"type":"workspace-write"}', ask, ask[:200]) for tid, rollout in threads],
        )
        db.commit()
    finally:
        db.close()
