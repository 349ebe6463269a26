"""Whether a Codex thread is open: its writer lock.

Measured on Codex 0.171 (docs/wake.md, "Into the live session"): the process that has a thread open
(the interactive TUI, ``codex exec`` while it runs, or the app-server daemon a TUI runs on) holds
``$CODEX_HOME/thread-writer-locks/<thread-id>.lock`` with an exclusive ``flock`` for as long as it
is open; that lock is why ``codex exec resume`` beside it fails with "already has an active
writer". The file stays after the process exits, so only a held lock means open.
"""

from __future__ import annotations

import os

from donebell.shared.platform import locked
from donebell.workers.kit.thread_view import SAFE_ID


def thread_is_open(codex_home: str, thread_id: str) -> bool:
    """Whether a process has the thread open (its writer lock is held). The id comes from an agent
    file (a rollout's ``session_meta``): it names a path only when it is an id (no ``/``, no ``..``)."""
    if not SAFE_ID.match(thread_id):
        return False
    return writer_holds(os.path.join(codex_home, "thread-writer-locks", f"{thread_id}.lock"))


def writer_holds(path: str) -> bool:
    """Whether some process holds the writer lock at ``path`` (the platform seam's
    ``file_locked``: ``/proc/locks`` on Linux, a non-blocking probe elsewhere; never blocks)."""
    return locked.held_by_another(path)
