"""The scan loop both rollout scanners share: discover, stat, tail what changed, submit.

One :class:`ScanEngine` owns one Codex home and one cursor namespace. A *light* pass (a wake-up
or heartbeat) stats the hot set only: hot folders whose mtime changed are relisted, each watched
file is ``stat``ed, and only a file whose identity/size/mtime differs from what was last seen is
opened. A *full* pass (every ``watch_scan_seconds``) also relists the hot folders, asks the
thread index when it changed, and, with ``scope="all"``, walks the whole archive once.
What happens to one file once it is watched (stat, tail from its cursor, submit) is
:class:`~donebell.workers.agents.codex.scan_file.RolloutFileTailer`'s; this module decides which files are
watched and reports on the pass. Nothing here imports pydantic: the remote scanner's one-shot
child uses this module directly.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donebell.shared.statedir import StateDir, now
from donebell.workers.agents.codex.discovery import (
    HotFolders,
    IndexResult,
    ThreadIndex,
    nearest_existing,
    remap_to_root,
    walk_all,
)
from donebell.workers.agents.codex.rollout_evidence import SourceContext
from donebell.workers.agents.codex.scan_file import RolloutFileTailer, ScanReport, Watched
from donebell.workers.kit.jsonl_tail import CursorStore

INDEX_MIN_INTERVAL = 2.0  # seconds between thread-index queries triggered by database changes
INDEX_RECHECK = 600.0  # query an unchanged index at least this often (slides the window)
#: Index states a light pass queries again once the database changed: none costs a busy timeout
#: (a locked one does; corrupt is retried by full passes only).
LIGHT_RETRY = ("ok", "missing", "unknown-schema")


@dataclass
class ScanOptions:
    source: str  # "scanner" | "remote-scanner"
    cursor_folder: str  # "watch/local" | "watch/remote/<root-hash>"
    codex_home: Path
    sqlite_home: Path
    origin: str | None
    replay_seconds: float
    include_message: bool
    scope: str = "hot"  # "hot" | "all"
    remap_index_paths: bool = False  # remote roots: index paths were written on the other system


class ScanEngine:
    def __init__(self, state: StateDir, opts: ScanOptions) -> None:
        self.state, self.opts = state, opts
        self.store = CursorStore(state, opts.cursor_folder, "codex")
        self.hot = HotFolders(opts.codex_home)
        self.index = ThreadIndex(opts.sqlite_home)
        self.ctx = SourceContext(
            opts.source, str(opts.codex_home), str(opts.sqlite_home), opts.origin, opts.include_message
        )
        self.tailer = RolloutFileTailer(
            state, self.store, self.ctx, source=opts.source, replay_seconds=opts.replay_seconds
        )
        self.watched: dict[str, Watched] = {}
        self.index_paths: dict[str, str | None] = {}  # path -> threads.source
        self._resolved: dict[str, str] = {}  # index path as written -> realpath (local homes)
        self.index_result = IndexResult("not-checked")
        self.index_checked_at: float | None = None
        self._index_sig: object = None
        self._index_query_mono = -1e18
        self.index_retry_at: float | None = None  # monotonic time a throttled index change is due
        self.hot_folders: list[Path] = []
        self.walked = False
        self._nearest_seen: dict[Path, tuple[Path, str | None]] = {}  # hot folder -> (answer, folder below it)
        self._parents: tuple[tuple[dict[str, str | None], tuple[Path, ...]], list[Path]] | None = None

    # discovery -------------------------------------------------------------------------

    def _refresh_index(self, full: bool) -> int:
        sig = self.index.signature()
        since = time.monotonic() - self._index_query_mono
        changed = sig != self._index_sig
        if full:
            # A failed index is retried on full passes only: a locked one costs a busy timeout.
            due = changed or self.index_result.status != "ok" or since >= INDEX_RECHECK
        else:
            # A missing index that has just appeared (Codex's first run after install) costs no
            # busy timeout: query it now, not a full rescan (watch_scan_seconds) later. Nor does
            # one read while Codex was still creating its tables (unknown-schema) and written since.
            due = changed and since >= INDEX_MIN_INTERVAL and self.index_result.status in LIGHT_RETRY
        # A change seen inside the throttle interval is queried when it ends (the role's next pass
        # is scheduled for then): no later file event may come to wake it.
        throttled = not full and changed and not due and self.index_result.status in LIGHT_RETRY
        self.index_retry_at = self._index_query_mono + INDEX_MIN_INTERVAL if throttled else None
        if not due:
            return 0
        mono = time.monotonic()
        self._index_sig, self._index_query_mono = sig, mono
        self.index_result = self.index.recent(now())
        self.index_checked_at = now()
        if self.index_result.status == "ok":
            paths: dict[str, str | None] = {}
            resolved: dict[str, str] = {}
            for row in self.index_result.rows:
                path = self._index_path(row.rollout_path, resolved)
                if path is not None:
                    paths[path] = row.source
            self.index_paths, self._resolved = paths, resolved
        return 1

    def _index_path(self, raw: str, resolved: dict[str, str]) -> str | None:
        if self.opts.remap_index_paths:
            mapped = remap_to_root(raw, self.opts.codex_home)
            return None if mapped is None else os.path.normpath(mapped)
        # Codex may have spelled its home through a symlink: resolve, so one file has one cursor
        # (the hot folders are listed under the resolved home). Cached across index refreshes.
        real = self._resolved.get(raw)
        if real is None:
            path = Path(raw) if Path(raw).is_absolute() else self.opts.codex_home / raw
            real = os.path.realpath(path)
        resolved[raw] = real
        return real

    def _discover(self, full: bool, report: ScanReport) -> list[str]:
        report.counters["index_queries"] += self._refresh_index(full)
        self.hot_folders, hot = self.hot.files(now(), force=full)
        wanted = dict.fromkeys(hot)
        wanted.update(dict.fromkeys(self.index_paths))
        walked: list[str] = []
        if self.opts.scope == "all" and full and not self.walked:
            walked = [p for p in walk_all(self.opts.codex_home) if p not in wanted]
            self.walked = True
        for path in list(self.watched):
            if path not in wanted:
                del self.watched[path]  # its cursor stays on disk for when it is hot again
        for path in wanted:
            w = self.watched.get(path)
            if w is None:
                w = self.watched[path] = Watched(path)
            w.index_source = self.index_paths.get(path)
        return walked

    # one pass --------------------------------------------------------------------------

    def scan(self, *, full: bool) -> ScanReport:
        report = ScanReport()
        started = time.monotonic()
        self.tailer.next_ask_at = None
        walked = self._discover(full, report)
        for w in list(self.watched.values()):
            self.tailer.visit(w, report, persist_new=True)
        for path in walked:  # transient: processed once, not kept in the watched set
            self.tailer.visit(Watched(path), report, persist_new=False)
        report.files_watched = len(self.watched)
        report.seconds = time.monotonic() - started
        return report

    # wake-ups and health ---------------------------------------------------------------

    def watch_paths(self) -> list[Path]:
        """Hot folders (or their nearest existing ancestor), index-found rollout folders, SQLite home."""
        paths: dict[Path, None] = {}
        for folder in self.hot_folders:
            found = self._nearest(folder)
            if found is not None:
                paths[found] = None
        for parent in self._index_parents():
            if len(paths) >= 64:
                break
            paths[parent] = None
        if os.path.isdir(self.opts.sqlite_home):
            paths[self.opts.sqlite_home] = None
        return list(paths)

    def _nearest(self, folder: Path) -> Path | None:
        """``nearest_existing(folder)``, walked again only when the last answer no longer holds: it
        is gone, or the folder below it toward ``folder`` now exists (two stats, not one a level)."""
        cached = self._nearest_seen.get(folder)
        if cached is not None and os.path.isdir(cached[0]) and (cached[1] is None or not os.path.isdir(cached[1])):
            return cached[0]
        found = nearest_existing(folder, self.opts.codex_home)
        if len(self._nearest_seen) > 16:  # yesterday's hot folders
            self._nearest_seen.clear()
        if found is None:
            self._nearest_seen.pop(folder, None)
            return None
        rest = os.path.relpath(folder, found)
        below = None if rest == os.curdir else os.path.join(found, rest.split(os.sep)[0])
        self._nearest_seen[folder] = (found, below)
        return found

    def _index_parents(self) -> list[Path]:
        """The folders of the index-found rollouts outside the hot folders, in index order; derived
        again only when the index rows or the hot folders changed (not on every idle pass)."""
        key = (self.index_paths, tuple(self.hot_folders))
        cached = self._parents
        if cached is not None and cached[0][0] is key[0] and cached[0][1] == key[1]:
            return cached[1]
        hot = set(self.hot_folders)
        parents = [p for p in dict.fromkeys(Path(os.path.dirname(path)) for path in self.index_paths) if p not in hot]
        self._parents = (key, parents)
        return parents

    def snapshot(self) -> dict[str, Any]:
        """What the last pass acted on: the index signature taken before its query, the hot
        folders, and per watched rollout the stat it was read at (None: absent, not regular, or
        failed: ``clean`` is then False). The remote child's summary (``remote_root_summary``)."""
        sig = self._index_sig if isinstance(self._index_sig, tuple) else (None, None)
        return {
            "codex_home": str(self.opts.codex_home),
            "sqlite_home": str(self.opts.sqlite_home),
            "hot_folders": [str(p) for p in self.hot_folders],
            "index_signature": [None if s is None else list(s) for s in sig],
            "files": {
                path: None if w.seen is None else [w.seen.dev, w.seen.ino, w.seen.size, w.seen.mtime_ns]
                for path, w in self.watched.items()
            },
            "clean": all(w.last_error is None for w in self.watched.values()),
        }

    def health(self) -> dict[str, Any]:
        return {
            "files_watched": len(self.watched),
            "index_status": self.index_result.status,
            "index_detail": self.index_result.detail or None,
            "index_checked_at": self.index_checked_at,
            "index_rows": len(self.index_paths),
            "hot_folders": [str(p) for p in self.hot_folders],
            "codex_home": str(self.opts.codex_home),
            "sqlite_home": str(self.opts.sqlite_home),
            "scan_scope": self.opts.scope,
        }
