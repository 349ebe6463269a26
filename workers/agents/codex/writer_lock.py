"""Whether a Codex thread is open: its writer lock.

Measured on Codex 0.171 (docs/wake.md, "Into the live session"): the process that has a thread open
(the interactive TUI, ``codex exec`` while it runs, or the app-server daemon a TUI runs on) holds
``$CODEX_HOME/thread-writer-locks/<thread-id>.lock`` with an exclusive ``flock`` for as long as it
is open; that lock is why ``codex exec resume`` beside it fails with "already has an active
writer". The file stays after the process exits, so only a held lock means open.
"""

from __future__ import annotations

import fcntl
import os

from donebell.workers.kit.thread_view import SAFE_ID


def thread_is_open(codex_home: str, thread_id: str) -> bool:
    """Whether a process has the thread open (its writer lock is held). The id comes from an agent
    file (a rollout's ``session_meta``): it names a path only when it is an id (no ``/``, no ``..``)."""
    if not SAFE_ID.match(thread_id):
        return False
    return writer_holds(os.path.join(codex_home, "thread-writer-locks", f"{thread_id}.lock"))


def writer_holds(path: str) -> bool:
    """Whether some process holds the writer lock at ``path``. Read from ``/proc/locks`` where it
    exists, so donebell never holds the lock itself, not even for a moment (an agent taking it
    then would fail); elsewhere by a shared, non-blocking try that is released at once."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            table = f.read()
    except OSError:
        return _held_by_try(path)
    where = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":  # a waiter, not a holder
            continue
        parts = fields[5].split(":")
        try:
            if len(parts) == 3 and (int(parts[0], 16), int(parts[1], 16), int(parts[2])) == where:
                return True
        except ValueError:
            continue
    return False


def _held_by_try(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases a lock it took
    return False
