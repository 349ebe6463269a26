"""The wake role's test world: a state dir, config and Codex home with one finished thread, and a
stand-in ``codex`` on PATH that appends one turn to the thread's rollout the way ``codex exec resume``
does (task_started, then task_complete) and logs its argv (and its environment, to ``FAKE_CODEX_ENV``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
from donebell.shared.config.model import Settings
from donebell.shared.records import new_receipt
from donebell.shared.statedir import StateDir
from donebell.workers.wake.actions import wake_actions

from support.delivery_kit import outbox_record
from support.ntfy_real import RealNtfy
from support.ntfy_standin import NtfyStandin

THREAD = "019a22be-0000-7000-8000-00000000wake"


FAKE_CODEX = textwrap.dedent(
    """\
    #!{python}
    import glob, json, os, sys, time, uuid
    home = os.environ["CODEX_HOME"]
    with open(os.environ["FAKE_CODEX_LOG"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\\n")
    if os.environ.get("FAKE_CODEX_ENV"):
        with open(os.environ["FAKE_CODEX_ENV"], "w") as f:
            json.dump(dict(os.environ), f)
    thread = sys.argv[-2]
    refuse = os.environ.get("FAKE_CODEX_REFUSE_FILE")
    if refuse and os.path.exists(refuse):
        os.unlink(refuse)
        print("Error: thread " + thread + " already has an active writer", file=sys.stderr)
        sys.exit(1)
    (path,) = glob.glob(os.path.join(home, "sessions", "*", "*", "*", "rollout-*-" + thread + ".jsonl"))
    turn = str(uuid.uuid4())
    def event(kind):
        with open(path, "a") as f:
            f.write(json.dumps({{"type": "event_msg", "payload": {{"type": kind, "turn_id": turn}}}}) + "\\n")
    time.sleep(float(os.environ.get("FAKE_CODEX_BEFORE", "0")))
    event("task_started")
    time.sleep(float(os.environ.get("FAKE_CODEX_DURATION", "0")))
    event("task_complete")
    """
)


class WakeWorld:
    """A state dir, config, Codex home with one finished thread, and a stand-in codex on PATH.

    ``srv`` is the ntfy stand-in or the real server (tests/test_real_ntfy_wake.py)."""

    def __init__(self, tmp: Path, srv: NtfyStandin | RealNtfy) -> None:
        self.tmp, self.srv = tmp, srv
        self.state = StateDir(tmp / "state").ensure()
        self.config = tmp / "config.json"
        self.settings_data: dict[str, Any] = {
            "server": srv.url,
            "topic": "notes-topic",
            "wake_enabled": True,
            "wake_topic": "replies-topic",
            "wake_allow_unauthenticated": True,
            "wake_actions": [{"label": "Continue", "prompt": "continue please"}],
        }
        self.write_config()
        self.codex_home = tmp / "codex"
        day = self.codex_home / "sessions" / "2026" / "12" / "01"
        day.mkdir(parents=True)
        self.rollout = day / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
        self.workdir = tmp / "work"
        self.workdir.mkdir()
        self.append({"type": "session_meta", "payload": {"id": THREAD, "cwd": str(self.workdir)}})
        self.turn("turn-1", done=True)
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        codex = bin_dir / "codex"
        codex.write_text(FAKE_CODEX.format(python=sys.executable))
        codex.chmod(0o755)
        self.calls = tmp / "codex-calls.log"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")},
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "DONEBELL_STATE_DIR": str(self.state.root),
            "DONEBELL_CONFIG": str(self.config),
            "CODEX_HOME": str(self.codex_home),
            "FAKE_CODEX_LOG": str(self.calls),
        }
        self.notified("turn-1")

    def write_config(self) -> None:
        self.config.write_text(json.dumps(self.settings_data))
        self.config.chmod(0o600)

    def append(self, obj: dict[str, Any]) -> None:
        with self.rollout.open("a") as f:
            f.write(json.dumps(obj) + "\n")

    def turn(self, turn: str, *, done: bool) -> None:
        self.append({"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn}})
        if done:
            self.append({"type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn}})

    def notified(self, turn: str) -> dict[str, Any]:
        """The sent receipt delivery leaves for a notified turn; returns the outbox record."""
        rec = outbox_record(thread_id=THREAD, turn_id=turn)
        self.state.create("sent", new_receipt(rec, status="sent", reason="sent"))
        return rec

    def buttons(self, turn: str = "turn-1", **settings: Any) -> list[dict[str, Any]]:
        s = Settings(**{**self.settings_data, **settings})
        return wake_actions(outbox_record(thread_id=THREAD, turn_id=turn), s, state=self.state)

    def tap(self, button: dict[str, Any], body: str | None = None) -> None:
        """Exactly the request the ntfy app makes for an `http` action."""
        reply = httpx.request(
            button.get("method", "POST"),
            button["url"],
            headers=button.get("headers") or {},
            content=(button["body"] if body is None else body).encode(),
            timeout=5,
        )
        assert reply.status_code == 200, reply.text

    def worker(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "wake", *args]
        return subprocess.run(cmd, env={**self.env, **env}, capture_output=True, text=True, timeout=60, check=False)

    def start(self, **env: str) -> subprocess.Popen[str]:
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "wake"]
        return subprocess.Popen(cmd, env={**self.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def records(self) -> list[dict[str, Any]]:
        return list(self.state.wake_queue().records())

    def codex_calls(self) -> list[list[str]]:
        if not self.calls.exists():
            return []
        return [json.loads(line) for line in self.calls.read_text().splitlines()]

    def rollout_turns(self) -> list[str]:
        """Started turns; a line the stand-in codex is still writing is not one yet."""
        turns = []
        for line in self.rollout.read_text().splitlines():
            try:
                payload = json.loads(line)["payload"]
            except ValueError:
                continue
            if payload.get("type") == "task_started":
                turns.append(payload["turn_id"])
        return turns

    def log(self) -> list[dict[str, Any]]:
        path = self.state.root / "notify.log"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def statuses(world: WakeWorld) -> list[tuple[str, str | None]]:
    return [(r["status"], r.get("reason")) for r in world.records()]
