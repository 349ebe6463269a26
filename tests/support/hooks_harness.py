"""Test harness for ``donebell hook ...``: real subprocesses in a private state dir, config and homes.

Payloads are the real ones recorded from Codex 0.171.0 and Claude Code 2.1.197
(``tests/fixtures/hooks/``); paths inside them are
rewritten to the test's temporary Codex/Claude homes.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from donebell.shared.statedir import StateDir

from support.codex_sqlite import create_schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
ROLLOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "codex" / "rollouts"
#: Byte-code cache for the hook subprocesses of this test run (a real install has .pyc files;
#: without them every hook process recompiles donebell, which only makes the suite slow).
PYCACHE = tempfile.mkdtemp(prefix="donebell-hook-pyc-")
atexit.register(shutil.rmtree, PYCACHE, True)
DAY = ("2026", "11", "30")  # the day the fixtures were recorded (rollout folders)

#: Real rollout file names, by fixture (as Codex named them; the thread id is the suffix).
ROLLOUT_NAMES = {
    "simple-exec": "rollout-2026-11-30T09-56-38-01a22be2-8ff4-7060-90c7-45d2cf0697b5.jsonl",
    "tool-exec-command": "rollout-2026-11-30T09-56-45-01a22be2-acdf-70b2-a78f-57049f1b5bda.jsonl",
    "subagent-parent": "rollout-2026-11-30T09-57-08-01a22be3-06d2-7621-bea7-5b13dfa14a99.jsonl",
    "subagent-child": "rollout-2026-11-30T09-57-09-01a22be3-099d-72b3-b400-cbf3b3fc981c.jsonl",
}
STOP_ROLLOUT = {"simple": "simple-exec", "tool": "tool-exec-command", "subagent": "subagent-parent"}


def codex_hook_payload(name: str) -> dict[str, Any]:
    """The Codex hook stdin of ``hook-payloads/<name>.json`` (e.g. ``simple--Stop``)."""
    data: dict[str, Any] = json.loads((FIXTURES / "codex" / "hook-payloads" / f"{name}.json").read_text())["stdin"]
    return data


def notify_payload(name: str) -> dict[str, Any]:
    """The legacy notify payload of ``notify-payloads/<name>.json``."""
    data: dict[str, Any] = json.loads((FIXTURES / "codex" / "notify-payloads" / f"{name}.json").read_text())["payload"]
    return data


def claude_events(scenario: str) -> list[dict[str, Any]]:
    """The Claude hook payloads of one recorded scenario, in the order Claude sent them."""
    lines = (FIXTURES / "claude" / scenario / "hooks.jsonl").read_text().splitlines()
    return [json.loads(line)["payload"] for line in lines if line.strip()]


def claude_event(scenario: str, event: str, index: int = 0) -> dict[str, Any]:
    return [p for p in claude_events(scenario) if p["hook_event_name"] == event][index]


#: A stand-in for a program a hook starts (a chained notify program, the kicked worker): writes
#: its argv, pid, session, stdio targets, cwd and DONEBELL_CHAINED to the JSON file named by its first
#: argument, then lingers ``RECORDER_LINGER`` seconds like a worker would and exits ``RECORDER_EXIT``.
RECORDER = """
import json, os, sys, time
out = sys.argv[1]
def target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
info = {
    "argv": sys.argv[2:],
    "pid": os.getpid(),
    "sid": os.getsid(0),
    "stdio": [target(fd) for fd in (0, 1, 2)],
    "chained": os.environ.get("DONEBELL_CHAINED"),
    "cwd": os.getcwd(),
}
with open(out + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(out + ".tmp", out)
time.sleep(float(os.environ.get("RECORDER_LINGER", "0")))
sys.exit(int(os.environ.get("RECORDER_EXIT", "0")))
"""


def wait_for_json(path: Path, seconds: float = 20) -> dict[str, Any]:
    """The JSON object in ``path`` once it appears (a recorder's report)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            data: dict[str, Any] = json.loads(path.read_text())
            return data
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def rollout_lines(fixture: str) -> list[bytes]:
    return (ROLLOUTS / f"{fixture}.jsonl").read_bytes().splitlines(keepends=True)


class HookEnv:
    """A private DONEBELL_STATE_DIR / DONEBELL_CONFIG / CODEX_HOME / CLAUDE_CONFIG_DIR."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state_dir = root / "state"
        self.config = root / "config.json"
        self.codex_home = root / "codex"
        self.claude_dir = root / "claude"
        self.codex_home.mkdir(parents=True)
        self.claude_dir.mkdir(parents=True)
        self.extra_env: dict[str, str] = {"DONEBELL_KICK_COMMAND": "off"}

    def recorder_argv(self, report: str) -> list[str]:
        """argv of a :data:`RECORDER` (written on first use) reporting to ``root/report``."""
        script = self.root / "recorder.py"
        if not script.exists():
            script.write_text(RECORDER)
        return [sys.executable, str(script), str(self.root / report)]

    # environment ---------------------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_") and k != "CODEX_SQLITE_HOME"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            {
                "PYTHONPYCACHEPREFIX": PYCACHE,
                "DONEBELL_STATE_DIR": str(self.state_dir),
                "DONEBELL_CONFIG": str(self.config),
                "CODEX_HOME": str(self.codex_home),
                "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            }
        )
        env.update(self.extra_env)
        env.update(extra)
        return env

    def write_config(self, **values: Any) -> None:
        self.config.write_text(json.dumps(values))

    # running -------------------------------------------------------------------------------

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "donebell.supervisor.cli", "hook", *args]

    def run(
        self, *args: str, stdin: bytes | dict[str, Any] = b"", **extra_env: str
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``donebell hook <args>`` with ``stdin`` (bytes, or a dict sent as JSON)."""
        return self._run(args, stdin, extra_env)

    def _run(
        self, args: tuple[str, ...], stdin: bytes | dict[str, Any], extra_env: dict[str, str]
    ) -> subprocess.CompletedProcess[bytes]:
        data = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
        return subprocess.run(self.argv(*args), input=data, capture_output=True, timeout=60, env=self.env(**extra_env))

    def stop(self, payload: dict[str, Any], **extra_env: str) -> subprocess.CompletedProcess[bytes]:
        result = self._run(("codex-stop",), payload, extra_env)
        assert result.returncode == 0 and result.stdout == b"{}\n", result
        return result

    def notify(self, payload: dict[str, Any] | str, **extra_env: str) -> subprocess.CompletedProcess[bytes]:
        arg = payload if isinstance(payload, str) else json.dumps(payload)
        result = self._run(("codex-notify", arg), b"", extra_env)
        assert result.returncode == 0 and result.stdout == b"", result
        return result

    def claude(self, payload: dict[str, Any], **extra_env: str) -> subprocess.CompletedProcess[bytes]:
        result = self._run(("claude",), payload, extra_env)
        assert result.returncode == 0 and result.stdout == b"", result
        return result

    # Codex homes ---------------------------------------------------------------------------

    def install_rollout(self, fixture: str, *, upto: str | None = None) -> Path:
        """Put a real rollout where Codex keeps it; ``upto`` cuts it before that payload type."""
        folder = self.codex_home.joinpath("sessions", *DAY)
        folder.mkdir(parents=True, exist_ok=True)
        lines = rollout_lines(fixture)
        if upto is not None:
            cut = next(i for i, line in enumerate(lines) if f'"type":"{upto}"'.encode() in line)
            lines = lines[:cut]
        path = folder / ROLLOUT_NAMES[fixture]
        path.write_bytes(b"".join(lines))
        return path

    def stop_payload(self, scenario: str, **changes: Any) -> dict[str, Any]:
        """A real Codex Stop payload whose transcript_path points into this CODEX_HOME."""
        payload = codex_hook_payload(f"{scenario}--Stop")
        name = Path(payload["transcript_path"]).name
        payload["transcript_path"] = str(self.codex_home.joinpath("sessions", *DAY, name))
        payload.update(changes)
        return payload

    def install_threads_db(self) -> Path:
        """``state_5.sqlite`` with the real schema and the recorded subagent-run thread rows."""
        path = self.codex_home / "state_5.sqlite"
        conn = sqlite3.connect(path)
        create_schema(conn)
        rows = json.loads((FIXTURES / "codex" / "sqlite" / "subagent--state_5.rows.json").read_text())["threads"]
        for row in rows:
            names = ",".join(row)
            conn.execute(f"INSERT INTO threads ({names}) VALUES ({','.join('?' * len(row))})", tuple(row.values()))
        conn.commit()
        conn.close()
        return path

    # Claude transcripts --------------------------------------------------------------------

    def claude_transcript(self, session_id: str, lines: list[bytes] | None = None) -> Path:
        """A transcript file for ``session_id`` (the real print-tool transcript by default)."""
        folder = self.claude_dir / "projects" / "-test-project"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session_id}.jsonl"
        if lines is None:
            shutil.copy(FIXTURES / "claude" / "print-tool" / "bcd90786-c5dc-4556-ab76-41b75d464f9d.jsonl", path)
        else:
            path.write_bytes(b"".join(lines))
        return path

    # reading state -------------------------------------------------------------------------

    @property
    def state(self) -> StateDir:
        return StateDir(self.state_dir)

    def records(self, folder: str) -> list[dict[str, Any]]:
        state = self.state
        out = []
        for key in state.keys(folder):
            record = state.read(folder, key)
            if record is not None:
                out.append(record)
        return out

    def only(self, folder: str) -> dict[str, Any]:
        """The single record in ``folder`` (asserts there is exactly one)."""
        found = self.records(folder)
        assert len(found) == 1, f"{folder}: {len(found)} records"
        return found[0]

    def counts(self) -> dict[str, int]:
        return {f: len(self.records(f)) for f in ("pending", "outbox", "sent", "suppressed", "dead")}

    def log(self) -> list[dict[str, Any]]:
        path = self.state_dir / "notify.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def log_messages(self) -> str:
        return "\n".join(f"{r.get('level')}: {r.get('msg')} {r.get('reason', '')}" for r in self.log())
