"""``donebell run`` for a rig: start it, find its processes, stop it, and prove nothing is left behind.

The supervisor is started as a real ``python -m donebell.supervisor.cli run`` (its own session), with
the supervisor's fast test intervals. Every process of the installation is found by its
environment (``DONEBELL_STATE_DIR`` names this rig's private state dir), so cleanup only ever
signals processes this test started, by pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from support.rig import Rig
from support.supervisor_proc import FAST


def processes_of(rig: Rig) -> dict[int, str]:
    """``pid -> cmdline`` of every live process of this rig: its environment names the rig's state dir,
    or it holds a file of that state dir open (a role's lock: setproctitle overwrites the memory
    ``/proc/<pid>/environ`` shows, so a titled role is found by its open lock file)."""
    marker = f"DONEBELL_STATE_DIR={rig.state_dir}".encode()
    prefix = f"{rig.state_dir}/"
    found: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "stat").read_text()
            if status.rsplit(")", 1)[-1].split()[0] == "Z":
                continue
            ours = marker in Path(entry.path, "environ").read_bytes().split(b"\0")
            if not ours:
                for fd in os.scandir(Path(entry.path, "fd")):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path).startswith(prefix):
                            ours = True
                            break
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if ours:
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return found


def cmdlines_of(rig: Rig) -> list[str]:
    return list(processes_of(rig).values())


class Service:
    """One running ``donebell run``."""

    def __init__(self, rig: Rig, log: Path) -> None:
        self.rig, self.log = rig, log
        self.proc = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        with open(self.log, "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "donebell.supervisor.cli", "run"],
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def environment(self) -> dict[str, str]:
        """The rig's environment with the supervisor's fast test intervals (the rig's own settings win)."""
        fast = {k: v for k, v in FAST.items() if k not in self.rig.extra_env}
        return self.rig.env(**fast)

    def restart(self) -> None:
        """Start a new supervisor after the old one died (a kill -9, say)."""
        self.proc.wait(10)
        self.proc = self._start()

    def role_pids(self) -> dict[str, int]:
        """Live role processes by role, as the supervisor's health file names them."""
        health = self.rig.state.read_health("supervisor") or {}
        out = {}
        for role, entry in (health.get("roles") or {}).items():
            pid = entry.get("pid") if isinstance(entry, dict) else None
            if isinstance(pid, int) and pid in processes_of(self.rig):
                out[role] = pid
        return out

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            health = self.rig.state.read_health("supervisor") or {}
            if health.get("ready_at") and health.get("pid") == self.proc.pid:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"donebell run exited {self.proc.returncode}: {self.output()[-2000:]}")
            time.sleep(0.05)
        raise AssertionError(f"donebell run not ready after {timeout}s: {self.output()[-2000:]}")

    def output(self) -> str:
        return self.log.read_text("utf-8", "replace") if self.log.exists() else ""

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, as systemd would; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def kill_leftovers(rig: Rig) -> list[str]:
    """SIGKILL whatever of this rig still runs (after a failed test); returns what it found."""
    left = processes_of(rig)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return list(left.values())


@contextlib.contextmanager
def service(rig: Rig, log: Path) -> Iterator[Service]:
    svc = Service(rig, log)
    try:
        yield svc
    finally:
        svc.stop()
        kill_leftovers(rig)
