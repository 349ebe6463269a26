"""The supervisor's answer to a state directory deleted or replaced under it (issue 15).

Role locks live inside the state directory. If someone deletes it while the service runs, every
process keeps an OS lock on a file that no longer exists, and a second ``donebell run`` (or a hook
that recreates the directory) finds no lock at all: it started a second supervisor and a second
set of roles, and 20 turns gave 34 notifications. Every role checks before each pass that its
lock file is still the one it locked (``RoleLock.still_held``) and exits otherwise; the
supervisor checks its own at every health check and then either

* re-creates the directory and takes the new ``locks/supervisor.lock``: its roles, having exited,
  are restarted and take their new locks before they work again; or
* finds that lock held by another supervisor, which owns the directory now: it stops its roles and
  exits with ``EXIT_ALREADY_RUNNING`` (75), so exactly one supervisor remains.
"""

from __future__ import annotations

from typing import Protocol

from donebell.shared.statedir import RoleLock, StateDir, StateError

EXIT_ALREADY_RUNNING = 75


class Guarded(Protocol):
    """What ``retake`` needs of the supervisor (``loop.Supervisor``), named here so the guard
    does not import the loop that calls it."""

    state: StateDir
    stop_signal: int | None
    exit_code: int

    def say(self, message: str, level: str = "info") -> None: ...

    def publish(self) -> None: ...


def retake(supervisor: Guarded, old: RoleLock) -> RoleLock | None:
    """A new supervisor lock over a re-created state directory, or None (then the loop stops)."""
    state = supervisor.state
    try:
        state.ensure()
        lock = state.role_lock("supervisor")
    except (StateError, OSError) as exc:
        supervisor.say(
            f"the state directory {state.root} was deleted and cannot be re-created: {exc}; stopping", level="error"
        )
        lock = None
    else:
        if lock is not None:
            old.release()
            supervisor.say(
                f"the state directory {state.root} was deleted or replaced; re-created it and its "
                "locks (roles restart on the new locks)",
                level="warning",
            )
            supervisor.publish()
            return lock
        owner = state.lock_owner("supervisor") or {}
        supervisor.say(
            f"another supervisor (pid {owner.get('pid', '?')}) owns the re-created state directory "
            f"{state.root}; stopping this one",
            level="error",
        )
    supervisor.stop_signal = supervisor.stop_signal or 15
    supervisor.exit_code = EXIT_ALREADY_RUNNING
    old.release()
    return None
