"""The local-scanner role as a real process: --once runs, inotify wake-ups, health, clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from support.scanner_kit import IDS, append, fixture_lines, make_index, records, rollout_path
from support.waiting import wait_for

WORKER = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "local-scanner"]


def _health(state: StateDir) -> dict[str, Any]:
    return state.read_health("local-scanner") or {}


def test_once_run_submits_candidates_and_writes_health(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """`donebell worker local-scanner --once` submits the turn and reports its scan in health/local-scanner.json."""
    home = isolated_env["codex_home"]
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    make_index(home, [{"id": IDS["simple-exec"][0], "rollout_path": path}])
    done = subprocess.run([*WORKER, "--once"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [rec] = records(state, "pending")
    assert rec["key"] == event_key("codex", *IDS["simple-exec"])
    health = _health(state)
    assert health["state"] == "stopped" and health["degraded_reason"] is None  # --once ends "stopped"
    assert health["index_status"] == "ok" and health["files_watched"] == 1
    assert health["counters"]["cursors_advanced"] == 1 and health["counters"]["terminal_created"] == 1
    assert health["pid"] > 0 and health["create_time"] and health["last_success"]
    assert {"last_scan_at", "last_scan_seconds", "last_full_scan_at", "hot_folders"} <= set(health)


def test_once_run_without_index_is_ready_with_a_note_and_scans(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """With no state_5.sqlite (Codex has not written its index yet) the role is not degraded: it
    says what it waits for and still reads the hot folders."""
    home = isolated_env["codex_home"]
    rollout_path(home, "abort-sigint-turn_aborted").write_bytes(b"".join(fixture_lines("abort-sigint-turn_aborted")))
    done = subprocess.run([*WORKER, "--once"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    health = _health(state)
    assert health["index_status"] == "missing" and health["degraded_reason"] is None
    assert "waiting for Codex's first run" in health["note"]
    assert [r["outcome"] for r in records(state, "pending")] == ["stopped"]


def test_scan_scope_all_option_reaches_the_scan(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """--scan-scope all makes the one-shot run walk archived_sessions/ as well."""
    home = isolated_env["codex_home"]
    archived = home / "archived_sessions" / "2025" / "03" / "04"
    archived.mkdir(parents=True)
    rollout_path(home, "tool-exec-command", archived).write_bytes(b"".join(fixture_lines("tool-exec-command")))
    subprocess.run([*WORKER, "--once"], check=True, capture_output=True, timeout=60)
    assert records(state, "pending") == []
    subprocess.run([*WORKER, "--once", "--scan-scope", "all"], check=True, capture_output=True, timeout=60)
    assert len(records(state, "pending")) == 1 and _health(state)["scan_scope"] == "all"


def test_running_worker_wakes_on_append_and_stops_on_sigterm(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """A continuous worker notices an appended terminal record within seconds (no rescan due) and exits 0 on SIGTERM."""
    home = isolated_env["codex_home"]
    path = rollout_path(home, "subagent-parent")
    lines = fixture_lines("subagent-parent")
    path.write_bytes(b"".join(lines[:-1]))
    env = {**os.environ, "DONEBELL_WATCH_SCAN_SECONDS": "3600"}  # only a wake-up can explain a prompt scan
    proc = subprocess.Popen([*WORKER], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _health(state).get("passes", 0) >= 1, 30, "a first pass", detail=lambda: _health(state))
        assert _health(state)["state"] == "ready" and _health(state)["index_status"] == "missing"
        appended = time.monotonic()
        append(path, lines[-1])  # the heartbeat pass is ~10 s away: only inotify can be this quick
        wait_for(lambda: len(records(state, "pending")) == 1, 5, "one pending candidate")
        assert time.monotonic() - appended < 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _health(state)["state"] == "stopped"
    health = json.loads((state.root / "health" / "local-scanner.json").read_text())
    assert health["counters"]["terminal_created"] == 1
