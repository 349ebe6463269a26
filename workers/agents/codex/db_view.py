"""Codex's SQLite databases as one gate pass reads them: one read-only connection per file, and
answers reused only while SQLite says nothing was committed since (``PRAGMA data_version``).

Why: the gate evaluates a candidate twice (the decision, then the second fresh snapshot inside the
key's lock), and the children query scans the whole ``threads`` table (``source`` has no index).
With a connection and a scan per candidate and evaluation, a backlog of N candidates in a home of
N threads cost O(N²) (``benchmarks/bench_backlog.py``: 93.5 s for 10,000, 28.8 s with this).

Why a reused answer is still fresh: it is returned only while the path names the same file
(device and inode: a replaced database is opened anew) and ``PRAGMA data_version`` on this
connection is unchanged, which SQLite changes whenever any other connection, in any process,
commits to the file. Such an answer is what the query would return now. The connection is
read-only and query-only, holds no transaction between statements (so it never holds back
Codex's WAL checkpoints), and is reopened after any error.

:class:`PassDatabases` lives for one pass (``GateContext.databases``, shared by its second-snapshot
contexts, closed when the pass ends): between passes no file of Codex's stays open (on Windows an
open file cannot be deleted or renamed by Codex).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from donebell.workers.agents.codex import db

if TYPE_CHECKING:
    from donebell.workers.kit.gate_context import GateContext

Rows = list[tuple[object, ...]]
Build = Callable[[Rows], Any]

#: Answers kept per database; beyond this the memo starts over (it is only a shortcut).
ANSWERS_LIMIT = 4096
#: Databases open at once: homes come from records, so bound the connections a pass keeps.
OPEN_LIMIT = 64


def _rows(rows: Rows) -> Rows:
    return rows


class DbView:
    """One Codex database file: a kept connection and the answers valid at its ``data_version``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._version: object = None
        self._answers: dict[tuple[str, tuple[object, ...], Build], Any] = {}

    def answer(self, sql: str, params: tuple[object, ...], build: Build | None = None) -> Any | None:
        """The query's current rows (or ``build`` of them), rebuilt only when the database changed;
        None when the database is missing, locked, corrupt or of a foreign schema."""
        build = build or _rows
        key = (sql, params, build)
        try:
            conn = self._current()
            if key not in self._answers:
                if len(self._answers) >= ANSWERS_LIMIT:
                    self._answers.clear()
                self._answers[key] = build(db.query(conn, sql, params))
        except db.CodexDbUnavailable:
            self.close()  # the next question opens the file anew
            return None
        return self._answers[key]

    def _current(self) -> sqlite3.Connection:
        """The connection to the file now at ``path``; every answer forgotten if anything was committed."""
        try:
            st = os.stat(self.path)
        except OSError:
            raise db.CodexDbUnavailable(f"{os.path.basename(self.path)}: missing") from None
        if self._conn is None or (st.st_dev, st.st_ino) != self._identity:
            self.close()
            self._conn = db.open_ro(self.path)
            self._identity = (st.st_dev, st.st_ino)
            # The OS caches the file anyway: 256 KiB of SQLite page cache (default 2 MiB) is enough.
            db.query(self._conn, "PRAGMA cache_size=-256")
        rows = db.query(self._conn, "PRAGMA data_version")
        version = rows[0][0] if rows else None
        if version is None or version != self._version:
            self._answers.clear()
            self._version = version
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass  # closing a broken connection: nothing left to release
        self._conn, self._identity, self._version = None, None, None
        self._answers.clear()


class PassDatabases:
    """The databases one pass has opened, by path; :meth:`close` at the end of the pass."""

    def __init__(self) -> None:
        self._views: dict[str, DbView] = {}

    def view(self, path: str) -> DbView:
        view = self._views.get(path)
        if view is None:
            if len(self._views) >= OPEN_LIMIT:
                self.close()
            view = self._views[path] = DbView(path)
        return view

    def close(self) -> None:
        for view in self._views.values():
            view.close()
        self._views.clear()


#: The gate context's name for this pass's databases (``GateContext.pass_resources``).
PASS_RESOURCE = "codex-databases"


def pass_databases(ctx: GateContext) -> PassDatabases:
    """The pass's databases: made on first use, shared with its second-snapshot contexts."""
    found = ctx.pass_resources.get(PASS_RESOURCE)
    if not isinstance(found, PassDatabases):
        found = ctx.pass_resources[PASS_RESOURCE] = PassDatabases()
    return found
