"""The scan loop both rollout scanners share: discover, stat, tail what changed, submit.

One :class:`ScanEngine` owns one Codex home and one cursor namespace. A *light* pass (a wake-up
or heartbeat) stats the hot set only: hot folders whose mtime changed are relisted, each watched
file is ``stat``ed, and only a file whose identity/size/mtime differs from what was last seen is
opened. A *full* pass (every ``watch_scan_seconds``) also relists the hot folders, asks the
thread index when it changed, and, with ``scope="all"``, walks the whole archive once.
Nothing here imports pydantic: the remote scanner's one-shot child uses this module directly.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
from donebell.shared.codex_meta import classify_threads_source, parse_session_meta, read_first_line
from donebell.shared.statedir import StateDir, now
from donebell.workers.scanners.rollout_evidence import SourceContext, TurnTracker, sniff_oversized, submit_terminal
from donebell.workers.scanners.rollout_tail import (
    Cursor,
    CursorStore,
    FileStat,
    LineReader,
    close_quietly,
    end_of_last_line,
    line_fingerprint,
    open_rollout,
)
from donebell.workers.scanners.scan_discovery import (
    HotFolders,
    IndexResult,
    ThreadIndex,
    nearest_existing,
    remap_to_root,
    thread_id_from_name,
    walk_all,
)

INDEX_MIN_INTERVAL = 2.0  # seconds between thread-index queries triggered by database changes
INDEX_RECHECK = 600.0  # query an unchanged index at least this often (slides the window)


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


@dataclass
class Watched:
    path: str
    cursor: Cursor | None = None
    seen: FileStat | None = None  # last stat we acted on (in memory only)
    index_source: str | None = None  # threads.source, a classification fallback
    last_error: str | None = None  # logged once per distinct error, not once per pass


@dataclass
class ScanReport:
    counters: Counter[str] = field(default_factory=Counter)
    files_watched: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


class ScanEngine:
    def __init__(self, state: StateDir, opts: ScanOptions) -> None:
        self.state, self.opts = state, opts
        self.store = CursorStore(state, opts.cursor_folder)
        self.hot = HotFolders(opts.codex_home)
        self.index = ThreadIndex(opts.sqlite_home)
        self.ctx = SourceContext(
            opts.source, str(opts.codex_home), str(opts.sqlite_home), opts.origin, opts.include_message
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
            # busy timeout: query it now, not a full rescan (watch_scan_seconds) later.
            due = changed and since >= INDEX_MIN_INTERVAL and self.index_result.status in ("ok", "missing")
        # A change seen inside the throttle interval is queried when it ends (the role's next pass
        # is scheduled for then): no later file event may come to wake it.
        throttled = not full and changed and not due and self.index_result.status in ("ok", "missing")
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
        walked = self._discover(full, report)
        for w in list(self.watched.values()):
            self._visit(w, report, persist_new=True)
        for path in walked:  # transient: processed once, not kept in the watched set
            self._visit(Watched(path), report, persist_new=False)
        report.files_watched = len(self.watched)
        report.seconds = time.monotonic() - started
        return report

    def _visit(self, w: Watched, report: ScanReport, *, persist_new: bool) -> None:
        try:
            st = FileStat.of(w.path)
            if st is None:
                if w.cursor is not None or w.seen is not None:
                    w.cursor, w.seen = None, None
                return
            if w.seen == st:
                return
            self._tail(w, st, report, persist_new)
        except Exception as exc:  # noqa: BLE001 - one unreadable file must not stop the others
            error = f"{type(exc).__name__}: {exc}"[:200]
            kind = f"{type(exc).__name__}/{getattr(exc, 'errno', None)}"  # messages may hold temp names
            report.counters["file_errors"] += 1
            report.errors.append(f"{w.path}: {error}"[:300])
            if kind != w.last_error:
                self.state.log("warning", "rollout scan failed", source=self.opts.source, path=w.path, error=error)
            w.last_error = kind
            return
        w.last_error = None

    def _start(self, path: str, st: FileStat, f: IO[bytes]) -> Cursor:
        """A cursor for a file seen for the first time (or replaced/truncated): replay or end."""
        cur = Cursor(
            path=path,
            dev=st.dev,
            ino=st.ino,
            offset=0,
            size=st.size,
            mtime_ns=st.mtime_ns,
            thread_id=thread_id_from_name(path),
        )
        if now() - st.mtime_ns / 1e9 <= self.opts.replay_seconds:
            # Recent: replay from the start (session_meta arrives with line 0), but only turns that
            # ended within the window are news; a resumed old thread must not replay its history.
            cur.replay_floor = now() - self.opts.replay_seconds
            return cur
        cur.offset, cur.skipping = end_of_last_line(f, st.size)
        line = read_first_line(path)
        meta = parse_session_meta(line) if line is not None else None
        if meta is not None:
            TurnTracker(cur).feed({"type": "session_meta", "payload": meta}, 0, 0)
        return cur

    def _tail(self, w: Watched, st: FileStat, report: ScanReport, persist_new: bool) -> None:
        if w.cursor is None:
            w.cursor = self.store.load(w.path)
            if w.cursor is not None and w.cursor.unchanged(st):
                w.seen = st
                return
        cur = None if w.cursor is None else w.cursor.copy()
        f = open_rollout(w.path)
        try:
            if cur is not None and not self._continues(cur, st, f):
                report.counters["files_restarted"] += 1
                self.state.log("info", "rollout replaced or truncated; restarting it", path=w.path)
                cur = None
            fresh = cur is None
            if cur is None:
                cur = self._start(w.path, st, f)
            before = (cur.offset, cur.skipping)
            if not fresh:
                # Only what was in the file when it was first met can be history; a record appended
                # after the cursor exists is live whatever the agent's clock stamped on it.
                cur.replay_floor = None
            if st.size > cur.offset or cur.skipping:
                self._consume(cur, w, f, report)
            if (cur.offset, cur.skipping) != before or fresh or cur.line_fp is None:
                cur.line_fp = None if cur.skipping else line_fingerprint(f, cur.offset)
        finally:
            close_quietly(f)
        cur.size, cur.mtime_ns = st.size, st.mtime_ns
        if (cur.offset, cur.skipping) != before or (fresh and persist_new):
            self.store.save(cur)
            report.counters["cursors_advanced"] += 1
        elif fresh and not persist_new:
            return  # an untouched archived file met by a full walk: no cursor for it
        w.cursor, w.seen = cur, st

    @staticmethod
    def _continues(cur: Cursor, st: FileStat, f: IO[bytes]) -> bool:
        """False if the file is not the one the cursor was reading (replaced, truncated, rewritten)."""
        if not cur.same_file(st) or st.size < cur.offset:
            return False
        if cur.offset == 0 or cur.skipping:
            return True
        if cur.line_fp is not None:
            # Truncated and rewritten in place (maybe to the same size): the line before the
            # cursor is not the one it read last. Size and mtime alone cannot tell.
            return line_fingerprint(f, cur.offset) == cur.line_fp
        f.seek(cur.offset - 1)
        return f.read(1) == b"\n"  # a cursor always sits just after a newline

    def _consume(self, cur: Cursor, w: Watched, f: IO[bytes], report: ScanReport) -> None:
        tracker = TurnTracker(cur)
        fallback = classify_threads_source(w.index_source).classification if w.index_source else None
        reader = LineReader(f, cur.offset, skipping=cur.skipping)
        for line in reader:
            if line.data is None:
                kind = sniff_oversized(tracker, line.sniff)
                report.counters["oversized_lines"] += 1
                if kind == "terminal":
                    self._invalid(cur, tracker, line.start, "terminal record longer than the cap", report)
            else:
                self._line(cur, tracker, line.data, line.start, line.end, fallback, report)
            cur.offset = line.end
        cur.offset, cur.skipping = reader.offset, reader.skipping

    def _line(
        self,
        cur: Cursor,
        tracker: TurnTracker,
        data: bytes,
        start: int,
        end: int,
        fallback: str | None,
        report: ScanReport,
    ) -> None:
        try:
            rec = orjson.loads(data)
        except orjson.JSONDecodeError:
            try:
                data.decode("utf-8")
                reason = "malformed JSON"
            except UnicodeDecodeError:
                reason = "invalid UTF-8"
            self._invalid(cur, tracker, start, reason, report)
            return
        if not isinstance(rec, dict):
            self._invalid(cur, tracker, start, "not a JSON object", report)
            return
        term = tracker.feed(rec, start, end)
        if term is not None and cur.replay_floor and term.completed_at and term.completed_at < cur.replay_floor:
            report.counters["terminal_historical"] += 1
        elif term is not None:
            result = submit_terminal(self.state, self.ctx, cur, term, fallback)
            report.counters[f"terminal_{result}"] += 1

    def _invalid(self, cur: Cursor, tracker: TurnTracker, offset: int, reason: str, report: ScanReport) -> None:
        tracker.note_invalid()
        cur.invalid = {
            "count": int(cur.invalid.get("count") or 0) + 1,
            "last_offset": offset,
            "last_reason": reason,
            "last_at": now(),
            "last_turn_id": cur.current_turn,
        }
        report.counters["invalid_lines"] += 1
        self.state.log(
            "warning",
            "invalid rollout line recorded as evidence",
            source=self.opts.source,
            path=cur.path,
            thread_id=cur.thread_id,
            offset=offset,
            reason=reason,
        )

    # wake-ups and health ---------------------------------------------------------------

    def watch_paths(self) -> list[Path]:
        """Hot folders (or their nearest existing ancestor), index-found rollout folders, SQLite home."""
        paths: dict[Path, None] = {}
        for folder in self.hot_folders:
            found = nearest_existing(folder, self.opts.codex_home)
            if found is not None:
                paths[found] = None
        hot = set(self.hot_folders)
        for path in self.index_paths:
            parent = Path(path).parent
            if parent not in hot and len(paths) < 64:
                paths[parent] = None
        if self.opts.sqlite_home.is_dir():
            paths[self.opts.sqlite_home] = None
        return list(paths)

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
