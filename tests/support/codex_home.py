"""A synthetic Codex home: a real ``state_5.sqlite`` thread index and archived rollouts.

The index is built from the real schema (``tests/fixtures/codex/sqlite-schema``); rollouts are
small but well-formed JSONL files (``session_meta`` + ``task_complete``) under
``archived_sessions/YYYY/MM/DD/``, as many as asked, with matching archived ``threads`` rows.
Used by the supervisor tests and ``benchmarks/bench_footprint.py``.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "codex" / "sqlite-schema" / "state_5.sqlite.schema.sql"


def _statements(text: str) -> list[str]:
    """The schema's statements, tables first (its dump lists triggers before their tables)."""
    out: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    out = [s for s in out if not s.startswith("CREATE TABLE sqlite_sequence")]
    order = {"CREATE TABLE": 0, "CREATE INDEX": 1, "CREATE UNIQUE INDEX": 1, "CREATE TRIGGER": 2}
    return sorted(out, key=lambda s: next((v for k, v in order.items() if s.startswith(k)), 3))


def make_codex_home(root: Path, archived: int = 0, day: str = "2025/01/15") -> Path:
    """Create ``root`` as a Codex home with ``archived`` archived rollouts; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / "archived_sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(root / "state_5.sqlite")
    try:
        if SCHEMA.exists():
            for statement in _statements(SCHEMA.read_text(encoding="utf-8")):
                db.execute(statement)
        else:  # the columns every reader of the index relies on
            db.execute(
                "CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER NOT NULL,"
                " updated_at INTEGER NOT NULL, source TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL,"
                " archived INTEGER NOT NULL DEFAULT 0)"
            )
        rows = []
        for n in range(archived):
            tid = str(uuid.UUID(int=n + 1))
            path = folder / f"rollout-2025-01-15T10-00-00-{tid}.jsonl"
            meta = {"type": "session_meta", "payload": {"id": tid, "cwd": "/work/p", "source": "cli"}}
            done = {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": f"turn-{n}"}}
            path.write_text(json.dumps(meta) + "\n" + json.dumps(done) + "\n")
            rows.append((tid, str(path), 1736935200, 1736935200, "cli", "/work/p", f"thread {n}", 1))
        columns = "id, rollout_path, created_at, updated_at, source, cwd, title, archived"
        extra = ", model_provider, sandbox_policy, approval_mode" if SCHEMA.exists() else ""
        filler = ", 'openai', '{}', 'never'" if SCHEMA.exists() else ""
        db.executemany(f"INSERT INTO threads ({columns}{extra}) VALUES (?, ?, ?, ?, ?, ?, ?, ?{filler})", rows)
        db.commit()
    finally:
        db.close()
    return root
