"""Before uninstall removes donebell, it stops every donebell process of this state directory.

Left running, a ``donebell run`` and its roles would outlive an ``uninstall --purge`` as ghosts
that recreate the folders just deleted (``status`` then says not-running). Who runs is read from
the state directory only: ``health/supervisor.json`` (the supervisor and its view of each role),
every ``health/<role>.json`` and every ``locks/<role>.owner.json`` (an on-demand worker started by
a hook). A recorded process counts only if its pid *and* start time match (pid reuse is death),
so nothing else is ever signalled. The supervisor gets SIGTERM first (it stops its own roles),
then anything still alive gets SIGTERM, and SIGKILL after a grace period.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from donebell.shared.process.liveness import owner_alive
from donebell.shared.statedir import HEALTH, LOCKS, StateDir
from donebell.supervisor.children import stop_pid

SUPERVISOR_GRACE = 15.0  # the supervisor's own stop_grace for its roles, plus margin
ROLE_GRACE = 5.0


@dataclass(frozen=True)
class Running:
    """One live donebell process of the state directory."""

    what: str  # "donebell run" or the role name
    pid: int
    create_time: float | None

    def alive(self) -> bool:
        return owner_alive({"pid": self.pid, "create_time": self.create_time})

    def __str__(self) -> str:
        return f"{self.what} (pid {self.pid})"


def _names(state: StateDir, folder: str, suffix: str) -> list[str]:
    try:
        entries = os.listdir(state.path(folder))
    except OSError:
        return []
    return sorted(n[: -len(suffix)] for n in entries if n.endswith(suffix) and not n.startswith("."))


def running(state: StateDir) -> list[Running]:
    """Every live process the state directory records, the supervisor first."""
    found: dict[int, Running] = {}

    def add(what: str, record: dict[str, Any] | None) -> None:
        if isinstance(record, dict) and owner_alive(record) and record["pid"] not in found:
            stamp = record.get("create_time")
            found[record["pid"]] = Running(
                what, record["pid"], float(stamp) if isinstance(stamp, (int, float)) else None
            )

    supervisor = state.read_health("supervisor")
    add("donebell run", supervisor)
    entries = (supervisor or {}).get("roles")
    for name, entry in entries.items() if isinstance(entries, dict) else ():
        add(str(name), entry)
    for name in _names(state, HEALTH, ".json"):
        add(name, state.read_health(name))
    for name in _names(state, LOCKS, ".owner.json"):
        add("donebell run" if name == "supervisor" else name, state.lock_owner(name))
    return list(found.values())


def stop_all(state: StateDir) -> tuple[list[Running], list[Running]]:
    """Stop every recorded live process; returns (stopped, still running)."""
    found = running(state)
    for proc in found:  # the supervisor first: it stops its roles itself
        if proc.alive():
            stop_pid(proc.pid, proc.create_time, SUPERVISOR_GRACE if proc.what == "donebell run" else ROLE_GRACE)
    still = [proc for proc in found if proc.alive()]
    return [proc for proc in found if proc not in still], still
