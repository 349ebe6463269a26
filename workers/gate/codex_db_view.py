"""Codex's SQLite databases as the gate reads them: one kept read-only connection per file, and
answers reused only while SQLite says nothing was committed since (``PRAGMA data_version``).

Why: the gate evaluates a candidate twice (the decision, then the second fresh snapshot inside the
key's lock), and the children query scans the whole ``threads`` table (``source`` has no index):
about 2.5 ms at 10,000 threads, per candidate and per evaluation. A backlog of N candidates in a
home of N threads cost O(N²). Opening a connection per query cost another 0.07 ms each.

Why a reused answer is still fresh: it is returned only while the path names the same file
(device and inode: a replaced database is opened anew) and ``PRAGMA data_version`` on this
connection is unchanged, which SQLite changes whenever any other connection, in any process,
commits to the file. Such an answer is what the query would return now. The connection is
read-only and query-only, holds no transaction between statements (so it never holds back
Codex's WAL checkpoints), and is reopened after any error.

The views live for one gate pass (:func:`close_views` at its end): a pass is where the answers
are shared (every candidate's decision and second snapshot), and between passes no file of
Codex's stays open (on Windows an open file cannot be deleted or renamed by Codex).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any

from donebell.shared import codex_db

Rows = list[tuple[object, ...]]

#: Answers kept per database; beyond this the memo starts over (it is only a shortcut).
ANSWERS_LIMIT = 4096


class DbView:
    """One Codex database file: a kept connection and the answers valid at its ``data_version``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._version: object = None
        self._answers: dict[Any, Any] = {}

    def derived(self, name: Any, sql: str, params: tuple[object, ...], build: Callable[[Rows], Any]) -> Any | None:
        """``build(rows)`` of the query's current rows, rebuilt only when the database changed;
        None when the database is missing, locked, corrupt or of a foreign schema."""
        try:
            self._check_current()
            if name in self._answers:
                return self._answers[name]
            assert self._conn is not None
            value = build(codex_db.query(self._conn, sql, params))
        except codex_db.CodexDbUnavailable:
            self.close()  # the next question opens the file anew
            return None
        if len(self._answers) >= ANSWERS_LIMIT:
            self._answers.clear()
        self._answers[name] = value
        return value

    def _check_current(self) -> None:
        """Open (or reopen) the file at ``path``; forget every answer if anything was committed."""
        try:
            st = os.stat(self.path)
        except OSError:
            raise codex_db.CodexDbUnavailable(f"{os.path.basename(self.path)}: missing") from None
        identity = (st.st_dev, st.st_ino)
        if self._conn is None or identity != self._identity:
            self.close()
            self._conn = codex_db.open_ro(self.path)
            self._identity = identity
            # A kept connection keeps its page cache: the OS caches the file anyway, so hold
            # 256 KiB (SQLite's default is 2 MiB) and keep the role's memory in its budget.
            codex_db.query(self._conn, "PRAGMA cache_size=-256")
        version = codex_db.query(self._conn, "PRAGMA data_version")
        if not version or version[0][0] != self._version:
            self._answers.clear()
            self._version = version[0][0] if version else None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass  # closing a broken connection: nothing left to release
        self._conn, self._identity, self._version = None, None, None
        self._answers.clear()


def view_for(views: dict[str, DbView], path: str) -> DbView:
    """The kept view of ``path`` in ``views`` (closed by :func:`close_views`), created on first use."""
    view = views.get(path)
    if view is None:
        if len(views) >= 64:  # homes come from records: bound the connections kept open
            for old in views.values():
                old.close()
            views.clear()
        view = views[path] = DbView(path)
    return view


def close_views(views: dict[str, DbView]) -> None:
    """Close every kept connection in ``views`` (the end of a gate pass)."""
    for view in views.values():
        view.close()
    views.clear()
