"""Cursor retention for the maintenance role: forget cursors no scanner will need again.

Rollout cursors (``watch/local/``, ``watch/remote/<root-hash>/``) and Claude transcript cursors
(``watch/claude/``, swept like local ones) are written when a scanner
first meets a rollout and whenever it reads further; nothing else removes them, so without this
they pile up with every session ever watched. Deleting a cursor is always safe (docs/design.md):
a rollout met again without one is treated as new, replayed only if modified within
``watch_initial_replay_seconds`` and only for turns that ended in that window, so nothing floods.

* ``watch/local/``: a cursor goes when its rollout no longer exists (``os.path.lexists`` of its
  ``path``) or when it was not updated for :data:`CURSOR_MAX_AGE_DAYS`.
* ``watch/remote/<root>/``: remote paths are never touched from this process (a hung share
  would hang maintenance); a cursor goes only when it was not updated for
  ``max(CURSOR_MAX_AGE_DAYS, sent_retention_days)``. The root's scan summary
  (``remote_root_summary``) follows the same rule: a root still configured rewrites it at least
  every half hour, so an old one belongs to a root that is gone.
* A record the scanner could not load (corrupt JSON, wrong field types) goes to ``dead/`` through
  ``StateDir.dead_letter_invalid``, as the scanner itself would do on meeting it.

A cursor is re-read just before it is removed, so one a scanner rewrote meanwhile is kept (a
scanner racing past that leaves only a rollout treated as new, which is safe, see above).
"""

from __future__ import annotations

import os
import re
from typing import Any

from donebell.shared.statedir import WATCH_CLAUDE, WATCH_LOCAL, WATCH_REMOTE, InvalidRecord, StateDir
from donebell.workers.kit.jsonl_tail import Cursor, cursor_updated_at
from donebell.workers.scanners.remote_root_summary import SUMMARY_KIND

DAY = 86400.0
CURSOR_MAX_AGE_DAYS = 30.0
_ROOT_HASH = re.compile(r"^[0-9a-f]{32}$")


def remote_folders(state: StateDir) -> list[str]:
    """``watch/remote/<root-hash>`` namespaces present (plain directories only, no symlinks)."""
    try:
        with os.scandir(state.folder(WATCH_REMOTE)) as it:
            names = [e.name for e in it if _ROOT_HASH.match(e.name) and e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [f"{WATCH_REMOTE}/{name}" for name in sorted(names)]


class CursorRetention:
    """One retention round over every cursor namespace; :attr:`counters` says what it did."""

    def __init__(self, state: StateDir, at: float, sent_retention_days: float) -> None:
        self.state, self.at = state, at
        self.local_max_age = CURSOR_MAX_AGE_DAYS * DAY
        self.remote_max_age = max(CURSOR_MAX_AGE_DAYS, sent_retention_days) * DAY
        self.counters = {"cursors_gone": 0, "cursors_expired": 0, "cursors_invalid": 0}

    def run(self) -> dict[str, int]:
        self.sweep(WATCH_LOCAL, local=True)
        self.sweep(WATCH_CLAUDE, local=True)
        for folder in remote_folders(self.state):
            self.sweep(folder, local=False)
        return self.counters

    def sweep(self, folder: str, *, local: bool) -> None:
        for key in self.state.keys(folder):
            rec = self._load(folder, key)
            if rec is None:
                continue
            verdict = self._verdict(rec, local=local)
            if verdict is not None and self._still(folder, key, rec) and self.state.remove(folder, key):
                self.counters[verdict] += 1

    def _load(self, folder: str, key: str) -> dict[str, Any] | None:
        """The record if it is a cursor (or a remote root's summary); a broken one is dead-lettered."""
        try:
            rec = self.state.read(folder, key)
            if rec is not None and rec.get("kind") != SUMMARY_KIND:
                Cursor.from_record(rec)  # what the scanner would refuse, refused here too
        except InvalidRecord as exc:
            self.state.dead_letter_invalid(folder, f"{key}.json", f"cursor: {exc}")
            self.counters["cursors_invalid"] += 1
            return None
        return rec

    def _verdict(self, rec: dict[str, Any], *, local: bool) -> str | None:
        """The counter to bump when ``rec`` should go, or None to keep it."""
        updated = cursor_updated_at(rec)
        max_age = self.local_max_age if local else self.remote_max_age
        if updated is not None and self.at - updated > max_age:
            return "cursors_expired"
        if local and rec.get("kind") != SUMMARY_KIND and not os.path.lexists(str(rec["path"])):
            return "cursors_gone"
        return None

    def _still(self, folder: str, key: str, rec: dict[str, Any]) -> bool:
        """True if the record is unchanged since it was judged (no scanner rewrote it meanwhile)."""
        try:
            again = self.state.read(folder, key)
        except InvalidRecord:
            return False  # changed under us: judged again next round
        return again is not None and again.get("updated_at") == rec.get("updated_at")
