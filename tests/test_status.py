"""``donebell status``: state from health files, liveness by pid + start time, counts, exit codes, no secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate, new_receipt, to_outbox
from donebell.shared.statedir import StateDir, now
from donebell.shared.states import ROLE_NAMES
from donebell.workers.agents.registry import names

TOKEN = "tk_abcdefghijklmnopqrstuvwxyz123"


def _status(*args: str) -> tuple[int, str]:
    res = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "status", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ.copy(),
    )
    return res.returncode, res.stdout + res.stderr


def _running(state: StateDir, ident: dict[str, Any], **role_overrides: dict[str, Any]) -> None:
    """Health files of a live supervisor with four ready roles (all played by ``ident``)."""
    at = now()
    roles = {}
    for name in ROLE_NAMES:
        entry = {
            "state": "running",
            "enabled": True,
            **ident,
            "restarts": 0,
            "last_exit_code": None,
            "next_restart_at": None,
            "fatal": False,
            "reason": None,
        }
        entry.update(role_overrides.get(name, {}))
        roles[name] = entry
        state.write_health(
            name,
            {
                "role": name,
                **ident,
                "state": "ready",
                "started_at": at - 100,
                "heartbeat_at": at - 1,
                "heartbeat_seconds": 10.0,
                "passes": 3,
                "last_error": None,
            },
        )
    state.write_health(
        "supervisor",
        {
            "role": "supervisor",
            **ident,
            "state": "running",
            "started_at": at - 120,
            "heartbeat_at": at,
            "heartbeat_seconds": 10.0,
            "roles": roles,
        },
    )


def test_no_state_dir_means_not_running_and_nothing_is_created(isolated_env: dict[str, Path]) -> None:
    """Before anything ever ran: exit 3, and status creates no directory."""
    code, out = _status("--json")
    doc = json.loads(out)
    assert (code, doc["status"], doc["exit_code"]) == (3, "not-running", 3)
    assert not isolated_env["state"].exists()


#: The documented keys of `status --json`: the document, its supervisor, each role and the queue.
DOCUMENT_KEYS = {
    "restart_to_apply",
    "schema",
    "status",
    "exit_code",
    "reasons",
    "generated_at",
    "state_dir",
    "supervisor",
    "roles",
    "queue",
    "agents",
}
SUPERVISOR_KEYS = {
    "state",
    "pid",
    "started_at",
    "uptime_seconds",
    "heartbeat_at",
    "heartbeat_age_seconds",
    "ready_at",
}
ROLE_KEYS = {
    "state",
    "enabled",
    "alive",
    "pid",
    "started_at",
    "uptime_seconds",
    "heartbeat_at",
    "heartbeat_age_seconds",
    "stale_after_seconds",
    "passes",
    "last_success",
    "last_error",
    "last_error_at",
    "detail",
    "restarts",
    "last_exit_code",
    "next_restart_at",
    "fatal",
}
QUEUE_KEYS = {
    "held",
    "holds",
    "pending",
    "outbox",
    "dead",
    "sent",
    "suppressed",
    "oldest_outbox_age_seconds",
    "last_delivery_at",
    "last_delivery_age_seconds",
}


def test_healthy_document_has_the_documented_shape(state: StateDir, sleeper: dict[str, Any]) -> None:
    """Live supervisor, four ready roles, empty queues: exit 0 and every documented key is present."""
    _running(state, sleeper)
    code, out = _status("--json")
    doc = json.loads(out)
    assert (code, doc["status"], doc["reasons"]) == (0, "healthy", [])
    assert set(doc) == DOCUMENT_KEYS
    assert set(doc["agents"]) == set(names())  # every registered agent; not on this test's PATH: "not-found"
    assert set(doc["agents"]["claude"]) == {"agent", "program", "version", "state", "tested", "warning"}
    assert set(doc["supervisor"]) == SUPERVISOR_KEYS
    assert list(doc["roles"]) == list(ROLE_NAMES)
    assert set(doc["roles"]["delivery"]) == ROLE_KEYS
    assert set(doc["queue"]) == QUEUE_KEYS
    role = doc["roles"]["delivery"]
    assert (role["state"], role["pid"], role["alive"]) == ("ready", sleeper["pid"], True)
    assert 99 <= role["uptime_seconds"] <= 110


def test_supervisor_record_with_a_reused_pid_is_not_running(state: StateDir, sleeper: dict[str, Any]) -> None:
    """A live pid whose start time differs from the record is another process: exit 3."""
    _running(state, {"pid": sleeper["pid"], "create_time": sleeper["create_time"] - 500})
    code, out = _status("--json")
    doc = json.loads(out)
    assert (code, doc["supervisor"]["state"], doc["roles"]["maintenance"]["state"]) == (3, "not-running", "not-running")


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ({"maintenance": {"fatal": True, "state": "fatal"}}, "maintenance is fatal"),
        ({"delivery": {"state": "backoff", "pid": None, "create_time": None}}, None),
    ],
)
def test_fatal_or_restarting_role_is_degraded(
    state: StateDir, sleeper: dict[str, Any], override: dict[str, Any], reason: str | None
) -> None:
    """A fatal role, or one waiting to be restarted, makes the status degraded (exit 1)."""
    _running(state, sleeper, **override)
    if "delivery" in override:
        (state.root / "health" / "delivery.json").unlink()
        reason = "delivery is backoff"
    code, out = _status("--json")
    doc = json.loads(out)
    assert code == 1 and reason in doc["reasons"]


def test_dead_letters_and_an_old_outbox_record_are_degraded(
    state: StateDir, sleeper: dict[str, Any], isolated_env: dict[str, Path]
) -> None:
    """Dead letters, and an outbox record older than retry_max_seconds, each degrade the status."""
    _running(state, sleeper)
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps({"topic": "t", "retry_max_seconds": 60}))
    key = event_key("codex", "thread-1", "turn-1")
    record = to_outbox(new_candidate(key=key, provider="codex", source="test"), verdict="idle")
    record["promoted_at"] = now() - 600
    state.create("outbox", record)
    state.create(
        "dead",
        new_receipt({"key": event_key("codex", "t2", "u"), "provider": "codex"}, status="dead", reason="max-attempts"),
    )
    code, out = _status("--json")
    doc = json.loads(out)
    assert code == 1
    assert doc["queue"]["outbox"] == 1 and doc["queue"]["dead"] == 1
    assert 590 <= doc["queue"]["oldest_outbox_age_seconds"] <= 700
    assert "1 dead letter(s) in dead/" in doc["reasons"]
    assert any("retry_max_seconds=60" in r for r in doc["reasons"])


def test_last_delivery_is_the_newest_sent_receipt(state: StateDir, sleeper: dict[str, Any]) -> None:
    """last_delivery_at is the creation time of the newest sent/ receipt; counts are per folder."""
    _running(state, sleeper)
    stamps = []
    for n in range(3):
        receipt = new_receipt(
            {"key": event_key("codex", f"t{n}", "u"), "provider": "codex"}, status="sent", reason="sent"
        )
        receipt["created_at"] = now() - 300 + n
        stamps.append(receipt["created_at"])
        state.create("sent", receipt)
    state.create("pending", new_candidate(key=event_key("codex", "p", "u"), provider="codex", source="test"))
    code, out = _status("--json")
    queue = json.loads(out)["queue"]
    assert code == 0
    assert (queue["sent"], queue["pending"], queue["last_delivery_at"]) == (3, 1, stamps[-1])


def test_no_secret_reaches_the_output(state: StateDir, sleeper: dict[str, Any], isolated_env: dict[str, Path]) -> None:
    """Token and password from the config, Bearer headers and URL credentials are scrubbed from both outputs."""
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps({"topic": "t", "token": TOKEN, "password": "hunter2-secret"}))
    os.chmod(isolated_env["config"], 0o600)
    _running(state, sleeper)
    health = state.read_health("delivery") or {}
    health["last_error"] = (
        f"401 with {TOKEN}; header Bearer sekrit-bearer-value; url https://phil:hunter2-secret@ntfy.example/x"
    )
    state.write_health("delivery", health)
    for args in ((), ("--json",)):
        _, out = _status(*args)
        for secret in (TOKEN, "hunter2-secret", "sekrit-bearer-value"):
            assert secret not in out
        assert "401 with" in out


def test_human_table_lists_every_role_and_the_queue(state: StateDir, sleeper: dict[str, Any]) -> None:
    """The compact table has one line per role and a queue line."""
    _running(state, sleeper, **{"remote-scanner": {"state": "disabled", "enabled": False}})
    code, out = _status()
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("donebell: healthy (supervisor pid")
    for name in ROLE_NAMES:
        assert any(line.startswith(name) for line in lines)
    assert any(line.startswith("remote-scanner") and "disabled" in line for line in lines)
    assert lines[-1].startswith("queue: pending 0, outbox 0") and "last delivery never" in lines[-1]
