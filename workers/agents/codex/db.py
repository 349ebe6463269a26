"""Open Codex's SQLite databases strictly read-only (never write, never block Codex).

``mode=ro`` URI + ``PRAGMA query_only``; WAL-safe; a short busy timeout so a locked database
degrades the caller instead of stalling it. Query helpers live with their callers.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from donebell.workers.agents.codex import codex_sqlite_home

BUSY_TIMEOUT_MS = 200

STATE_DB = "state_5.sqlite"
GOALS_DB = "goals_1.sqlite"


class CodexDbUnavailable(Exception):
    """The database is missing, locked, corrupt or of an unknown schema; callers fall back."""


def db_path(name: str, sqlite_home: Path | str | None = None) -> Path:
    """``<sqlite_home>/<name>``; the environment's Codex SQLite home when none is given."""
    return (Path(sqlite_home) if sqlite_home else codex_sqlite_home()) / name


def open_ro(path: Path | str) -> sqlite3.Connection:
    """A read-only, query-only connection; raises :class:`CodexDbUnavailable`."""
    path = Path(path)
    if not path.is_file():
        raise CodexDbUnavailable(f"{path.name}: missing")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only=1")
    except sqlite3.Error as exc:
        raise CodexDbUnavailable(f"{path.name}: {exc}") from None
    return conn


def query(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Run a read query; any SQLite error (locked, corrupt, no such table) -> CodexDbUnavailable."""
    try:
        return list(conn.execute(sql, params).fetchall())
    except sqlite3.Error as exc:
        raise CodexDbUnavailable(str(exc)) from None
