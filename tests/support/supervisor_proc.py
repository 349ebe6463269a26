"""Run the real ``donebell run`` / ``donebell status`` as processes, and clean up after them.

Every process a test starts (the supervisor, and the roles it names in its health files) is
killed at teardown, whatever the test did, so a failing test never leaves daemons behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from donebell.shared.process.liveness import is_alive, process_create_time
from donebell.shared.statedir import StateDir

from support.codex_home import make_codex_home

#: Fast supervisor timings for tests (see donebell.supervisor.policy.Intervals).
FAST = {
    "DONEBELL_SUPERVISOR_BACKOFF_BASE": "0.2",
    "DONEBELL_SUPERVISOR_BACKOFF_CAP": "1",
    "DONEBELL_SUPERVISOR_THROTTLE": "0.3",
    "DONEBELL_SUPERVISOR_STABLE_AFTER": "30",
    "DONEBELL_SUPERVISOR_FLAP_WINDOW": "60",
    "DONEBELL_SUPERVISOR_FLAP_COUNT": "3",
    "DONEBELL_SUPERVISOR_FATAL_RETRY": "300",
    "DONEBELL_SUPERVISOR_HEARTBEAT": "0.5",
}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


class Harness:
    """A temp state dir + config, the supervisor processes started in it, and their cleanup."""

    def __init__(self, env: dict[str, str], state_dir: Path, log_dir: Path) -> None:
        self.env = env
        self.state = StateDir(state_dir)
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.seen: set[tuple[int, float | None]] = set()

    def start(self, **extra_env: str) -> subprocess.Popen[bytes]:
        n = len(self.procs)
        proc = subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "run"],
            env={**self.env, **extra_env},
            stdin=subprocess.DEVNULL,
            stdout=open(self.log_dir / f"run{n}.out", "wb"),
            stderr=open(self.log_dir / f"run{n}.err", "wb"),
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def output(self, n: int = 0) -> str:
        return (self.log_dir / f"run{n}.out").read_text() + (self.log_dir / f"run{n}.err").read_text()

    def status(self) -> tuple[int, dict[str, Any]]:
        res = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", "status", "--json"],
            env=self.env,
            capture_output=True,
            timeout=30,
        )
        return res.returncode, json.loads(res.stdout)

    def supervisor_json(self) -> dict[str, Any]:
        return self.state.read_health("supervisor") or {}

    def role_entry(self, role: str) -> dict[str, Any]:
        entry = self.supervisor_json().get("roles", {}).get(role) or {}
        if entry.get("pid"):
            self.seen.add((entry["pid"], entry.get("create_time")))
        return dict(entry)

    def health(self, role: str) -> dict[str, Any]:
        return self.state.read_health(role) or {}

    def working_pid(self, role: str) -> int | None:
        """The pid of the role's current process once its health file counts a pass."""
        entry, health = self.role_entry(role), self.health(role)
        if entry.get("pid") and entry["pid"] == health.get("pid") and (health.get("passes") or 0) > 0:
            return int(entry["pid"])
        return None

    def ready(self) -> bool:
        return bool(self.supervisor_json().get("ready_at"))

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for role in ("delivery", "local-scanner", "remote-scanner", "maintenance"):
            self.role_entry(role)
            health = self.health(role)
            if health.get("pid"):
                self.seen.add((health["pid"], health.get("create_time")))
        for pid, create_time in self.seen:
            if is_alive(pid, create_time):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)


def alive_pid(pid: int, create_time: float | None) -> bool:
    return is_alive(pid, create_time)


def start_time(pid: int) -> float | None:
    return process_create_time(pid)


@contextlib.contextmanager
def harness(isolated_env: dict[str, Path], tmp_path: Path, config: dict[str, Any] | None = None) -> Iterator[Harness]:
    """A harness over ``isolated_env`` with a valid config (watch_roots set, so all four roles run)."""
    make_codex_home(isolated_env["codex_home"])
    remote_root = make_codex_home(tmp_path / "remote-codex")
    cfg = {"server": "http://127.0.0.1:9", "topic": "donebell-test-topic", "watch_roots": [str(remote_root)]}
    cfg.update(config or {})
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps(cfg))
    os.chmod(isolated_env["config"], 0o600)
    env = {**os.environ, **FAST}
    h = Harness(env, isolated_env["state"], tmp_path)
    try:
        yield h
    finally:
        h.cleanup()
