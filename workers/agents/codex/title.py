"""A Codex thread's title, for ``include_thread_title``: SQLite first, ``session_index.jsonl`` after.

``state_5.threads`` is queried by the exact thread id, read-only and query-only (``codex_db``);
a user-given ``name`` wins over the automatic ``title``. When the database is missing, locked or
has no row, Codex's append-only ``session_index.jsonl`` (``{"id", "thread_name", "updated_at"}``
lines; the newest line for an id wins) is read from its bounded tail.

A remote candidate's SQLite lives on its watch root (a share that may hang), and this runs in the
delivery process at send time: for a record of a remote root (``remote_root`` set by the gate, or
source ``remote-scanner``) no file is opened; the title the gate's probe worker looked up at
promotion (``thread_title``, within ``watch_remote_timeout_seconds``) is used instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.shared.bounded_read import read_tail
from donebell.workers.agents.codex import codex_home, db

SESSION_INDEX = "session_index.jsonl"
SESSION_INDEX_TAIL_BYTES = 1 << 20
REMOTE_SOURCE = "remote-scanner"


def is_remote_record(record: dict[str, Any]) -> bool:
    """True for a record whose evidence lives on a watch root (never read at send time)."""
    sources = record.get("sources")
    return (
        bool(record.get("remote_root"))
        or record.get("source") == REMOTE_SOURCE
        or (isinstance(sources, list) and REMOTE_SOURCE in sources)
    )


def thread_title(record: dict[str, Any]) -> str | None:
    """The title of the record's Codex thread, or None when no source knows one.

    Never touches a remote root: such a record's title is the one stored at promotion.
    """
    if is_remote_record(record):
        stored = record.get("thread_title")
        return stored if isinstance(stored, str) and stored.strip() else None
    return lookup_title(record)


def lookup_title(record: dict[str, Any]) -> str | None:
    """The title from the record's own SQLite / ``session_index.jsonl`` (may block on a hung share)."""
    thread = record.get("thread_id")
    if not isinstance(thread, str) or not thread:
        return None
    sqlite_home = _str(record.get("sqlite_home")) or _str(record.get("codex_home")) or None
    title = _from_sqlite(thread, sqlite_home)
    if title:
        return title
    home = Path(_str(record.get("codex_home")) or codex_home())
    return _from_session_index(thread, home / SESSION_INDEX)


def _from_sqlite(thread: str, sqlite_home: str | None) -> str | None:
    try:
        conn = db.open_ro(db.db_path(db.STATE_DB, sqlite_home))
    except db.CodexDbUnavailable:
        return None
    try:
        try:
            rows = db.query(conn, "SELECT name, title FROM threads WHERE id = ?", (thread,))
        except db.CodexDbUnavailable:  # an older schema without the name column
            rows = db.query(conn, "SELECT NULL, title FROM threads WHERE id = ?", (thread,))
    except db.CodexDbUnavailable:
        return None
    finally:
        conn.close()
    for name, title in rows:
        for value in (name, title):
            if isinstance(value, str) and value.strip():
                return value
    return None


def _from_session_index(thread: str, path: Path) -> str | None:
    try:
        # bounded_read: a FIFO or device planted at the index must not hang delivery at send time.
        window = read_tail(path, SESSION_INDEX_TAIL_BYTES)
    except OSError:
        return None
    lines = window.data.split(b"\n")
    if window.offset > 0:
        lines = lines[1:]  # the first line of a tail window is probably partial
    for line in reversed(lines):
        if thread.encode() not in line:
            continue
        try:
            entry = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(entry, dict) and entry.get("id") == thread:
            name = entry.get("thread_name")
            if isinstance(name, str) and name.strip():
                return name
    return None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""
