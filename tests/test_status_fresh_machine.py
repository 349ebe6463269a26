"""A fresh machine where Codex has never run: the real supervisor is healthy, and says what it waits for.

Codex creates its thread index (``state_5.sqlite``) on its first run. Before that (and on a machine
without a Codex home at all) the local scanner has nothing to watch, which is not a fault: ``status``
must exit 0 and name the wait in its table, not report ``degraded``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.supervisor_proc import FAST, Harness
from support.waiting import wait_for


def _status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "status", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("codex_home_exists", [True, False], ids=["empty-codex-home", "no-codex-home"])
def test_status_is_healthy_before_codex_first_run(
    isolated_env: dict[str, Path], tmp_path: Path, codex_home_exists: bool
) -> None:
    if not codex_home_exists:
        isolated_env["codex_home"].rmdir()
    isolated_env["config"].parent.mkdir(parents=True)
    isolated_env["config"].write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-fresh"}))
    os.chmod(isolated_env["config"], 0o600)
    h = Harness({**os.environ, **FAST}, isolated_env["state"], tmp_path)
    try:
        h.start()
        wait_for(h.ready, what="supervisor ready")
        wait_for(lambda: (h.health("local-scanner").get("passes") or 0) > 0, what="a scanner pass")
        res = _status(h.env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.startswith("donebell: healthy")
        scanner_row = next(line for line in res.stdout.splitlines() if line.startswith("local-scanner"))
        assert " ready " in scanner_row and "waiting for Codex's first run" in scanner_row
        doc = json.loads(_status(h.env, "--json").stdout)
        assert doc["reasons"] == [] and doc["roles"]["local-scanner"]["state"] == "ready"
        # Every role that is not ready says why in the table (remote-scanner: no watch_roots).
        remote_row = next(line for line in res.stdout.splitlines() if line.startswith("remote-scanner"))
        assert "disabled" in remote_row and "no watch_roots configured" in remote_row
    finally:
        h.cleanup()


def test_a_corrupt_thread_index_is_still_degraded_and_the_table_says_why(
    isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Only a *missing* index is a wait: an unreadable one stays a fault, with its reason in the table."""
    (isolated_env["codex_home"] / "state_5.sqlite").write_bytes(b"this is not a database" * 100)
    isolated_env["config"].parent.mkdir(parents=True)
    isolated_env["config"].write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-fresh"}))
    h = Harness({**os.environ, **FAST}, isolated_env["state"], tmp_path)
    try:
        h.start(DONEBELL_SUPERVISOR_ROLES="local-scanner")
        wait_for(lambda: h.health("local-scanner").get("state") == "degraded", what="scanner degraded")
        wait_for(h.ready, what="supervisor ready")
        res = _status(h.env)
        assert res.returncode == 1
        row = next(line for line in res.stdout.splitlines() if line.startswith("local-scanner"))
        assert "degraded" in row and "thread index corrupt" in row
    finally:
        h.cleanup()
