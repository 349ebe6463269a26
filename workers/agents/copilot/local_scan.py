"""Copilot's share of a local-scanner pass: the second signal path (docs/hooks.md, "Copilot CLI").

Every ``$COPILOT_HOME/session-state/*/events.jsonl`` that changed since the last pass is folded
(:mod:`.events`); when its newest task has ended (the root idle, no background work, no Stop hook
deciding), one candidate for that task is submitted under the task's own key, the key the gate
folds the hooks' signals into: a task whose hooks never ran (not installed, killed) is still
notified once, and a task the hooks reported is not notified twice. The gate judges it like any
other (quiet window, newer prompt, outcome).

A log first seen by this process is read only if it changed within ``watch_initial_replay_seconds``
(older sessions are history, not news). What was seen lives in memory: a restart reads the recent
logs again, and their tasks' keys are then found in ``sent/`` (nothing new).
"""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir
from donebell.workers.agents.copilot.events import read_log
from donebell.workers.agents.copilot.paths import EVENTS_FILE, SESSION_STATE, copilot_home_str, session_of_events
from donebell.workers.kit.pass_result import PassResult

NAME = "copilot"
SOURCE = "copilot-events"
#: How many of the most recently changed sessions' folders the role's inotify watches.
WATCHED_SESSIONS = 32


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> CopilotLocalScan:
    return CopilotLocalScan(state, settings, copilot_home_str())


class CopilotLocalScan:
    """:class:`~donebell.workers.agents.protocols.LocalScan` over Copilot's session logs."""

    def __init__(self, state: StateDir, settings: SettingsLike, home: str) -> None:
        self.state, self.settings, self.home = state, settings, home
        self.seen: dict[str, tuple[int, int]] = {}  # path -> (size, mtime_ns) at the last read
        self.started = time.time()
        self.counters = {"logs": 0, "submitted": 0}

    def scan(self, full: bool) -> PassResult:
        counters = {"read": 0, "submitted": 0}
        sessions = os.path.join(self.home, SESSION_STATE)
        # No Copilot here (its folder absent): one stat per pass, not a glob.
        for path in glob.glob(os.path.join(sessions, "*", EVENTS_FILE)) if os.path.isdir(sessions) else ():
            try:
                stat = os.stat(path)
            except OSError:
                continue
            sig = (stat.st_size, stat.st_mtime_ns)
            if self.seen.get(path) == sig:
                continue
            if path not in self.seen and stat.st_mtime < self.started - self.settings.watch_initial_replay_seconds:
                self.seen[path] = sig
                continue
            counters["read"] += 1
            if self._submit_if_ended(path):
                counters["submitted"] += 1
                self.seen[path] = sig
            elif path not in self.seen:
                self.seen[path] = (-1, -1)  # read again next pass: the task is still running
        self.counters["logs"] = len(self.seen)
        self.counters["submitted"] += counters["submitted"]
        return PassResult(next_in=self.settings.watch_scan_seconds, idle=True, counters=counters)

    def _submit_if_ended(self, path: str) -> bool:
        """Submit the newest task of the log if it has ended; False while it still runs."""
        session_id = session_of_events(path)
        log = read_log(path)
        if session_id is None or not log.tasks or log.busy or log.background or log.open_stop_hooks:
            return False
        task = log.tasks[-1]
        candidate = new_candidate(
            key=event_key(NAME, session_id, task.interaction_id),
            provider=NAME,
            source=SOURCE,
            session_id=session_id,
            interaction_id=task.interaction_id,
            task_started_ms=task.started_ms,
            transcript_path=path,
            cwd=log.cwd,
            outcome="failed" if task.error else None,
            error=task.error,
            origin=self.settings.origin or None,
        )
        result = submit_candidate(self.state, candidate)
        if result == "created":
            self.state.log("info", "copilot session log: task ended", key=candidate["key"], session_id=session_id)
        return True

    def watch_paths(self) -> list[Path]:
        """The sessions folder (a new session) and the newest sessions' own folders (their logs grow)."""

        def changed(path: str) -> float:  # a log still running (never stored) comes first
            mtime = self.seen[path][1]
            return float("inf") if mtime < 0 else float(mtime)

        recent = sorted(self.seen, key=changed, reverse=True)[:WATCHED_SESSIONS]
        return [Path(self.home) / SESSION_STATE, *(Path(path).parent for path in recent)]

    def health(self) -> dict[str, Any]:
        return {"copilot_logs": self.counters["logs"], "copilot_submitted": self.counters["submitted"]}
