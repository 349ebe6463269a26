"""Which rollouts to watch, without walking history: the SQLite thread index plus hot folders.

* **Hot folders**: ``sessions/YYYY/MM/DD/`` for today and yesterday (UTC, and the local dates
  when they differ). A folder is relisted only when its mtime changed (new file) or on the
  periodic rescan.
* **Thread index**: ``state_5.threads`` rows updated within a window, read-only
  (``shared.codex_db``); this finds a resumed thread whose rollout lives in an old date folder.
  A missing, locked, corrupt or unknown-schema database yields a status word instead of rows.
* **Full walk** of ``sessions/`` and ``archived_sessions/``: only for an explicit
  ``--scan-scope all`` run.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from donebell.workers.agents.codex import rollout_files
from donebell.workers.agents.codex.db import STATE_DB, CodexDbUnavailable, open_ro, query

INDEX_WINDOW_SECONDS = 24 * 3600  # threads updated this recently are watched
INDEX_ROW_LIMIT = 2000
_ROLLOUT_NAME = re.compile(r"^rollout-.*\.jsonl$")
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")

IndexStatus = str  # ok | missing | locked | corrupt | unknown-schema | error


def is_rollout_name(name: str) -> bool:
    return bool(_ROLLOUT_NAME.match(name))


def thread_id_from_name(path: str) -> str | None:
    """The thread UUID at the end of ``rollout-…-<uuid>.jsonl`` (a fallback identity)."""
    m = _UUID_TAIL.search(path)
    return m.group(1) if m else None


def hot_day_folders(codex_home: Path, at: float) -> list[Path]:
    """Today's and yesterday's ``sessions/YYYY/MM/DD`` folders (see ``rollout_files``)."""
    return [Path(p) for p in rollout_files.hot_day_folders(str(codex_home), at)]


def nearest_existing(path: Path, stop: Path) -> Path | None:
    """``path`` or its closest existing ancestor not above ``stop`` (what to watch for creation).

    On ``os.path`` strings: every idle pass of the local scanner asks this of each hot folder."""
    start = current = os.fspath(path)
    end = os.fspath(stop)
    while True:
        if os.path.isdir(current):
            return path if current == start else Path(current)
        parent = os.path.dirname(current)
        if current == end or parent == current:
            return None
        current = parent


@dataclass
class HotFolders:
    """Lists rollouts in the hot folders, relisting a folder only when its mtime changed."""

    codex_home: Path
    _listing: dict[Path, tuple[int, list[str]]] = field(default_factory=dict)
    _days: tuple[int, list[Path]] = (-1, [])  # the hot folders of one minute: dates change on a minute

    def files(self, at: float, *, force: bool = False) -> tuple[list[Path], list[str]]:
        minute = int(at // 60)
        if self._days[0] != minute:
            self._days = (minute, hot_day_folders(self.codex_home, at))
        folders = self._days[1]
        found: list[str] = []
        for folder in folders:
            try:
                mtime = os.stat(folder).st_mtime_ns
            except OSError:
                self._listing.pop(folder, None)
                continue
            cached = self._listing.get(folder)
            if cached is None or cached[0] != mtime or force:
                cached = (mtime, list_rollouts(folder))
                self._listing[folder] = cached
            found.extend(cached[1])
        for gone in [f for f in self._listing if f not in folders]:
            del self._listing[gone]
        return folders, found


def list_rollouts(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as it:
            return sorted(os.path.join(folder, e.name) for e in it if is_rollout_name(e.name))
    except OSError:
        return []


def walk_all(codex_home: Path) -> Iterator[str]:
    """Every rollout under ``sessions/`` and ``archived_sessions/`` (``--scan-scope all`` only)."""
    for top in ("sessions", "archived_sessions"):
        for dirpath, dirnames, filenames in os.walk(codex_home / top):
            dirnames.sort()
            for name in sorted(filenames):
                if is_rollout_name(name):
                    yield os.path.join(dirpath, name)


def remap_to_root(db_path: str, root: Path) -> Path | None:
    """Map an index path written on another system (a WSL distro's ``/home/u/.codex/sessions/…``)
    onto ``root``: everything from the last ``sessions``/``archived_sessions`` component on."""
    parts = [p for p in re.split(r"[\\/]+", db_path) if p]
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("sessions", "archived_sessions"):
            return root.joinpath(*parts[i:])
    return None


@dataclass(frozen=True)
class IndexRow:
    thread_id: str
    rollout_path: str
    source: str | None
    updated_at: float


@dataclass
class IndexResult:
    status: IndexStatus
    detail: str = ""
    rows: list[IndexRow] = field(default_factory=list)


def classify_db_error(message: str) -> IndexStatus:
    text = message.lower()
    if "missing" in text:
        return "missing"
    if "locked" in text or "busy" in text:
        return "locked"
    if "no such table" in text or "no such column" in text:
        return "unknown-schema"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "corrupt"
    return "error"


class ThreadIndex:
    """Reads recently updated threads from ``state_5.sqlite``; never writes, never blocks long."""

    def __init__(self, sqlite_home: Path, window: float = INDEX_WINDOW_SECONDS) -> None:
        self.db = sqlite_home / STATE_DB
        self.window = window

    def signature(self) -> tuple[tuple[int, int] | None, ...]:
        """(mtime, size) of the database and its WAL: unchanged means no new rows to find."""
        sig: list[tuple[int, int] | None] = []
        for path in (self.db, self.db.with_name(STATE_DB + "-wal")):
            try:
                st = os.stat(path)
                sig.append((st.st_mtime_ns, st.st_size))
            except OSError:
                sig.append(None)
        return tuple(sig)

    def recent(self, at: float) -> IndexResult:
        try:
            conn = open_ro(self.db)
        except CodexDbUnavailable as exc:
            return IndexResult(classify_db_error(str(exc)), str(exc)[:200])
        try:
            rows = query(
                conn,
                "SELECT id, rollout_path, source, updated_at FROM threads WHERE updated_at >= ? "
                "ORDER BY updated_at DESC LIMIT ?",
                (int(at - self.window), INDEX_ROW_LIMIT),
            )
        except CodexDbUnavailable as exc:
            return IndexResult(classify_db_error(str(exc)), str(exc)[:200])
        finally:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        result = IndexResult("ok")
        for tid, path, source, updated in rows:
            if isinstance(tid, str) and isinstance(path, str) and path:
                result.rows.append(
                    IndexRow(
                        tid,
                        path,
                        source if isinstance(source, str) else None,
                        float(updated) if isinstance(updated, (int, float)) else 0.0,
                    )
                )
        return result
