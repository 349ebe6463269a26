"""Start an agent CLI as a real child process with a clean environment, and reap it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from donebell.shared.platform import FORCE_PORTABLE_ENV
except ImportError:  # `python -m benchmarks --compare` runs these helpers on an older donebell too
    FORCE_PORTABLE_ENV = "DONEBELL_FORCE_PORTABLE"

# Only what the CLIs need; like `env -i`, nothing from the developer's shell leaks in.
_PATH = "/usr/local/bin:/usr/bin:/bin"


def base_env(home: Path, tmpdir: Path) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": _PATH,
        "TMPDIR": str(tmpdir),  # Claude keeps background-task output under $TMPDIR/claude-<uid>
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "USER": "root" if os.geteuid() == 0 else "e2e",
        "TERM": "dumb",
    }
    # The CI's portable pass (.ci/run): every process of the run, agents' hooks included, uses the
    # platform seam's portable implementations.
    if os.environ.get(FORCE_PORTABLE_ENV):
        env[FORCE_PORTABLE_ENV] = os.environ[FORCE_PORTABLE_ENV]
    return env


@dataclass(frozen=True)
class AgentRun:
    """How one CLI process ended."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    # Rollouts (Codex) or transcripts (Claude, main then subagents) found after the run.
    session_files: tuple[Path, ...] = ()

    def stdout_json(self) -> list[dict[str, Any]]:
        """stdout's JSON lines (codex --json / claude stream-json), non-JSON lines skipped."""
        out: list[dict[str, Any]] = []
        for line in self.stdout.splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if isinstance(obj, dict):
                    out.append(obj)
        return out

    def describe(self) -> str:
        """A compact dump for assertion messages."""
        return (
            f"rc={self.returncode} timed_out={self.timed_out} {self.duration_s:.1f}s\n"
            f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"
        )


class RunningAgent:
    """A started CLI. It leads its own process group so that a timeout can also end the shells
    and background tasks it spawned, and nothing else."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.argv = list(argv)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def interrupt(self) -> None:
        """SIGINT the CLI process itself (what Ctrl-C does to a turn)."""
        self.proc.send_signal(signal.SIGINT)

    def kill(self) -> None:
        self._killpg(signal.SIGKILL)

    def wait(self, timeout: float = 60, linger: float = 5.0) -> AgentRun:
        """Reap the CLI (SIGKILL to its group after `timeout`), then give what it spawned up to
        `linger` seconds to finish before killing it too.

        The linger matters: Codex's notify and Claude's StopFailure hook are fire-and-forget
        children that often outlive the CLI by tens of milliseconds, as they would in a terminal.
        """
        timed_out = False
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._killpg(signal.SIGKILL)
            out, err = self.proc.communicate()
        duration = time.monotonic() - self.started
        deadline = time.monotonic() + linger
        while self._group_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        # A background shell the agent left behind must not outlive the test.
        self._killpg(signal.SIGKILL)
        return AgentRun(self.argv, self.proc.returncode, out, err, duration, timed_out)

    def _group_alive(self) -> bool:
        """Whether a non-zombie process is still in the CLI's group.

        killpg(pgid, 0) is not enough: Codex's exited children are reparented to PID 1, which
        in a container may take a second or more to reap them, and zombies still count there.
        """
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # the process went away while we looked
            state, pgrp = fields[0], int(fields[2])
            if pgrp == self.proc.pid and state != "Z":
                return True
        return False

    def _killpg(self, sig: signal.Signals) -> None:
        # The group id is our child's pid (start_new_session), so this only reaches what it spawned.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


def start_agent(argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> RunningAgent:
    return RunningAgent(argv, cwd=cwd, env=env)
