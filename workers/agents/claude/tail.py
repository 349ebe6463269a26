"""Claude transcript recovery: tail ``$CLAUDE_CONFIG_DIR/projects/*/*.jsonl`` like Codex rollouts.

The local scanner's second engine (docs/hooks.md, "SessionEnd and transcript recovery"). Each
main-session transcript in the hot set is read from a persisted cursor (``watch/claude/``),
complete lines only, and folded by :mod:`donebell.workers.agents.claude.outcome`, the module the
SessionEnd hook uses too. When the fold says the newest prompt is over (a reply, an API error)
and the transcript has been quiet for ``idle_grace_seconds``, one candidate is submitted under
the key the Stop/StopFailure hook would have used (``claude`` + session id + prompt id): a prompt a
hook already reported is left as it is, a hook that reports it later merges into the recovered
candidate (or is a duplicate once promoted). The Claude gate decides it like any other.

* Hot set: project folders modified within :data:`HOT_SECONDS`, and in them the transcripts
  modified within it. A light pass stats the projects folder, the hot project folders and the
  hot transcripts (relisting only a folder whose mtime changed); a full pass also stats every
  project folder. Subagent transcripts (``<session>/subagents/``) are never listed, nor a symlink
  or a second hard link to a transcript (its name is not a session id).
* First sight: a transcript that appears while the scanner runs is read from byte 0 (it was
  seen from its start). One that already existed is folded from its last :data:`FIRST_SIGHT_CAP`
  bytes only and its newest prompt, if already over, is history: it never notifies. A prompt
  that was over for longer than ``watch_initial_replay_seconds`` when first judged (the scanner
  was down) is history too.
* A line that is not JSON or not UTF-8 is skipped and counted; a line longer than
  :data:`MAX_LINE` is skipped without being buffered; a FIFO is never opened for reading; a
  transcript deleted while tailed is dropped (its cursor goes with the maintenance sweep).
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from donebell.shared.bounded_read import parse_record, read_tail
from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import event_key, transcript_index_key
from donebell.shared.records import base, new_candidate
from donebell.shared.statedir import WATCH_CLAUDE, StateDir, now
from donebell.workers.agents.claude import cursor as claude_cursor
from donebell.workers.agents.claude import outcome as claude_outcome
from donebell.workers.agents.claude import session as claude_session
from donebell.workers.kit.hook_context import MESSAGE_LIMIT
from donebell.workers.kit.jsonl_tail import FileStat, LineReader, close_quietly, open_rollout

SOURCE = "claude-transcript"
HOT_SECONDS = 2 * 86400.0
FIRST_SIGHT_CAP = 1 << 20
MAX_LINE = 4 << 20  # with the 1 MiB read chunk, a tail holds at most ~5 MiB
#: Claude Code versions below this kill a print-mode background shell ~5 s after the turn and
#: send no further hook (measured on 2.1.197); 2.1.332 waits for it instead.
KILLS_BACKGROUND_BEFORE = (2, 1, 332)
PRINT_WIND_DOWN_SECONDS = 5.0


@dataclass
class Tailed:
    path: str
    seen: FileStat | None = None
    cursor: dict[str, Any] | None = None
    last_error: str | None = None
    fresh: bool = False  # appeared while we watched: read from its first byte
    inode: tuple[int, int] = (0, 0)  # (device, inode) when listed: one file, one identity


@dataclass
class TailReport:
    counters: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    next_in: float | None = None  # seconds until a quiet window ends


class ClaudeTail:
    """One Claude config dir's transcripts, tailed incrementally."""

    def __init__(
        self,
        state: StateDir,
        config_dir: Path,
        *,
        idle_grace: float,
        origin: str | None,
        include_message: bool,
        replay_seconds: float = 300.0,
    ) -> None:
        self.state, self.projects = state, config_dir / "projects"
        self.idle_grace, self.origin, self.include_message = idle_grace, origin, include_message
        self.replay_seconds = replay_seconds
        state.ensure_folder(WATCH_CLAUDE)
        self.dirs: dict[str, int] = {}  # project folder -> mtime_ns it was listed at
        self.files: dict[str, Tailed] = {}
        self.root_sig: int | None = None
        self.passes = 0
        self.started = time.time()

    # discovery -----------------------------------------------------------------------------

    def _discover(self, full: bool, wall: float) -> None:
        try:
            root_sig = os.stat(self.projects).st_mtime_ns
        except OSError:
            self.dirs, self.files = {}, {}
            return
        listed = {os.path.dirname(p) for p in self.files}
        candidates = [d for d, m in self.dirs.items() if d in listed or wall - m / 1e9 <= HOT_SECONDS]
        if full or root_sig != self.root_sig:
            try:
                candidates = [e.path for e in os.scandir(self.projects) if e.is_dir(follow_symlinks=False)]
            except OSError:
                return
            self.root_sig = root_sig
            self.dirs = {d: m for d, m in self.dirs.items() if d in candidates}
        for folder in candidates:
            try:
                mtime = os.stat(folder).st_mtime_ns
            except OSError:
                self.dirs.pop(folder, None)
                continue
            if self.dirs.get(folder) != mtime:  # a session was created (or removed) in it
                # Files of a folder listed before, or of a project created since we started,
                # were seen from their first line; the rest existed before donebell looked (1 s:
                # the coarse file-system clock may stamp a folder made just after start earlier).
                fresh = self.passes > 0 and (folder in self.dirs or mtime / 1e9 >= self.started - 1.0)
                self._list(folder, wall, fresh)
                self.dirs[folder] = mtime
        for path, tailed in list(self.files.items()):
            cold = full and tailed.seen is not None and wall - tailed.seen.mtime_ns / 1e9 > HOT_SECONDS
            if os.path.dirname(path) not in self.dirs or cold:
                del self.files[path]  # its cursor stays on disk for when it is hot again

    def _list(self, folder: str, wall: float, fresh: bool) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        # An alias (symlink, second hard link) would be a second session id: one inode, one name.
        tailed = {t.inode for t in self.files.values()}
        for entry in entries:
            if not entry.name.endswith(".jsonl") or entry.path in self.files or entry.is_symlink():
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            inode = (st.st_dev, st.st_ino)
            if wall - st.st_mtime <= HOT_SECONDS and inode not in tailed:
                self.files[entry.path] = Tailed(entry.path, fresh=fresh, inode=inode)
                tailed.add(inode)

    # one pass ------------------------------------------------------------------------------

    def scan(self, *, full: bool) -> TailReport:
        report = TailReport()
        wall = now()
        self._discover(full, wall)
        for tailed in list(self.files.values()):
            try:
                self._visit(tailed, report, wall)
            except Exception as exc:  # noqa: BLE001 - one bad transcript must not stop the others
                kind = f"{type(exc).__name__}/{getattr(exc, 'errno', None)}"
                report.counters["file_errors"] += 1
                report.errors.append(f"{tailed.path}: {type(exc).__name__}: {exc}"[:300])
                if kind != tailed.last_error:
                    self.state.log("warning", "claude transcript scan failed", path=tailed.path, error=str(exc)[:200])
                tailed.last_error = kind
            else:
                tailed.last_error = None
        self.passes += 1
        report.counters["claude_transcripts"] = len(self.files)
        return report

    def _visit(self, tailed: Tailed, report: TailReport, wall: float) -> None:
        st = FileStat.of(tailed.path)
        if st is None:
            if os.path.lexists(tailed.path) and not stat.S_ISREG(os.lstat(tailed.path).st_mode):
                raise OSError(f"{tailed.path}: not a regular file")
            self.files.pop(tailed.path, None)  # deleted while tailed: nothing more will come
            return
        if tailed.seen != st:
            self._tail(tailed, st, report)
            tailed.seen = st
        if tailed.cursor is not None:
            self._decide(tailed, st, report, wall)

    def _tail(self, tailed: Tailed, st: FileStat, report: TailReport) -> None:
        cur = tailed.cursor or claude_cursor.load(self.state, WATCH_CLAUDE, tailed.path)
        f = open_rollout(tailed.path)
        try:
            restarted = cur is not None and not claude_cursor.continues(cur, st, f)
            if restarted:
                # Replaced, truncated or rewritten in place (claude_cursor): read again from byte 0.
                self.state.log("info", "claude transcript replaced or rewritten; reading it again", path=tailed.path)
                carried = {name: cur.get(name) for name in claude_cursor.CARRIED} if cur else {}
                cur = self._first_sight(tailed.path, st, True)
                cur.update(carried)
                report.counters["claude_restarted"] += 1
            elif cur is None:
                cur = self._first_sight(tailed.path, st, tailed.fresh)
                report.counters["claude_first_sight"] += 1
            before = cur["offset"]
            if st.size > cur["offset"] or cur.get("skipping"):
                self._consume(cur, f, report)
            if cur["offset"] != before or "line_fp" not in cur:
                claude_cursor.remember_position(cur, f)
        finally:
            close_quietly(f)
        cur.update(size=st.size, mtime_ns=st.mtime_ns)
        if cur["offset"] != before or tailed.cursor is None:
            cur["updated_at"] = now()
            self.state.replace(WATCH_CLAUDE, cur)
            report.counters["claude_cursors_advanced"] += 1
        tailed.cursor = cur

    def _first_sight(self, path: str, st: FileStat, fresh: bool) -> dict[str, Any]:
        cur = base("claude-cursor", transcript_index_key(path), "claude")
        cur.update(path=path, dev=st.dev, ino=st.ino, offset=0, size=st.size, mtime_ns=st.mtime_ns, skipping=False)
        cur.update(session_id=Path(path).stem, fold=claude_outcome.new_fold(), invalid_lines=0, submitted=None)
        cur["history"] = None
        cur["folded_from"] = 0  # the goal-marker index is complete from this byte on
        if fresh:
            return cur  # created while we watch: read from its first byte, every prompt counts
        try:
            tail = read_tail(path, FIRST_SIGHT_CAP)
        except OSError:
            tail = None  # gone or unreadable since it was listed: folded from byte 0 when readable
        if tail is not None:
            start, end = tail.complete_region()
            claude_outcome.fold_lines(cur["fold"], tail.data, tail.offset, start, end)
            cur["offset"] = tail.offset + end
            cur["folded_from"] = tail.offset + start  # an older marker may exist before it
        done = claude_outcome.derive(cur["fold"], exited=True)
        if done is not None:
            cur["history"] = done["prompt_id"]  # over before we first saw it: never notifies
        return cur

    def _consume(self, cur: dict[str, Any], f: IO[bytes], report: TailReport) -> None:
        reader = LineReader(f, cur["offset"], skipping=bool(cur.get("skipping")), max_record=MAX_LINE)
        fold = cur["fold"]
        for line in reader:
            record = None if line.data is None else parse_record(line.data)
            if record is None:
                cur["invalid_lines"] = int(cur.get("invalid_lines") or 0) + 1
                report.counters["claude_invalid_lines" if line.data is not None else "claude_oversized_lines"] += 1
            else:
                claude_outcome.feed(fold, record, line.start)
                if isinstance(record.get("cwd"), str):
                    cur["cwd"] = record["cwd"][:4096]
        cur["offset"], cur["skipping"] = reader.offset, reader.skipping

    # the decision --------------------------------------------------------------------------

    def _decide(self, tailed: Tailed, st: FileStat, report: TailReport, wall: float) -> None:
        cur = tailed.cursor
        assert cur is not None
        fold = cur["fold"]
        quiet = wall - st.mtime_ns / 1e9
        exited = _killed_on_exit(fold) and quiet >= PRINT_WIND_DOWN_SECONDS + self.idle_grace
        found = claude_outcome.derive(fold, exited=exited)
        if found is None and _killed_on_exit(fold) and claude_outcome.derive(fold, exited=True) is not None:
            self._soon(report, PRINT_WIND_DOWN_SECONDS + self.idle_grace - quiet)
        if found is None or found["prompt_id"] in (cur.get("history"), cur.get("submitted")):
            return
        if quiet < self.idle_grace:
            self._soon(report, self.idle_grace - quiet)
            return
        # Over for longer than the replay window when first judged: it ended while no scanner
        # ran (donebell was stopped); as with Codex rollouts, such old news is not sent.
        result = "historical" if quiet > max(self.replay_seconds, self.idle_grace) else self._submit(cur, found)
        report.counters[f"claude_{result}"] += 1
        cur["submitted"] = found["prompt_id"]
        cur["updated_at"] = now()
        self.state.replace(WATCH_CLAUDE, cur)

    @staticmethod
    def _soon(report: TailReport, seconds: float) -> None:
        seconds = max(0.05, seconds)
        report.next_in = seconds if report.next_in is None else min(report.next_in, seconds)

    def _submit(self, cur: dict[str, Any], found: dict[str, Any]) -> str:
        session_id, prompt_id = str(cur["session_id"]), str(found["prompt_id"])
        key = event_key("claude", session_id, prompt_id)
        if self.state.locate(key) is not None:
            return "known"  # a hook reported it first: one record, and nothing to add to it
        fold = cur["fold"]
        epoch, relation = 0, "no-session"
        session = claude_session.read_session(self.state, session_id)
        if session is not None and session.get("prompt_id") == prompt_id:
            epoch, relation = int(session["epoch"]), "current"
        elif session is not None and prompt_id in (session.get("recent_prompt_ids") or []):
            return "stale"  # the hooks saw a later prompt: this one was superseded
        elif session is not None:
            relation = "unannounced"
        if relation == "current" and session and session.get("held_prompt_id") == prompt_id and not found["note"]:
            return "held"  # the Stop hook saw work still registered that a transcript may not show
        last = claude_outcome.reply_text(cur["path"], found["reply_offset"], MESSAGE_LIMIT)
        baseline = fold.get("goal_at_prompt")
        if session is not None and relation == "current":
            baseline = session.get("goal_baseline") or baseline
        candidate = new_candidate(
            key=key,
            provider="claude",
            source=SOURCE,
            session_id=session_id,
            prompt_id=prompt_id,
            cwd=cur.get("cwd"),
            transcript_path=cur["path"],
            claude_epoch=epoch,
            claude_session_state=relation,
            goal_baseline=baseline,
            outcome=found["outcome"],
            error=found["error"],
            note=found["note"],
            last_message=last if self.include_message else None,
            has_final_message=last is not None,
            origin=self.origin,
            transcript_offset=found["reply_offset"],
        )
        result: str = submit_candidate(self.state, candidate)
        self.state.log("info", f"claude transcript recovery: {result}", session_id=session_id, prompt_id=prompt_id)
        return result

    def watch_paths(self) -> list[Path]:
        """The projects folder (or the config dir until it exists) and the hot project folders."""
        paths = [Path(d) for d in list(self.dirs)[:63]]
        base_dir = self.projects if self.projects.is_dir() else self.projects.parent
        return [base_dir, *paths] if base_dir.is_dir() else paths

    def health(self) -> dict[str, Any]:
        return {"claude_projects": str(self.projects), "claude_transcripts_watched": len(self.files)}


def _killed_on_exit(fold: dict[str, Any]) -> bool:
    """Print mode of a Claude that kills a background shell at exit, with only shells running."""
    if fold.get("entrypoint") != "sdk-cli" or claude_outcome.background_kinds(fold) != {"shell"}:
        return False
    version = _version(fold.get("version"))
    return version is not None and version < KILLS_BACKGROUND_BEFORE


def _version(text: object) -> tuple[int, ...] | None:
    if not isinstance(text, str):
        return None
    try:
        return tuple(int(p) for p in text.split(".")[:3])
    except ValueError:
        return None
