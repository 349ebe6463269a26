"""Clock skew (docs/wake.md, "Several machines"): the service's clock 10 minutes off this machine's.

No time source is faked: the files are the real ones, written as a service with a skewed clock
writes them (its own timestamps inside, 10 minutes behind; the file system's stamp on the file,
which is this machine's), and a hung writer is a file whose modification time stopped
(``os.utime``). The real hook, ``log``, ``status`` and ``doctor`` processes read them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.process.liveness import current_process_identity
from donebell.shared.records import new_receipt
from donebell.shared.statedir import StateDir, now
from support.delivery_kit import outbox_record
from test_approvals import ALLOW, Phone, _printed

pytestmark = pytest.mark.usefixtures("no_outside_config")

BEHIND = 600.0  # the service's clock, 10 minutes behind this machine's


def _wake_health(phone: Phone, heartbeat_at: float) -> Path:
    health = {"role": "wake", **current_process_identity(), "state": "ready", "heartbeat_seconds": 10.0}
    phone.state.write_health("wake", {**health, "heartbeat_at": heartbeat_at, "subscription": "subscribed"})
    return phone.state.root / "health" / "wake.json"


def test_the_permission_hook_waits_for_a_wake_role_whose_clock_is_behind(tmp_path: Path) -> None:
    phone = Phone(tmp_path)
    _wake_health(phone, now() - BEHIND)  # written just now, by a clock 10 minutes behind
    proc = phone.ask()
    asked = phone.request()
    assert "approval_until" in asked, "the hook refused to wait: it judged the heartbeat on its own clock"
    phone.tap(phone.ticket(asked, "allow"))
    assert json.loads(_printed(proc)) == ALLOW


def test_the_permission_hook_does_not_wait_for_a_hung_wake_role_whose_clock_is_right(tmp_path: Path) -> None:
    phone = Phone(tmp_path)
    path = _wake_health(phone, now())
    then = time.time() - BEHIND
    os.utime(path, (then, then))  # the file has not been written for 10 minutes: a hung role
    started = time.monotonic()
    assert _printed(phone.ask()) == b""
    assert time.monotonic() - started < 5


def _run(tmp: Path, state: StateDir, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp / "config.json"
    config.write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-skew-test"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    env.update(HOME=str(tmp), DONEBELL_STATE_DIR=str(state.root), DONEBELL_CONFIG=str(config))
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def _skewed_service(tmp: Path) -> StateDir:
    """A state directory as a service 10 minutes behind leaves it: its supervisor's health (a live
    process), a sent receipt and a log line of a role, between two lines of this machine's hooks."""
    state = StateDir(tmp / "state").ensure()
    at = now()
    sup: dict[str, Any] = {"role": "supervisor", **current_process_identity(), "state": "running"}
    state.write_health("supervisor", {**sup, "heartbeat_at": at - BEHIND, "heartbeat_seconds": 10.0, "roles": {}})
    receipt = new_receipt(outbox_record(turn_id="turn-skew"), status="sent", reason="sent")
    state.create("sent", {**receipt, "created_at": at - 10 - BEHIND, "sent_at": at - 10 - BEHIND})
    lines = [
        {"ts": at - 20, "pid": 1, "level": "warning", "msg": "hook: first"},  # this machine's clock
        {"ts": at - 5 - BEHIND, "pid": 2, "level": "warning", "msg": "delivery: after the send", "role": "delivery"},
        {"ts": at - 1, "pid": 3, "level": "warning", "msg": "hook: last"},
    ]
    (state.root / "notify.log").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return state


def test_log_lists_the_services_events_in_the_order_they_happened(tmp_path: Path) -> None:
    state = _skewed_service(tmp_path)
    shown = _run(tmp_path, state, "log", "--json", "--last", "0")
    events = [json.loads(line) for line in shown.stdout.splitlines()]
    order = [e["detail"].split(" (")[0] if e["kind"] == "warning" else e["kind"] for e in events]
    assert order == ["hook: first", "notified", "delivery: after the send", "hook: last"], shown


def test_status_and_doctor_with_the_service_clock_behind(tmp_path: Path) -> None:
    """`status` does not call a live supervisor stale for its clock; `doctor` warns about the skew."""
    state = _skewed_service(tmp_path)
    doc = json.loads(_run(tmp_path, state, "status", "--json").stdout)
    assert doc["supervisor"]["state"] == "running" and doc["supervisor"]["heartbeat_age_seconds"] < 60, doc
    assert "supervisor heartbeat is stale" not in doc["reasons"]
    checks = json.loads(_run(tmp_path, state, "doctor", "--json").stdout)["checks"]
    [skew] = [c for c in checks if c["name"] == "clock skew"]
    assert skew["status"] == "warn" and "10m 0s behind this machine's file system" in skew["summary"], skew
