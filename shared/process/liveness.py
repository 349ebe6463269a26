"""Is a recorded process still the same process? (pid + start time, as PIDs get reused.)

A lock or health file records ``pid`` and ``create_time`` (seconds since the epoch, as psutil
reports it). A pid that exists with another start time is a different, newer process: the
recorded owner is dead. How a start time is read is the platform seam's process identity
(``shared/platform/identity.py``: ``/proc`` on Linux, psutil elsewhere).
"""

from __future__ import annotations

import os

from donebell.shared.platform import identity

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_TOLERANCE_S = 1.0


def process_create_time(pid: int) -> float | None:
    """Start time of ``pid`` in epoch seconds, or None if no such process."""
    return identity.create_time(pid)


def own_start_time() -> float | None:
    """When this process started, in epoch seconds to a clock tick (10 ms), or None where the
    platform's process identity cannot say it cheaply (``shared/platform/identity.py``).

    Unlike :func:`process_create_time` (whose boot time has whole seconds), this measures the
    process's age on the boot clock the kernel stamps ``starttime`` with, so it is as precise as
    the tick: a hook learns when the agent ran it, not when its imports were done (~15 ms later).
    """
    return identity.own_start_time()


def current_process_identity() -> dict[str, Any]:
    """``{"pid", "create_time"}`` of this process, for owner and health records."""
    pid = os.getpid()
    return {"pid": pid, "create_time": process_create_time(pid)}


def is_alive(pid: object, create_time: object) -> bool:
    """True only if ``pid`` runs and started when the record says (pid reuse is death)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    actual = process_create_time(pid)
    if actual is None:
        return False
    if not isinstance(create_time, (int, float)):
        return True  # no start time recorded: the pid alone is the best evidence we have
    return abs(actual - float(create_time)) <= _TOLERANCE_S


def owner_alive(owner: dict[str, Any] | None) -> bool:
    """True if a lock owner / health record names a process that is still that process."""
    return bool(owner) and is_alive(owner.get("pid"), owner.get("create_time"))  # type: ignore[union-attr]
