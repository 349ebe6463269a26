"""Liveness with pid + start time: stale owners are dead, orphans are stopped, hung roles are killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from donebell.shared.process.liveness import is_alive, process_create_time
from donebell.shared.statedir import encode, now
from support.supervisor_proc import Harness, harness
from support.waiting import wait_for


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path) as h:
        yield h


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant_owner(h: Harness, name: str, pid: int, create_time: float | None) -> None:
    """Write a lock owner record and a health file as a crashed process would have left them."""
    h.state.ensure()
    record = {"pid": pid, "create_time": create_time, "role": name, "locked_at": now() - 5}
    h.state.write_file(h.state.root / "locks" / f"{name}.owner.json", encode(record), durable=False)
    (h.state.root / "locks" / f"{name}.lock").touch()
    roles = {"maintenance": {"state": "running", "pid": pid, "create_time": create_time, "restarts": 0}}
    health = {
        "role": name,
        "pid": pid,
        "create_time": create_time,
        "state": "running",
        "started_at": now() - 50,
        "heartbeat_at": now(),
        "heartbeat_seconds": 10.0,
        "roles": roles,
    }
    h.state.write_health(name, health)


@pytest.mark.parametrize("owner", ["dead-pid", "reused-pid"])
def test_stale_supervisor_lock_and_health_are_reclaimed(h: Harness, owner: str) -> None:
    """An owner record naming a dead pid, or a live pid with another start time, is dead: status and run agree."""
    if owner == "dead-pid":
        pid, create_time = _dead_pid(), 1.0e9
    else:  # this very test process, but "started" an hour earlier than it did: a reused pid
        pid, create_time = os.getpid(), (process_create_time(os.getpid()) or 0) - 3600
    _plant_owner(h, "supervisor", pid, create_time)
    _plant_owner(h, "maintenance", pid, create_time)
    code, doc = h.status()
    assert (code, doc["status"], doc["supervisor"]["pid"]) == (3, "not-running", None)
    assert doc["roles"]["maintenance"]["state"] == "not-running" and doc["roles"]["maintenance"]["pid"] is None
    sup = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    assert h.state.lock_owner("supervisor")["pid"] == sup.pid  # type: ignore[index]
    assert is_alive(os.getpid(), process_create_time(os.getpid()))  # the namesake was never signalled
    code, doc = h.status()
    assert doc["supervisor"]["pid"] == sup.pid and doc["roles"]["maintenance"]["state"] == "ready"


def test_killed_supervisor_is_replaced_and_its_orphan_roles_stopped(h: Harness) -> None:
    """kill -9 of the supervisor: its lock is free, and the next run stops the orphaned roles before starting its own."""
    first = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    orphan = wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    orphan_start = process_create_time(orphan)
    os.killpg(first.pid, signal.SIGKILL)  # the supervisor only: the role lives in its own session
    first.wait(10)
    assert is_alive(orphan, orphan_start)
    assert h.status()[0] == 3
    second = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    fresh = wait_for(lambda: (p := h.working_pid("maintenance")) and p != orphan and p, what="a new maintenance")
    assert not is_alive(orphan, orphan_start)
    assert "left behind by a previous supervisor" in h.output(1)
    assert h.state.lock_owner("supervisor")["pid"] == second.pid  # type: ignore[index]
    assert h.state.lock_owner("maintenance")["pid"] == fresh  # type: ignore[index]


def test_hung_role_is_killed_and_restarted_but_a_heartbeating_one_is_not(h: Harness) -> None:
    """A role that keeps heartbeating outlives hang_after; once it stops (SIGSTOP) it is killed and replaced."""
    h.state.ensure()
    held = h.state.role_lock("maintenance")  # the role waits for it, heartbeating every second
    assert held is not None
    try:
        h.start(DONEBELL_SUPERVISOR_ROLES="maintenance", DONEBELL_SUPERVISOR_HANG_AFTER="2.5")
        first = wait_for(
            lambda: h.health("maintenance").get("state") == "waiting-lock" and h.health("maintenance")["pid"],
            what="maintenance waiting for its lock",
        )
        start = process_create_time(first)
        time.sleep(4.0)  # longer than hang_after, but it heartbeats: not a hang
        assert h.role_entry("maintenance")["pid"] == first and is_alive(first, start)
        os.kill(first, signal.SIGSTOP)
        entry = wait_for(
            lambda: (e := h.role_entry("maintenance")).get("pid") not in (None, first) and e,
            timeout=20,
            what="replacement",
        )
        assert not is_alive(first, start)
        assert entry["restarts"] == 1 and entry["last_exit_code"] == -signal.SIGKILL
        assert "silent for" in h.output()
    finally:
        held.release()


def test_status_shows_a_stale_heartbeat_of_a_live_role(h: Harness) -> None:
    """A live role whose heartbeat is older than 3x its interval is reported stale (exit 1)."""
    h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    pid = wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    os.kill(pid, signal.SIGSTOP)  # alive, but no more heartbeats
    try:
        health = h.health("maintenance")
        health["heartbeat_at"] = then = now() - 4 * health["heartbeat_seconds"]
        h.state.write_health("maintenance", health)
        os.utime(h.state.root / "health" / "maintenance.json", (then, then))  # as if written then
        code, doc = h.status()
        assert code == 1 and doc["roles"]["maintenance"]["state"] == "stale"
        assert "maintenance is stale" in doc["reasons"]
    finally:
        os.kill(pid, signal.SIGCONT)
    assert json.loads((h.state.root / "health" / "maintenance.json").read_text())["pid"] == pid
