"""``donebell run`` with real role processes: titles, locks, health, restarts, fatal, stop, refusal.

Every role runs; a start-up failure is injected with ``DONEBELL_TEST_FAULT``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from donebell.shared.process.liveness import is_alive, process_create_time
from support.supervisor_proc import Harness, cmdline, harness
from support.waiting import wait_for

ROLES = ("delivery", "local-scanner", "remote-scanner", "maintenance")


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path) as h:
        yield h


def _settled_pids(h: Harness, roles: tuple[str, ...]) -> dict[str, int]:
    pids = {r: h.working_pid(r) for r in roles}
    return {r: p for r, p in pids.items() if p} if all(pids.values()) else {}


def test_each_role_runs_as_its_own_titled_process_with_lock_and_health(h: Harness) -> None:
    """Every role runs in its own process titled 'donebell: <role>', owning its lock and health file."""
    sup = h.start()
    working = tuple(ROLES)
    pids = wait_for(lambda: _settled_pids(h, working), what="roles working")
    assert "donebell: supervisor" in cmdline(sup.pid)
    assert len(set(pids.values())) == len(working)
    for role, pid in pids.items():
        assert cmdline(pid).startswith(f"donebell: {role}"), cmdline(pid)
        assert (h.state.root / "locks" / f"{role}.lock").exists()
        owner = h.state.lock_owner(role)
        assert owner and owner["pid"] == pid and is_alive(owner["pid"], owner["create_time"])
        assert h.health(role)["pid"] == pid
    wait_for(h.ready, what="supervisor ready")
    code, doc = h.status()
    for role in working:
        assert doc["roles"][role]["state"] in ("ready", "scanning"), doc["roles"][role]
        assert doc["roles"][role]["pid"] == pids[role]
    assert (code, doc["status"]) == (0, "healthy"), doc["reasons"]


def test_killed_role_is_restarted_and_the_restart_is_counted(h: Harness) -> None:
    """kill -9 of a working role: the supervisor starts a new process and status shows restarts=1."""
    h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    first = wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    os.kill(first, signal.SIGKILL)
    second = wait_for(lambda: (p := h.working_pid("maintenance")) and p != first and p, what="a new maintenance")
    _, doc = h.status()
    role = doc["roles"]["maintenance"]
    assert (role["restarts"], role["last_exit_code"], role["pid"], role["fatal"]) == (1, -9, second, False)


def test_repeated_startup_fault_goes_fatal_while_other_roles_keep_working(h: Harness, tmp_path: Path) -> None:
    """A role failing at every start becomes fatal (visible in status); the others keep their processes."""
    fault = tmp_path / "fault"
    fault.write_text("maintenance:startup")
    h.start(DONEBELL_TEST_FAULT=f"@{fault}", DONEBELL_SUPERVISOR_FATAL_RETRY="3")
    others = tuple(r for r in ROLES if r != "maintenance")
    before = wait_for(lambda: _settled_pids(h, others), what="other roles working")
    entry = wait_for(lambda: (e := h.role_entry("maintenance")).get("fatal") and e, what="maintenance fatal")
    assert entry["state"] == "fatal" and entry["last_exit_code"] == 70 and entry["restarts"] == 2
    code, doc = h.status()
    assert code == 1 and doc["roles"]["maintenance"]["state"] == "fatal"
    assert "maintenance is fatal" in doc["reasons"]
    time.sleep(1.0)  # proves a negative: a fatal neighbour does not restart the others within a second
    _, doc = h.status()
    for role in others:
        assert h.working_pid(role) == before[role], f"{role} was disturbed"
        assert doc["roles"][role]["state"] in ("ready", "scanning", "degraded"), doc["roles"][role]
        assert doc["roles"][role]["restarts"] == 0
    # The fault is repaired: the slow fatal retry finds a working role and leaves fatal.
    fault.write_text("")
    wait_for(lambda: h.working_pid("maintenance"), timeout=10, what="maintenance recovered")
    wait_for(lambda: not h.role_entry("maintenance")["fatal"], what="fatal cleared")


def test_sigterm_stops_all_roles_within_six_seconds_even_a_stuck_one(h: Harness) -> None:
    """SIGTERM: the supervisor exits 0 within 6 s and no role process survives, even one that is SIGSTOPped."""
    sup = h.start(DONEBELL_SUPERVISOR_STOP_GRACE="5")
    working = tuple(ROLES)
    pids = wait_for(lambda: _settled_pids(h, working), what="roles working")
    os.kill(pids["maintenance"], signal.SIGSTOP)  # cannot react to SIGTERM: must be SIGKILLed
    tree = psutil.Process(sup.pid).children(recursive=True)  # roles and whatever they started
    idents = {p.pid: process_create_time(p.pid) for p in tree}
    assert set(pids.values()) <= set(idents)
    started = time.monotonic()
    sup.send_signal(signal.SIGTERM)
    assert sup.wait(10) == 0
    assert time.monotonic() - started < 6.0
    for pid, create_time in idents.items():
        assert not is_alive(pid, create_time), cmdline(pid)
    sj = h.supervisor_json()
    assert sj["state"] == "stopped" and all(
        e["state"] in ("stopped", "disabled", "throttled", "fatal", "backoff") for e in sj["roles"].values()
    )
    assert "did not stop within 5s" in h.output()


def test_second_run_on_the_same_state_dir_refuses(h: Harness) -> None:
    """A second `donebell run` exits 75 with a clear message and does not disturb the first."""
    first = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    pid = wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    second = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    assert second.wait(20) == 75
    assert f"another supervisor (pid {first.pid}) is already running" in h.output(1)
    assert first.poll() is None and h.working_pid("maintenance") == pid


def test_config_error_exits_78_with_one_line(h: Harness, isolated_env: dict[str, Path]) -> None:
    """An invalid config stops `run` before any role starts: exit 78 and one line naming the key."""
    isolated_env["config"].write_text(json.dumps({"topic": "not a valid topic!"}))
    proc = h.start()
    assert proc.wait(30) == 78
    err = (h.log_dir / "run0.err").read_text().strip().splitlines()
    assert len(err) == 1 and "topic" in err[0] and err[0].startswith("donebell run: config error")
    assert not (h.state.root / "health" / "maintenance.json").exists()


def test_first_run_writes_the_default_config_and_prints_the_subscribe_url(
    h: Harness, isolated_env: dict[str, Path]
) -> None:
    """Without a config file, `run` writes one (0600, random topic) and prints its subscribe URL once."""
    isolated_env["config"].unlink()
    proc = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    wait_for(lambda: h.working_pid("maintenance"), what="maintenance working")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    topic = json.loads(isolated_env["config"].read_text())["topic"]
    assert oct(isolated_env["config"].stat().st_mode & 0o777) == "0o600"
    out = (h.log_dir / "run0.out").read_text()
    assert out.count(f"https://ntfy.sh/{topic}") == 1
    again = h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
    wait_for(lambda: h.supervisor_json().get("pid") == again.pid, what="second supervisor up")
    again.send_signal(signal.SIGINT)  # Ctrl-C in a terminal stops it the same way
    assert again.wait(10) == 0 and "subscribe" not in (h.log_dir / "run1.out").read_text()


def test_remote_scanner_is_disabled_without_watch_roots(h: Harness, isolated_env: dict[str, Path]) -> None:
    """With no watch_roots the remote-scanner is not spawned and status lists it as disabled (healthy)."""
    cfg = json.loads(isolated_env["config"].read_text())
    cfg["watch_roots"] = []
    isolated_env["config"].write_text(json.dumps(cfg))
    h.start(DONEBELL_SUPERVISOR_ROLES="maintenance,remote-scanner")
    wait_for(h.ready, what="ready")
    entry = h.role_entry("remote-scanner")
    assert (entry["state"], entry["enabled"], entry["pid"]) == ("disabled", False, None)
    code, doc = h.status()
    assert doc["roles"]["remote-scanner"]["state"] == "disabled"
    assert "remote-scanner" not in " ".join(doc["reasons"])


@pytest.mark.parametrize(
    ("wake", "reason"),
    [
        ({}, "wake_enabled is false"),
        ({"wake_enabled": True, "wake_topic": "replies"}, "needs an access token"),
    ],
)
def test_wake_role_is_disabled_unless_wake_enabled_and_allowed(
    h: Harness, isolated_env: dict[str, Path], wake: dict[str, object], reason: str
) -> None:
    """The wake role is not spawned when wake_enabled is off, nor when it lacks the access token it needs."""
    cfg = json.loads(isolated_env["config"].read_text())
    isolated_env["config"].write_text(json.dumps({**cfg, **wake}))
    h.start(DONEBELL_SUPERVISOR_ROLES="maintenance,wake")
    wait_for(h.ready, what="ready")
    entry = h.role_entry("wake")
    assert (entry["state"], entry["enabled"], entry["pid"]) == ("disabled", False, None)
    assert reason in entry["reason"], entry
    _, doc = h.status()
    assert doc["roles"]["wake"]["state"] == "disabled"
