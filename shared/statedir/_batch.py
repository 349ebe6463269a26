"""Group commit (workers only): many records made durable with a few flushes instead of two each.

A single durable create (``FileStore.create_file``) flushes twice: the record file, then its
folder. Draining a backlog that way is two journal commits per record, and on a disk shared with
other programs each commit waits for theirs. Postfix and maildir amortise the same cost by
batching; :class:`GroupCommit` does it with the same durability contract, per record:

1. **staged**: written to ``tmp/`` (``O_EXCL``, never through a symlink), not yet flushed;
2. **flushed**: :meth:`GroupCommit.flush` fsyncs every staged file (on a journaling filesystem
   the first fsync commits them all, the rest find nothing left to do);
3. **linked**: :meth:`GroupCommit.link` hard-links it into its folder (an existing file wins, as
   with ``create``), after the caller's own checks (e.g. under the key's mutation lock);
4. **synced**: :meth:`GroupCommit.sync` fsyncs the folder once for every link.

The caller acts on a record (removes the state it replaces, POSTs it, ...) only after step 4, so
a crash at any point leaves the previous state or both, never a lost record, and since only
flushed files are ever linked no reader sees a partial one. Each step is a counted operation of
the ``DONEBELL_CRASH_AT`` seam (``_base._step``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from donebell.shared.statedir._base import StateError, _step, encode
from donebell.shared.statedir._files import FileStore, _unlink_quietly


class GroupCommit:
    """Records bound for one folder, made durable together (see the module docstring)."""

    def __init__(self, store: FileStore, folder: str) -> None:
        self._store, self.folder = store, folder
        self._staged: dict[str, tuple[str, int | None]] = {}  # key -> (temp path, open fd until flushed)
        self._linked = False

    def __len__(self) -> int:
        return len(self._staged)

    def keys(self) -> list[str]:
        """Keys staged and not yet linked or discarded, in staging order."""
        return list(self._staged)

    def stage(self, record: Mapping[str, Any]) -> None:
        """Write ``record`` to ``tmp/`` (not flushed yet); a second stage of a key replaces the first."""
        key = record["key"]
        self.discard(key)
        path, fd = self._store._stage_temp(encode(record), key)
        self._staged[key] = (path, fd)

    def flush(self) -> None:
        """Flush every staged file to disk: one journal commit carries them all."""
        for key, (path, fd) in list(self._staged.items()):
            if fd is None:
                continue
            try:
                _step()
                os.fsync(fd)
            finally:
                os.close(fd)
            self._staged[key] = (path, None)

    def link(self, key: str) -> bool:
        """Link a flushed record into the folder; False if a file of that key was already there.

        Not durable until :meth:`sync`; the caller must not act on it before.
        """
        path, fd = self._staged.pop(key)
        if fd is not None:
            os.close(fd)
            _unlink_quietly(path)
            raise StateError(f"{key}: linked before it was flushed")
        try:
            _step()
            os.link(path, self._store.path(self.folder, f"{key}.json"))
            created = True
        except FileExistsError:
            created = False
        finally:
            _step()
            _unlink_quietly(path)
        self._linked = True
        return created

    def sync(self) -> None:
        """Make every link so far durable with one fsync of the folder."""
        if self._linked:
            self._store._fsync_dir(self._store.path(self.folder))
            self._linked = False

    def discard(self, key: str) -> None:
        """Drop a staged record that must not be linked (its key moved on meanwhile)."""
        staged = self._staged.pop(key, None)
        if staged is not None:
            path, fd = staged
            if fd is not None:
                os.close(fd)
            _unlink_quietly(path)

    def close(self) -> None:
        """Discard whatever was staged and not linked (an interrupted batch leaves no temp files)."""
        for key in list(self._staged):
            self.discard(key)
