"""Reading health files: which process wrote one, whether it is alive, stale, or settled.

Shared by the supervisor (``READY=1``, hang detection), ``donebell status`` and the maintenance
role's start-up gate, so all three agree on what "ready" and "stale" mean. Standard library only.

A health file (``health/<role>.json``, written by ``workers.role``) names its writer by ``pid``
and ``create_time``; ``health/supervisor.json`` adds a ``roles`` map with the supervisor's view of
each role (its pid and create time, state, restarts, last exit code, next restart, fatal flag).
"""

from __future__ import annotations

from typing import Any

from donebell.shared.liveness import is_alive

#: The role names ``donebell run`` supervises, in start order.
ROLE_NAMES = ("delivery", "local-scanner", "remote-scanner", "maintenance", "wake")

#: Role health states that mean "up and has done its first unit of work".
READY_STATES = frozenset({"ready", "degraded"})
#: Role health states that mean "will not become ready by waiting" (still counts as settled).
FAILED_STATES = frozenset({"error", "stopped"})
#: Supervisor-side role states after a failed run.
RESTARTING_STATES = frozenset({"backoff", "throttled", "fatal"})

DEFAULT_HEARTBEAT_SECONDS = 10.0
STALE_FACTOR = 3.0


def alive(record: dict[str, Any] | None) -> bool:
    """True if the record's ``pid`` runs and is the same process (start time matches)."""
    return bool(record) and is_alive(record.get("pid"), record.get("create_time"))  # type: ignore[union-attr]


def heartbeat_age(record: dict[str, Any] | None, at: float) -> float | None:
    """Seconds since the record's ``heartbeat_at`` (None if it has none)."""
    beat = (record or {}).get("heartbeat_at")
    return max(0.0, at - float(beat)) if isinstance(beat, (int, float)) else None


def stale_after(record: dict[str, Any] | None) -> float:
    """The heartbeat age beyond which the writer counts as stale: 3x its own interval."""
    interval = (record or {}).get("heartbeat_seconds")
    if not isinstance(interval, (int, float)) or interval <= 0:
        interval = DEFAULT_HEARTBEAT_SECONDS
    return STALE_FACTOR * float(interval)


def is_stale(record: dict[str, Any] | None, at: float) -> bool:
    age = heartbeat_age(record, at)
    return age is not None and age > stale_after(record)


def same_process(health: dict[str, Any] | None, entry: dict[str, Any] | None) -> bool:
    """True if a role's health file was written by the process the supervisor started."""
    if not health or not entry or health.get("pid") != entry.get("pid"):
        return False
    a, b = health.get("create_time"), entry.get("create_time")
    return not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or abs(a - b) <= 1.0


def did_work(health: dict[str, Any] | None) -> bool:
    """True if the health file counts at least one finished pass."""
    passes = (health or {}).get("passes")
    return isinstance(passes, int) and passes > 0


def settled(entry: dict[str, Any] | None, health: dict[str, Any] | None) -> bool:
    """True once a supervised role reported ready/finished, or failed, or is disabled.

    ``entry`` is the role's item in ``supervisor.json``; ``health`` its own health file. This is
    what ``READY=1`` waits for and what opens the maintenance gate: a role that cannot start
    (throttled, fatal) must not hold either back forever.
    """
    if entry is None:
        return False
    state = entry.get("state")
    if state == "disabled" or state in RESTARTING_STATES or entry.get("fatal"):
        return True
    if not same_process(health, entry):
        return False
    assert health is not None
    return did_work(health) or health.get("state") in READY_STATES | FAILED_STATES
