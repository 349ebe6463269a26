"""The health contract: what a role writes to ``health/<role>.json`` and how readers judge it.

One module for both sides, so the writer (every role process, :class:`HealthWriter`) and the
readers (the supervisor's ``READY=1`` and hang detection, ``donebell status``, the maintenance
role's start-up gate) agree on the states and on what "ready" and "stale" mean. Standard library
only. The file itself is read and written through :class:`~donebell.shared.statedir.StateDir`
(``read_health``/``write_health``), like every state file.

A health file names its writer by ``pid`` and ``create_time``; ``health/supervisor.json`` adds a
``roles`` map with the supervisor's view of each role (its pid and create time, state, restarts,
last exit code, next restart, fatal flag).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from donebell.shared.process.liveness import current_process_identity, is_alive
from donebell.shared.statedir import StateDir, now

# The state vocabulary is shared/states.py's (one module, importing nothing); these names stay
# importable from here for the code that reads health files.
from donebell.shared.states import FAILED_STATES as FAILED_STATES
from donebell.shared.states import READY_STATES as READY_STATES
from donebell.shared.states import RESTARTING_STATES as RESTARTING_STATES
from donebell.shared.states import ROLE_NAMES as ROLE_NAMES
from donebell.shared.states import RoleState as RoleState

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


def written_age(record: dict[str, Any] | None, written_at: float | None, at: float) -> float | None:
    """Seconds since the health file was written, on one clock: ``at`` (this machine's) against the
    file's mtime (``StateDir.health_written_at``), so a writer whose clock is ahead or behind ages
    like any other; the record's own ``heartbeat_at`` only when the mtime is unknown."""
    if written_at is None:
        return heartbeat_age(record, at)
    return max(0.0, at - written_at)


def is_stale_written(record: dict[str, Any] | None, written_at: float | None, at: float) -> bool:
    """:func:`is_stale` on one clock (:func:`written_age`)."""
    age = written_age(record, written_at, at)
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


class PassFacts(Protocol):
    """What the health file records of one finished pass (a role's ``PassResult``)."""

    @property
    def counters(self) -> Mapping[str, int]: ...

    @property
    def degraded(self) -> str | None: ...


class HealthWriter:
    """A role's ``health/<role>.json``; written atomically, never fsynced."""

    def __init__(self, state: StateDir, role: str, heartbeat_seconds: float) -> None:
        self.state = state
        self.data: dict[str, Any] = {
            "role": role,
            **current_process_identity(),
            "state": "starting",
            "heartbeat_seconds": heartbeat_seconds,  # status calls the role stale after 3x this
            "started_at": now(),
            "heartbeat_at": now(),
            "last_success": None,
            "last_error": None,
            "passes": 0,
            "counters": {},
        }

    def update(self, state: RoleState | None = None, **fields: Any) -> None:
        if state is not None:
            self.data["state"] = state
        self.data.update(fields)
        self.data["heartbeat_at"] = now()
        try:
            self.state.write_health(self.data["role"], self.data)
        except OSError:
            # A full disk must not stop the role (status shows the heartbeat aging); a lost lock
            # (StateDirReplaced: health/<role>.json may be a newer worker's) stops it before its next pass.
            pass

    def record_pass(self, result: PassFacts, seconds: float, extra: dict[str, Any]) -> None:
        counters = self.data["counters"]
        for name, value in result.counters.items():
            counters[name] = counters.get(name, 0) + value
        self.data["passes"] += 1
        self.data["last_pass_seconds"] = round(seconds, 4)
        self.data.update(extra)
        state: RoleState = "degraded" if result.degraded else "ready"
        self.update(state=state, degraded_reason=result.degraded, last_success=now())
