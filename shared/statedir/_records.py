"""Records in folders: the middle layer of :class:`~donebell.shared.statedir.StateDir`.

:class:`RecordStore` names a record ``<folder>/<key>.json`` and moves it through the pipeline
(``pending`` → ``outbox`` → a receipt folder) with the primitives of
:class:`~donebell.shared.statedir._files.FileStore`. Every transition creates the next state
before it removes the previous one (or renames), so a lookup in pipeline order
(:meth:`~RecordStore.locate`) never misses a key that is moving on while it looks.

Standard library only: the hook path imports this module.
"""

from __future__ import annotations

import os
import stat

from donebell.shared import lean_json as json
from donebell.shared.keys import is_event_key
from donebell.shared.paths import make_private_dirs
from donebell.shared.statedir._base import (
    BIRTH_NAME,
    FOLDERS,
    PIPELINE,
    StateError,
    UnsafeStateDir,
    _step,
    decode,
    encode,
    now,
)
from donebell.shared.statedir._files import _IS_WINDOWS, FileStore, _rename

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any, Self


class RecordStore(FileStore):
    """The state directory's folders and the records in them."""

    # layout ------------------------------------------------------------------------------

    def ensure(self) -> Self:
        """Create the root and its folders (0700), refusing symlinks; tighten loose modes.

        The call that creates the root also writes :data:`BIRTH_NAME` (:meth:`created_at`).
        """
        made: list[str] | None = None  # the folders creating the root created (it included)
        for path in (self.root_dir, *(self.path(f) for f in FOLDERS)):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                _step()
                created = make_private_dirs(path)
                if path == self.root_dir:
                    made = created
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise UnsafeStateDir(f"{path} is not a plain directory (symlink or file); refusing to use it")
            if not _IS_WINDOWS and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, 0o700)
        if made is not None:
            birth = {"schema": 1, "created_at": now(), "created_folders": made[:-1]}
            self.create_file(self.path(BIRTH_NAME), encode(birth))
        return self

    def _birth(self) -> dict[str, Any]:
        try:
            data = self.read_bytes(self.path(BIRTH_NAME), limit=1 << 16)
            birth = {} if data is None else json.loads(data)
        except (OSError, ValueError, StateError):
            return {}
        return birth if isinstance(birth, dict) else {}

    def created_at(self) -> float | None:
        """When this state directory was created (:data:`BIRTH_NAME`); None for one created by a
        donebell older than the file, or a damaged file: such a directory is not new."""
        value = self._birth().get("created_at")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def created_folders(self) -> list[str]:
        """The folders above the root that creating it created (``~/.local/state`` on a fresh
        account), outermost first: ``uninstall --purge`` removes them again when they are empty."""
        folders = self._birth().get("created_folders")
        return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []

    def ensure_folder(self, name: str) -> Path:
        """Create a nested record folder such as ``watch/local`` (0700, no symlinks); its path.

        For namespaces below the fixed folders (rollout cursors); the record methods then take
        ``name`` as their ``folder`` argument.
        """
        from pathlib import Path  # not on the hook path (rollout cursors)

        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or any(p in ("", ".", "..") for p in parts):
            raise StateError(f"not a relative folder name: {name!r}")
        path = self.root
        for part in parts:
            path = path / part
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                _step()
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    pass
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise UnsafeStateDir(f"{path} is not a plain directory (symlink or file); refusing to use it")
        return path

    def folder(self, name: str) -> Path:
        return self.root / name

    def record_path(self, folder: str, key: str) -> Path:
        return self.root / folder / f"{key}.json"

    def _record_file(self, folder: str, key: str) -> str:
        """:meth:`record_path` as an ``os.path`` string."""
        return os.path.join(self.root_dir, folder, f"{key}.json")

    # records -----------------------------------------------------------------------------

    def create(self, folder: str, record: Mapping[str, Any]) -> bool:
        """Durably create ``folder/<key>.json`` if absent; False if it already existed."""
        return self.create_file(self._record_file(folder, record["key"]), encode(record))

    def replace(self, folder: str, record: Mapping[str, Any]) -> None:
        """Durably create or replace ``folder/<key>.json``."""
        self.write_file(self._record_file(folder, record["key"]), encode(record))

    def read(self, folder: str, key: str) -> dict[str, Any] | None:
        """The record, or None if absent. Raises :class:`InvalidRecord` for a broken one."""
        data = self.read_bytes(self._record_file(folder, key))
        return None if data is None else decode(data, expect_key=key)

    def keys(self, folder: str) -> list[str]:
        """Keys of the records in ``folder``, oldest file first (by mtime, then name)."""
        return [key for key, _ in self.stamped_keys(folder)]

    def stamped_keys(self, folder: str) -> list[tuple[str, tuple[int, int, int]]]:
        """:meth:`keys` with each file's ``(inode, mtime_ns, size)`` from the same listing.

        Every record write creates a new file (a temp file renamed or linked into place), so an
        unchanged stamp means an unchanged record: a caller may reuse what it derived from it.
        """
        return self.listing(folder)[0]

    def listing(self, folder: str) -> tuple[list[tuple[str, tuple[int, int, int]]], list[str]]:
        """:meth:`stamped_keys`, and the names in ``folder`` that are not ``<key>.json`` (debris to
        dead-letter; ``.tmp`` files included), from one listing."""
        entries, strays = [], []
        try:
            with os.scandir(self.path(folder)) as it:
                for entry in it:
                    name = entry.name
                    if name.endswith(".json") and is_event_key(name[:-5]):
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue
                        entries.append((st.st_mtime, name[:-5], (st.st_ino, st.st_mtime_ns, st.st_size)))
                    else:
                        strays.append(name)
        except FileNotFoundError:
            return [], []
        entries.sort()
        return [(key, stamp) for _, key, stamp in entries], strays

    def changed_since(self, folder: str, wall_time: float) -> bool:
        """True if a record in ``folder`` was written at or after ``wall_time`` (file mtime)."""
        try:
            with os.scandir(self.path(folder)) as it:
                for entry in it:
                    if entry.name.endswith(".json"):
                        try:
                            if entry.stat(follow_symlinks=False).st_mtime >= wall_time - 0.05:
                                return True
                        except FileNotFoundError:
                            continue
        except FileNotFoundError:
            return False
        return False

    def count(self, folder: str) -> int:
        try:
            return sum(1 for n in os.listdir(self.path(folder)) if n.endswith(".json"))
        except FileNotFoundError:
            return 0

    def exists(self, folder: str, key: str) -> bool:
        return os.path.lexists(self._record_file(folder, key))

    def locate(self, key: str) -> str | None:
        """The folder holding ``key``, checked in pipeline order.

        Transitions create the next state before removing the previous one (or rename), so a
        forward-order check can never miss a key that is moving on while it looks.
        """
        for folder in PIPELINE:
            if self.exists(folder, key):
                return folder
        return None

    # transitions -------------------------------------------------------------------------

    def move(self, src: str, dst: str, key: str) -> bool:
        """Claim/promote by rename; False if the source vanished (another process won)."""
        if self.exists(dst, key):
            if not self.exists(src, key):
                return False  # someone else already moved it
            raise StateError(f"{dst}/{key}.json already exists; refusing to overwrite it by rename")
        self._check_fence()
        _step()
        try:
            _rename(self._record_file(src, key), self._record_file(dst, key))
        except FileNotFoundError:
            return False
        self._fsync_dir(self.path(dst))
        self._fsync_dir(self.path(src))
        return True

    def remove(self, folder: str, key: str, *, sync: bool = True) -> bool:
        """Remove a record; False if it was already gone.

        ``sync=False`` leaves the folder flush to one :meth:`sync_folder` after many removals (a
        group commit): a removal lost in a crash only brings back a record whose key has already
        moved on, which every reader treats as debris of an interrupted transition.
        """
        if not self._unlink(self._record_file(folder, key)):
            return False
        if sync:
            self._fsync_dir(self.path(folder))
        return True

    def sync_folder(self, folder: str) -> None:
        """Make every link and removal in ``folder`` so far durable (one fsync of the folder)."""
        self._fsync_dir(self.path(folder))

    def finish(self, src: str, receipt_folder: str, receipt: Mapping[str, Any]) -> bool:
        """Write a receipt, then remove the ``src`` record of the same key.

        The receipt exists before the source disappears, so a crash in between leaves both (a
        recoverable state: a record whose receipt exists is never acted on again).
        Returns False if a receipt already existed (the source is removed all the same).
        """
        created = self.create(receipt_folder, receipt)
        self.remove(src, receipt["key"])
        return created
