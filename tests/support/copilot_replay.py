"""Replays a recorded Copilot CLI 1.0.102 run (``tests/fixtures/copilot/<scenario>/``) through the
real ``donebell hook copilot <event>`` processes, the real gate and delivery role, into the ntfy
stand-in. ``@HOME@`` / ``@PROJECT@`` in the fixtures become the test's own folders.

The session log lags the hooks as it does in the real CLI: before each hook runs, only the records
logged before that hook's own ``timestamp`` are in ``events.jsonl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from donebell.workers.agents.copilot.events import iso_ms

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "copilot"


class Replay:
    """One scenario, one temporary home and state directory, one stand-in topic."""

    def __init__(self, tmp: Path, scenario: str, server: str, topic: str, **config: Any) -> None:
        self.tmp, self.scenario = tmp, FIXTURES / scenario
        self.home, self.project = tmp / "home", tmp / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.state_dir, self.config = tmp / "state", tmp / "config.json"
        settings = {"server": server, "topic": topic, "idle_grace_seconds": 0.2, "idle_probe_grace_seconds": 3.0}
        self.config.write_text(json.dumps({**settings, **config}), encoding="utf-8")
        self.config.chmod(0o600)
        self.calls = [json.loads(self._local(line)) for line in self._lines("hooks.jsonl")]
        self.records = [self._local(line) for line in self._lines("events.jsonl")]
        self.played = 0
        session = next(c["payload"]["sessionId"] for c in self.calls if "sessionId" in c["payload"])
        self.log = self.home / ".copilot" / "session-state" / session / "events.jsonl"

    def _lines(self, name: str) -> list[str]:
        return [line for line in (self.scenario / name).read_text(encoding="utf-8").splitlines() if line.strip()]

    def _local(self, line: str) -> str:
        return line.replace("@HOME@", str(self.home)).replace("@PROJECT@", str(self.project))

    def env(self, **extra: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DONEBELL_", "COPILOT_", "CLAUDE_"))}
        return {
            **base,
            "HOME": str(self.home),
            "COPILOT_HOME": str(self.home / ".copilot"),
            "DONEBELL_STATE_DIR": str(self.state_dir),
            "DONEBELL_CONFIG": str(self.config),
            "DONEBELL_KICK_COMMAND": "off",
            **extra,
        }

    def write_log(self, until_ms: float | None = None) -> None:
        """``events.jsonl`` as the CLI had flushed it: the records up to ``until_ms`` (all: None)."""
        lines = [r for r in self.records if until_ms is None or (iso_ms(json.loads(r)["timestamp"]) or 0) <= until_ms]
        if not lines:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    def hook(self, call: dict[str, Any], argv: list[str] | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run the real hook command for one recorded call, with its recorded environment."""
        command = argv or ["hook", "copilot", call["event"]]
        return subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *command],
            input=json.dumps(call["payload"]).encode(),
            env=self.env(**call.get("env", {})),
            capture_output=True,
            timeout=60,
            check=True,
            cwd=self.project,
        )

    def play(self, count: int | None = None) -> list[subprocess.CompletedProcess[bytes]]:
        """Run the next ``count`` hook calls (all the rest: None), the log lagging each one."""
        end = len(self.calls) if count is None else self.played + count
        done = []
        for call in self.calls[self.played : end]:
            stamp = call["payload"].get("timestamp")
            self.write_log(float(stamp) - 1 if isinstance(stamp, (int, float)) else iso_ms(stamp))
            done.append(self.hook(call))
        self.played = end
        return done

    def play_until(self, event: str, nth: int = 1) -> None:
        """Play up to and including the ``nth`` call of ``event`` still to come."""
        seen = 0
        for index in range(self.played, len(self.calls)):
            if self.calls[index]["event"] == event:
                seen += 1
                if seen == nth:
                    self.play(index + 1 - self.played)
                    return
        raise AssertionError(f"no {event} #{nth} left in {self.scenario.name}")

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """``donebell <args>`` as its own process, in this replay's environment."""
        return subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=check,
        )

    def deliver(self, *, until_idle: bool = True) -> subprocess.CompletedProcess[str]:
        """The delivery role (gate + sender), as its own process: ``--until-idle`` or one pass."""
        return self.cli("worker", "delivery", "--until-idle" if until_idle else "--once")

    def scan(self) -> subprocess.CompletedProcess[str]:
        """One local-scanner pass, as its own process (every agent's share: Copilot's log watcher)."""
        return self.cli("worker", "local-scanner", "--once")

    def folder(self, name: str) -> list[dict[str, Any]]:
        path = self.state_dir / name
        return [json.loads(p.read_bytes()) for p in sorted(path.glob("*.json"))] if path.is_dir() else []
