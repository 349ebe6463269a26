"""A new user's account, driven through the installed ``donebell`` console script (issue 37).

Each :class:`NewUser` has its own HOME and nothing else: config, state folder, Codex home and Claude
config dir are the defaults under that HOME (``~/.config/donebell``, ``~/.local/state/donebell``,
``~/.codex``, ``~/.claude``), as on a fresh machine. Every command runs the ``donebell`` script the
venv's installer wrote (``<venv>/bin/donebell``), in a subprocess, from a folder outside the
checkout; ``donebell run`` is started in its own session and killed with its roles at
:meth:`NewUser.cleanup`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from donebell.shared.statedir import StateDir

from support.supervisor_proc import FAST, Harness

#: The console script of the venv that runs the tests (``pip install -e .`` wrote it).
DONEBELL = Path(sys.executable).parent / "donebell"
#: What a shell of this machine may carry that would point donebell or the agents elsewhere.
_DROPPED_PREFIXES = ("DONEBELL_", "CODEX_", "CLAUDE_", "XDG_", "ANTHROPIC_", "OPENAI_")


class NewUser:
    """A fresh HOME and the donebell processes started in it."""

    def __init__(self, root: Path, **extra_env: str) -> None:
        assert DONEBELL.is_file(), f"no installed console script at {DONEBELL}"
        self.home = root / "home"
        self.home.mkdir(parents=True)
        self.cwd = root / "cwd"
        self.cwd.mkdir()
        self.codex = self.home / ".codex"
        self.claude = self.home / ".claude"
        self.config = self.home / ".config" / "donebell" / "config.json"
        self.state = StateDir(self.home / ".local" / "state" / "donebell")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIXES)}
        self.env.update(HOME=str(self.home), **FAST, **extra_env)
        self.runs: list[subprocess.Popen[bytes]] = []
        self.harness = Harness(self.env, self.state.root, root)  # reads health files, kills leftovers

    def cli(
        self, *args: str, stdin: str | None = None, timeout: float = 60.0, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(DONEBELL), *args],
            env={**self.env, **env},
            cwd=self.cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def json_lines(self, *args: str) -> list[dict[str, Any]]:
        out = self.cli(*args, "--json")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def setup(self, server: str, *settings: tuple[str, str]) -> None:
        """``config init``, then ``config set server <server>`` and each ``(key, value)``."""
        for args in (
            ("config", "init"),
            ("config", "set", "server", server),
            *(("config", "set", k, v) for k, v in settings),
        ):
            done = self.cli(*args)
            assert done.returncode == 0, (args, done.stdout, done.stderr)

    def start_run(self, **env: str) -> subprocess.Popen[bytes]:
        n = len(self.runs)
        proc = subprocess.Popen(
            [str(DONEBELL), "run"],
            env={**self.env, **env},
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=open(self.harness.log_dir / f"run{n}.out", "wb"),
            stderr=open(self.harness.log_dir / f"run{n}.err", "wb"),
            start_new_session=True,
        )
        self.runs.append(proc)
        self.harness.procs.append(proc)
        return proc

    def stop_run(self) -> None:
        proc = self.runs[-1]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0

    def scanned(self, passes: int = 2) -> bool:
        """The running local scanner has done ``passes`` passes (each visits every hot file)."""
        return self.harness.working_pid("local-scanner") is not None and (
            (self.harness.health("local-scanner").get("passes") or 0) >= passes
        )

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            self.harness.cleanup()
