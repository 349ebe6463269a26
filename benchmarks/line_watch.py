"""When a line first shows up on disk: inotify on a folder, then a read of the new files.

The latency benchmarks time from the moment an agent's record is readable in its file (what
donebell's own watchers can see at the earliest), not from when the benchmark learns of it.
Linux only (inotify through libc, as ``shared/waker.py`` does).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import threading
import time
from pathlib import Path

_IN_MODIFY, _IN_CREATE = 0x002, 0x100


class LineWatcher:
    """Records when a new file matching ``pattern`` in one folder first contains ``needle``
    (JSON written with or without spaces after ``,`` and ``:``). Files present at the start are
    not watched. Each file is read from where the last read ended (less a needle's overlap)."""

    def __init__(self, folder: Path, pattern: str, needle: bytes) -> None:
        self.folder, self.pattern, self.needle = folder, pattern, needle
        self.known = set(folder.glob(pattern))
        self.seen_at: float | None = None
        self._stop = threading.Event()
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        self.fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(folder), _IN_MODIFY | _IN_CREATE) < 0:
            raise OSError(ctypes.get_errno(), "inotify unavailable")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        offsets: dict[Path, int] = {}
        overlap = 2 * len(self.needle)  # a needle cut by the last read, spaces included
        while not self._stop.is_set() and self.seen_at is None:
            select.select([self.fd], [], [], 0.05)
            try:
                os.read(self.fd, 65536)
            except BlockingIOError:
                pass
            for path in set(self.folder.glob(self.pattern)) - self.known:
                start = max(0, offsets.get(path, 0) - overlap)
                try:
                    with path.open("rb") as f:
                        f.seek(start)
                        data = f.read()
                except OSError:
                    continue
                offsets[path] = start + len(data)
                if self.needle in data.replace(b", ", b",").replace(b": ", b":"):
                    self.seen_at = time.time()
                    break

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        os.close(self.fd)
