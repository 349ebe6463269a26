"""File watching: learn that a watched file or folder changed, without a thread.

* ``inotify`` (Linux): one non-blocking inotify descriptor through ``ctypes`` (no dependency),
  read by the caller's ``select`` next to its own wake-up pipe.
* ``poll`` (macOS, Windows, and anywhere in portable mode): each watched path's ``(mtime, size)``
  compared every poll interval, and for a folder its entries' too (a write to a file inside a
  folder leaves the folder's own mtime alone, where inotify reports it). Hand-written rather than a watcher library: the one that covers
  every platform (watchdog) runs an observer thread per process and, for the kinds of file this
  watches (folders on local disks and network shares), falls back to the same stat polling;
  twenty lines of ``os.stat`` cost no thread, no dependency and no start-up. A stat never blocks
  on a FIFO (it does not open the file).

Either way a change is only a hint to rescan early: the caller's periodic rescan stays the truth,
so a missed event costs latency, never a notification. macOS's FSEvents/kqueue and Windows'
``ReadDirectoryChangesW`` are not used: they would be code no test here can run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import Protocol

from donebell.shared import platform

#: How many entries of a watched folder the poll looks at (each costs a stat on POSIX).
FOLDER_ENTRIES = 256

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x002, 0x004, 0x008
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x040, 0x080, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
    | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF
)  # fmt: skip


class FileWatch(Protocol):
    """What a waker needs of a file watch."""

    #: The implementation's name (``donebell doctor``'s ``file_watch``).
    mechanism: str
    #: A descriptor that turns readable on a change, or -1: then :meth:`changed` is polled.
    fd: int

    def watch(self, paths: Iterable[str]) -> None:
        """Watch exactly these paths (added and dropped to match); missing ones are skipped."""

    def changed(self) -> bool:
        """Whether a watched path changed since the last call (poll watches only)."""

    def drain(self) -> None:
        """Consume the pending events of :attr:`fd`."""

    def close(self) -> None: ...


class PollWatch:
    """Stat polling: portable, one ``os.stat`` per watched path per poll."""

    mechanism = "poll"
    fd = -1

    def __init__(self) -> None:
        self._signatures: dict[str, tuple[int, ...] | None] = {}

    def watch(self, paths: Iterable[str]) -> None:
        wanted = set(paths)
        self._signatures = {p: self._signatures[p] if p in self._signatures else _signature(p) for p in wanted}

    def changed(self) -> bool:
        changed = False
        for path, before in self._signatures.items():
            now = _signature(path)
            if now != before:
                self._signatures[path] = now
                changed = True
        return changed

    def drain(self) -> None:
        pass

    def close(self) -> None:
        self._signatures = {}


class InotifyWatch:
    """Linux inotify through libc; :func:`new_file_watch` falls back to polling if it fails."""

    mechanism = "inotify"

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        self.fd = int(self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._watched: dict[str, int] = {}

    def watch(self, paths: Iterable[str]) -> None:
        wanted = set(paths)
        for path in list(self._watched):
            if path not in wanted:
                self._libc.inotify_rm_watch(self.fd, self._watched.pop(path))
        for path in wanted - set(self._watched):
            wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK))
            if wd >= 0:  # missing or unreadable: the periodic rescan covers it
                self._watched[path] = wd

    def changed(self) -> bool:
        return False  # events arrive on fd

    def drain(self) -> None:
        try:
            while os.read(self.fd, 65536):
                pass
        except OSError:  # BlockingIOError: nothing more pending
            pass

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = -1


def new_file_watch() -> FileWatch:
    """The file watch this process uses (``platform.mechanism("file_watch")``)."""
    if platform.mechanism("file_watch") == "inotify":
        try:
            return InotifyWatch()
        except (OSError, AttributeError):  # no inotify in this kernel or libc: poll
            pass
    return PollWatch()


def _signature(path: str) -> tuple[int, ...] | None:
    """What changes when ``path`` or, for a folder, one of its first :data:`FOLDER_ENTRIES`
    entries changes: a folder's own mtime moves only when an entry is added or removed, while
    inotify also reports a write to a file inside it, so the entries' mtimes and sizes count too."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return (st.st_mtime_ns, st.st_size)
    count = newest = total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if count == FOLDER_ENTRIES:
                    break  # a huge folder: its own mtime and the periodic rescan cover the rest
                try:
                    est = entry.stat(follow_symlinks=False)  # no syscall on Windows: from the listing
                except OSError:
                    continue
                count, newest, total = count + 1, max(newest, est.st_mtime_ns), total + est.st_size
    except OSError:
        pass
    return (st.st_mtime_ns, st.st_size, count, newest, total)
