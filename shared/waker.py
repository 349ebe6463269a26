"""Wake a worker promptly when watched files or folders change; otherwise sleep cheaply.

How a change is seen is the platform seam's file watch (``shared/platform/watch.py``: inotify on
Linux, a stat poll every ``poll_interval`` seconds elsewhere or in portable mode). Either way the
caller's periodic rescan remains the source of truth (qmail's trigger pipe + Postfix's wake-up
timers): a missed event only costs latency, never a notification. The trigger is a socket pair,
not a pipe: Windows' ``select`` accepts sockets only.
"""

from __future__ import annotations

import os
import select
import socket
import time
from collections.abc import Iterable
from pathlib import Path

from donebell.shared.platform.watch import new_file_watch


class Waker:
    """Wait until a watched path changes, :meth:`interrupt` is called, or a timeout passes."""

    def __init__(self, poll_interval: float = 0.5) -> None:
        self.poll_interval = poll_interval
        self._trigger_r, self._trigger_w = socket.socketpair()
        self._trigger_r.setblocking(False)
        self._trigger_w.setblocking(False)
        self._watch = new_file_watch()

    @property
    def uses_inotify(self) -> bool:
        return self._watch.fd >= 0

    @property
    def mechanism(self) -> str:
        """How changes are seen: ``inotify`` or ``poll``."""
        return self._watch.mechanism

    def watch(self, paths: Iterable[Path | str]) -> None:
        """Watch exactly these paths (added and dropped to match); missing paths are skipped."""
        self._watch.watch(os.fspath(p) for p in paths)

    def interrupt(self) -> None:
        """Wake a current or the next :meth:`wait` (safe from a signal handler)."""
        try:
            self._trigger_w.send(b"x")
        except OSError:  # full (a wake is pending anyway) or closed
            pass

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` s; True if something changed or :meth:`interrupt` was called."""
        deadline = time.monotonic() + max(0.0, timeout)
        fd = self._watch.fd
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            fds = [self._trigger_r.fileno()] + ([fd] if fd >= 0 else [])
            step = remaining if fd >= 0 else min(remaining, self.poll_interval)
            try:
                ready, _, _ = select.select(fds, [], [], step)
            except InterruptedError:
                continue
            if ready:
                self._drain(ready)
                return True
            if fd < 0 and self._watch.changed():
                return True

    def _drain(self, ready: list[int]) -> None:
        if self._trigger_r.fileno() in ready:
            try:
                while self._trigger_r.recv(65536):
                    pass
            except OSError:  # BlockingIOError: drained
                pass
        if self._watch.fd in ready:
            self._watch.drain()

    def close(self) -> None:
        self._watch.close()
        self._trigger_r.close()
        self._trigger_w.close()
