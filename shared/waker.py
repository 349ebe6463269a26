"""Wake a worker promptly when watched files or folders change; otherwise sleep cheaply.

Linux: inotify through ctypes (no dependency, no thread, one fd). Elsewhere: a stat poll of the
watched paths every ``poll_interval`` seconds. Either way the caller's periodic rescan remains
the source of truth (qmail's trigger pipe + Postfix's wake-up timers): a missed event only costs
latency, never a notification.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sys
import time
from collections.abc import Iterable
from pathlib import Path

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)


class Waker:
    """Wait until a watched path changes, :meth:`interrupt` is called, or a timeout passes."""

    def __init__(self, poll_interval: float = 0.5) -> None:
        self.poll_interval = poll_interval
        self._pipe_r, self._pipe_w = os.pipe()
        os.set_blocking(self._pipe_w, False)
        os.set_blocking(self._pipe_r, False)
        self._watched: dict[str, int] = {}
        self._fd = -1
        self._libc: ctypes.CDLL | None = None
        self._signatures: dict[str, tuple[int, int] | None] = {}
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
                fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
                if fd >= 0:
                    self._libc, self._fd = libc, fd
            except (OSError, AttributeError):
                self._fd = -1

    @property
    def uses_inotify(self) -> bool:
        return self._fd >= 0

    def watch(self, paths: Iterable[Path | str]) -> None:
        """Watch exactly these paths (added and dropped to match); missing paths are skipped."""
        wanted = {os.fspath(p) for p in paths}
        for path in list(self._watched):
            if path not in wanted:
                wd = self._watched.pop(path)
                if self._libc is not None and wd >= 0:
                    self._libc.inotify_rm_watch(self._fd, wd)
        for path in wanted - set(self._watched):
            wd = -1
            if self._libc is not None:
                wd = self._libc.inotify_add_watch(self._fd, path.encode(), _MASK)
                if wd < 0:
                    continue  # missing or unreadable: the periodic rescan covers it
            self._watched[path] = wd
        self._signatures = {p: _signature(p) for p in self._watched}

    def interrupt(self) -> None:
        """Wake a current or the next :meth:`wait` (safe from a signal handler)."""
        try:
            os.write(self._pipe_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` s; True if something changed or :meth:`interrupt` was called."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            fds = [self._pipe_r] + ([self._fd] if self._fd >= 0 else [])
            step = remaining if self._fd >= 0 else min(remaining, self.poll_interval)
            try:
                ready, _, _ = select.select(fds, [], [], step)
            except InterruptedError:
                continue
            if ready:
                self._drain(ready)
                return True
            if self._fd < 0 and self._poll_changed():
                return True

    def _drain(self, ready: list[int]) -> None:
        for fd in ready:
            try:
                while os.read(fd, 65536):
                    pass
            except (BlockingIOError, OSError):
                pass

    def _poll_changed(self) -> bool:
        changed = False
        for path in self._watched:
            sig = _signature(path)
            if sig != self._signatures.get(path):
                self._signatures[path] = sig
                changed = True
        return changed

    def close(self) -> None:
        for fd in (self._fd, self._pipe_r, self._pipe_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = -1


def _signature(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
