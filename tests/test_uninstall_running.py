"""`uninstall --purge --yes` under a running `donebell run`: the supervisor and its roles are stopped
(and named) before the state goes, so no ghost outlives the purge; a process that cannot be stopped
makes --purge refuse. Real supervisor, real roles, real signals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from donebell.shared.process.liveness import is_alive, process_create_time
from support.supervisor_proc import FAST, Harness
from support.waiting import wait_for


def _uninstall(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "uninstall", "--service", "none", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _config(isolated_env: dict[str, Path]) -> None:
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-ghosts"}))
    os.chmod(isolated_env["config"], 0o600)


def test_purge_stops_the_supervisor_and_its_roles_first(isolated_env: dict[str, Path], tmp_path: Path) -> None:
    _config(isolated_env)
    h = Harness({**os.environ, **FAST}, isolated_env["state"], tmp_path)
    try:
        sup = h.start()
        wait_for(h.ready, what="supervisor ready")
        roles = {r: h.role_entry(r) for r in ("delivery", "local-scanner", "maintenance")}
        procs = [(sup.pid, process_create_time(sup.pid))] + [(e["pid"], e["create_time"]) for e in roles.values()]
        assert all(is_alive(pid, ct) for pid, ct in procs)
        # The test is the supervisor's parent: reap it the moment it exits, as systemd or a shell
        # would (an unreaped child stays a zombie with the same pid and start time).
        exit_code: list[int] = []
        reaper = threading.Thread(target=lambda: exit_code.append(sup.wait()), daemon=True)
        reaper.start()
        res = _uninstall(h.env, "--purge", "--yes")
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"stopped: donebell run (pid {sup.pid})" in res.stdout
        reaper.join(5)
        assert exit_code == [0]  # a clean SIGTERM shutdown, not a kill
        assert not any(is_alive(pid, ct) for pid, ct in procs)
        time.sleep(1.0)  # nothing left to recreate it
        assert not isolated_env["state"].exists() and not isolated_env["config"].exists()
    finally:
        h.cleanup()


def test_purge_refuses_while_a_process_it_cannot_stop_runs(isolated_env: dict[str, Path]) -> None:
    """A recorded process that survives SIGTERM and SIGKILL (a zombie: exited, never reaped by its
    parent, so its pid and start time still match): the state directory is kept."""
    _config(isolated_env)
    state = isolated_env["state"]
    (state / "locks").mkdir(parents=True)
    os.chmod(state, 0o700)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_for(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1].startswith("Z"), what="zombie")
    owner = {"pid": zombie.pid, "create_time": process_create_time(zombie.pid)}
    (state / "locks" / "delivery.owner.json").write_text(json.dumps(owner))
    try:
        res = _uninstall(dict(os.environ), "--purge", "--yes")
        assert res.returncode == 1, res.stdout
        assert f"still running: delivery (pid {zombie.pid}): could not stop it" in res.stdout
        assert "--purge refused" in res.stdout
        assert state.is_dir() and isolated_env["config"].exists()
    finally:
        zombie.wait()
