"""One rollout file's share of a scan pass: stat it, tail what changed from its cursor, submit.

:class:`RolloutFileTailer` knows nothing of discovery: :class:`~donebell.workers.agents.codex.scan_engine.ScanEngine`
decides which files are watched and hands each one here as a :class:`Watched`. A file whose
identity/size/mtime equals what was last acted on is not opened; a new (or replaced/truncated)
file gets a fresh cursor that replays recent turns or starts at the end; every complete line is
fed to the turn tracker and each terminal it finds is submitted. Like the engine, nothing here
imports pydantic: the remote scanner's one-shot child uses it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import IO

import orjson
from donebell.shared.statedir import StateDir, StateDirReplaced, now
from donebell.workers.agents.codex import rollout_asks
from donebell.workers.agents.codex.discovery import thread_id_from_name
from donebell.workers.agents.codex.identity import classify_threads_source, parse_session_meta, read_first_line
from donebell.workers.agents.codex.rollout_evidence import SourceContext, TurnTracker, sniff_oversized, submit_terminal
from donebell.workers.kit.jsonl_tail import (
    Cursor,
    CursorStore,
    FileStat,
    LineReader,
    close_quietly,
    end_of_last_line,
    line_fingerprint,
    open_rollout,
)

#: Codex stamps ``completed_at`` in whole seconds (truncated): a turn stamped ``t`` ended somewhere
#: in ``[t, t + 1)``. Only one that ended for certain before the floor is history; a turn that ends
#: within the second the state directory was born is news (docs/design.md, the cursors).
STAMP_RESOLUTION_SECONDS = 1.0


def ended_before(completed_at: float | None, floor: float) -> bool:
    """True if a turn stamped ``completed_at`` certainly ended before ``floor``."""
    return completed_at is not None and completed_at + STAMP_RESOLUTION_SECONDS <= floor


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


class RolloutFileTailer:
    def __init__(
        self, state: StateDir, store: CursorStore, ctx: SourceContext, *, source: str, replay_seconds: float
    ) -> None:
        self.state, self.store, self.ctx = state, store, ctx
        self.source = source  # "scanner" | "remote-scanner", for the log lines
        self.replay_seconds = replay_seconds
        # A state directory created recently has no news from before it was: a rollout that
        # ended before it is history, however recent (docs/design.md, the cursors).
        self.born_at = state.created_at()
        # Calls waiting on the user (rollout_asks.py): this machine's rollouts only.
        self.watch_asks = source == "scanner"
        self.next_ask_at: float | None = None  # the earliest open call not yet due, this pass
        self._ask_error: str | None = None  # logged once, not once per pass

    def visit(self, w: Watched, report: ScanReport, *, persist_new: bool) -> None:
        self._visit(w, report, persist_new)
        if self.watch_asks and w.cursor is not None and w.last_error is None:
            self._check_ask(w.cursor)  # an unchanged file too: a waiting call writes nothing more

    def _visit(self, w: Watched, report: ScanReport, persist_new: bool) -> None:
        try:
            st = FileStat.of(w.path)
            if st is None:
                if w.cursor is not None or w.seen is not None:
                    w.cursor, w.seen = None, None
                return
            if w.seen == st:
                return
            self._tail(w, st, report, persist_new)
        except StateDirReplaced:
            raise  # not this file's fault: the role stops (workers/role.py)
        except Exception as exc:  # noqa: BLE001 - one unreadable file must not stop the others
            error = f"{type(exc).__name__}: {exc}"[:200]
            kind = f"{type(exc).__name__}/{getattr(exc, 'errno', None)}"  # messages may hold temp names
            report.counters["file_errors"] += 1
            report.errors.append(f"{w.path}: {error}"[:300])
            if kind != w.last_error:
                self.state.log("warning", "rollout scan failed", source=self.source, path=w.path, error=error)
            w.last_error = kind
            return
        w.last_error = None

    def _check_ask(self, cur: Cursor) -> None:
        """Record the file's open call once it is due; else remember when it will be."""
        due = rollout_asks.due_at(cur)
        if due is None:
            return
        if due > now():
            self.next_ask_at = due if self.next_ask_at is None else min(self.next_ask_at, due)
            return
        try:
            rollout_asks.record_ask(self.state, cur, self.ctx)
            self.store.save(cur)  # the call is done either way: never a second record
        except StateDirReplaced:
            raise  # not this file's fault: the role stops (workers/role.py)
        except Exception as exc:  # noqa: BLE001 - e.g. a full disk: looked at again next pass, never a crash loop
            error = f"{type(exc).__name__}: {exc}"[:200]
            if error != self._ask_error:
                self.state.log("warning", "needs-you from the rollout not recorded", path=cur.path, error=error)
            self._ask_error = error
            return  # still due: tried again next pass
        self._ask_error = None

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
        written = st.mtime_ns / 1e9
        if now() - written <= self.replay_seconds and (self.born_at is None or written >= self.born_at):
            # Recent: replay from the start (session_meta arrives with line 0), but only turns that
            # ended within the window are news; a resumed old thread must not replay its history.
            # A file last written before the state directory existed holds nothing newer, and
            # in one written since, a turn that ended before it is no news either.
            cur.replay_floor = max(now() - self.replay_seconds, self.born_at or 0.0)
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
        if self.watch_asks:
            rollout_asks.feed(cur, rec, start, end, include_message=self.ctx.include_message)
        if term is not None and cur.replay_floor and ended_before(term.completed_at, cur.replay_floor):
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
            source=self.source,
            path=cur.path,
            thread_id=cur.thread_id,
            offset=offset,
            reason=reason,
        )
