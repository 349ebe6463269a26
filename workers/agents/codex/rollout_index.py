"""The gate's shared index of rollout day folders: who is whose child, without re-reading folders.

The gate looks for a root's children on disk (rollouts whose ``session_meta`` names the root as
parent, for children that have neither a spawn-edge row nor a thread row yet). Done per
candidate, and again for the second fresh snapshot, that is one listing of every day folder and
one ``stat`` per rollout for every candidate: with 10,000 pending candidates and their 10,000
rollouts, 2 x 10^8 stats per pass (the backlog once took 17 minutes for 2,088 promotions).

This index lists each folder once and keeps, per rollout (name, inode), the thread identity its
first line gives; a ``session_meta`` never changes, so that is never stale. A folder is listed
again only when its own ``(dev, ino, mtime_ns)`` changed, i.e. a rollout was created, renamed or
removed there, which makes a listing as fresh as ``os.scandir`` while it costs one ``stat``.
A file whose first line was not complete yet is read again on every lookup until it is. The
modification time that decides whether a child is recent enough is taken fresh for the few
children of the root asked about, never from the listing. Lookups are therefore shared by every
candidate of a pass and by the next passes, and the pass costs grow linearly with the backlog.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from donebell.workers.agents.codex import identity

#: Folders kept in the index; beyond this it starts over (only a shortcut: at most 8 per home).
MAX_FOLDERS = 64


@dataclass
class _Folder:
    signature: tuple[int, int, int]
    known: dict[tuple[str, int], identity.ThreadIdentity] = field(default_factory=dict)
    unsure: list[tuple[str, int]] = field(default_factory=list)  # first line not complete yet
    by_parent: dict[str, dict[str, str]] = field(default_factory=dict)  # parent -> {child: path}


class RolloutIndex:
    """Children by parent thread, per rollout day folder (one per gate process)."""

    def __init__(self) -> None:
        self._folders: dict[str, _Folder] = {}

    def children(self, folders: list[Path], parent: str, since: float) -> dict[str, Path]:
        """Rollouts in ``folders`` modified at or after ``since`` whose parent is ``parent``."""
        found: dict[str, Path] = {}
        for folder in folders:
            entry = self._current(str(folder))
            if entry is None:
                continue
            for child, path in entry.by_parent.get(parent, {}).items():
                if child == parent:
                    continue
                try:
                    if os.stat(path).st_mtime >= since:
                        found[child] = Path(path)
                except OSError:
                    continue
        return found

    def _current(self, folder: str) -> _Folder | None:
        try:
            st = os.stat(folder)
        except OSError:
            self._folders.pop(folder, None)
            return None
        signature = (st.st_dev, st.st_ino, st.st_mtime_ns)
        entry = self._folders.get(folder)
        if entry is None or entry.signature != signature:
            entry = self._relist(folder, signature, entry)
            if entry is None:
                return None
        elif entry.unsure:
            self._retry_unsure(folder, entry)
        return entry

    def _relist(self, folder: str, signature: tuple[int, int, int], old: _Folder | None) -> _Folder | None:
        try:
            with os.scandir(folder) as it:
                names = [(e.name, e.inode()) for e in it if e.name.startswith("rollout-") and e.name.endswith(".jsonl")]
        except OSError:
            self._folders.pop(folder, None)
            return None
        if len(self._folders) >= MAX_FOLDERS and folder not in self._folders:
            self._folders.clear()
        entry = _Folder(signature)
        previous = old.known if old is not None else {}
        for name, ino in names:
            ident = previous.get((name, ino))
            if ident is None:
                ident = identity.classify_rollout(os.path.join(folder, name))
            self._add(folder, entry, name, ino, ident)
        self._folders[folder] = entry
        return entry

    def _retry_unsure(self, folder: str, entry: _Folder) -> None:
        waiting, entry.unsure = entry.unsure, []
        for name, ino in waiting:
            self._add(folder, entry, name, ino, identity.classify_rollout(os.path.join(folder, name)))

    @staticmethod
    def _add(folder: str, entry: _Folder, name: str, ino: int, ident: identity.ThreadIdentity) -> None:
        if ident.classification == "unknown":
            entry.unsure.append((name, ino))
            return
        entry.known[(name, ino)] = ident
        if ident.parent_thread_id and ident.thread_id:
            entry.by_parent.setdefault(ident.parent_thread_id, {})[ident.thread_id] = os.path.join(folder, name)
