"""Role locks (workers only): ``locks/<role>.lock`` and the owner record beside it.

:func:`take_role_lock` is the body of :meth:`StateDir.role_lock`; it takes the lock without
waiting and records who holds it, which :meth:`RoleLock.release` clears again. Loaded on first
use, so the hook path never imports it.

The lock is ``filelock``'s (``flock``; ``msvcrt`` on Windows), the project's cross-platform file
lock, taken without waiting on a file made 0600 whatever the umask (a planted symlink is removed,
never followed). Its import (35 modules, with ``asyncio``) costs the service ~1.8 MiB of the
memory budget (docs/benchmarks.md, "Memory"); the supervisor loads it before it forks the roles,
so they share those pages.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir._base import LOCKS, encode, now
from donebell.shared.statedir._files import _unlink_quietly, same_file_check

if TYPE_CHECKING:
    from donebell.shared.statedir import StateDir


class RoleLock:
    """A held role lock; :meth:`release` drops it and clears the owner record."""

    def __init__(self, state: StateDir, role: str, lock: Any) -> None:
        self._state, self.role = state, role
        self._lock: Any = lock  # a held filelock.FileLock; None once released
        self._same_file = same_file_check(state.path(LOCKS, f"{role}.lock"))

    def still_held(self) -> bool:
        """False once ``locks/<role>.lock`` is gone or is another file (the state directory was
        deleted or replaced): the OS lock this process holds then guards nothing, and a second
        supervisor or worker can take the new file. Checked before every pass (issue 15)."""
        return self._same_file is not None and self._same_file()

    def release(self) -> None:
        if self._lock is None:
            return
        if self.still_held():  # else the owner record beside the lock is a newer holder's
            _unlink_quietly(self._state.path(LOCKS, f"{self.role}.owner.json"))
        lock, self._lock = self._lock, None
        lock.release()


def take_role_lock(state: StateDir, role: str) -> RoleLock | None:
    """:meth:`StateDir.role_lock`: the lock and its owner record, or None if it is held."""
    path = state.path(LOCKS, f"{role}.lock")
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            os.unlink(path)  # a planted symlink: removed (the link itself), never followed
    except FileNotFoundError:
        pass
    import filelock  # workers only; the hook path never takes a role lock

    file_lock = filelock.FileLock(path, timeout=0, mode=0o600)  # its default, 0666 & ~umask, is 0666 under umask 000
    try:
        file_lock.acquire()
    except filelock.Timeout:
        return None
    lock = RoleLock(state, role, file_lock)
    from donebell.shared.process.liveness import current_process_identity

    owner = {**current_process_identity(), "role": role, "locked_at": now()}
    try:
        state.write_file(state.path(LOCKS, f"{role}.owner.json"), encode(owner), durable=False)
    except BaseException:
        lock.release()
        raise
    return lock
