"""Reply to continue into the open session (issue 28 item 3), the wake pipeline's side.

The real pipeline, the real recorded Claude Code 2.1.332 transcript, and, standing in for the open
Claude session (what the end-to-end test does with the real TUI: tests/e2e/test_wake_live.py), a
real Unix socket listening where the session record says, as Claude's inbox does. What each outcome
is reported as: delivered, held, expired, and resumed when the session is gone.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_receipt
from donebell.shared.wake_ticket import issue, load_key
from donebell.workers.agents.claude import inbox as claude_inbox
from donebell.workers.wake import live_session
from donebell.workers.wake.history import render_wakes
from donebell.workers.wake.pipeline import WakePipeline
from support.claude_fixtures import place, session_of, transcript_lines
from support.delivery_kit import Env

pytestmark = pytest.mark.usefixtures("no_outside_config")

PROMPT = "PHONE: go on"
FAKE_CLAUDE = """#!{python}
import glob, sys
session = sys.argv[sys.argv.index("--resume") + 1]
(path,) = glob.glob("{claude}/projects/*/" + session + ".jsonl")
lines = open(path, "rb").read().splitlines(keepends=True)
first = next(line for line in lines if b'"promptId"' in line)
old = first.split(b'"promptId":"')[1].split(b'"')[0]
with open(path, "ab") as f:
    f.writelines(line.replace(old, b"99999999-2222-4333-8444-555555555555") for line in lines)
"""
SESSION = session_of("simple")


def own_start_ticks() -> str:
    with open("/proc/self/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[19].decode()


class OpenSession:
    """Claude's session record and a listening inbox socket, as an open interactive session has."""

    def __init__(self, claude_dir: Path, *, kind: str = "interactive", listening: bool = True) -> None:
        self.folder = tempfile.mkdtemp(prefix="dbs", dir="/tmp")  # a socket path must stay short
        self.path = os.path.join(self.folder, "s.sock")
        self.lines: list[bytes] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        if listening:
            self.server.listen(4)
            threading.Thread(target=self._accept, daemon=True).start()
        else:
            self.server.close()  # the socket file stays, nothing listens: a crashed session
        record = {"pid": os.getpid(), "sessionId": SESSION, "procStart": own_start_ticks(), "kind": kind}
        record["messagingSocketPath"] = self.path
        self.record_path = claude_dir / "sessions" / f"{os.getpid()}.json"
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        self.record_path.write_text(json.dumps(record))

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(4096):
                    data += chunk
                self.lines.extend(data.splitlines())

    def close(self) -> None:
        self.record_path.unlink(missing_ok=True)
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class World:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.claude = tmp / "claude"
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(self.claude))
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        fake = bin_dir / "claude"  # stands in for `claude -p --resume`: appends the next turn
        fake.write_text(FAKE_CLAUDE.format(python=sys.executable, claude=self.claude))
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
        self.transcript = place(self.claude, "simple")
        self.lines = transcript_lines("simple")
        self.prompt = next(json.loads(x)["promptId"] for x in self.lines if b'"promptId"' in x)
        self.env = Env(
            tmp,
            wake_enabled=True,
            wake_topic="donebell-replies",
            wake_allow_unauthenticated=True,
            wake_actions=[{"label": "Continue", "prompt": PROMPT}],
        )
        state = self.env.state
        sent = {"key": event_key("claude", SESSION, self.prompt), "provider": "claude", "created_at": time.time()}
        state.create(
            "sent", new_receipt({**sent, "session_id": SESSION, "prompt_id": self.prompt}, status="sent", reason="sent")
        )
        self.pipe = WakePipeline(state, self.env.settings(), logging.getLogger("test-wake-live"))

    def tap(self) -> dict[str, Any]:
        body, _ = issue(
            load_key(self.env.state),
            provider="claude",
            conversation_id=SESSION,
            turn_id=self.prompt,
            action=0,
            ttl_seconds=600,
        )
        record = self.pipe.receive({"id": "tap1", "message": body, "time": int(time.time())})
        assert record is not None
        return record

    def next_turn(self) -> None:
        """The session runs the delivered message as its next prompt (the same records, a new promptId)."""
        fresh = [x.replace(self.prompt.encode(), b"11111111-2222-4333-8444-555555555555") for x in self.lines]
        with self.transcript.open("ab") as f:
            f.writelines(fresh)

    def current(self, record: dict[str, Any]) -> dict[str, Any]:
        found = self.pipe.queue.read(record["key"])
        assert found is not None
        return found


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    yield World(tmp_path, monkeypatch)


def _settle(world: World, record: dict[str, Any], until: Any, timeout: float = 5.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        current = world.current(record)
        if until(current) or time.monotonic() > deadline:
            return current
        world.pipe.step(current)
        time.sleep(0.05)


def test_an_open_session_gets_the_reply_in_its_inbox_and_it_is_delivered(world: World) -> None:
    session = OpenSession(world.claude)
    try:
        record = world.tap()
        assert (record["status"], record["via"]) == ("requested", "inbox")
        deadline = time.monotonic() + 5
        while not session.lines and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [json.loads(x) for x in session.lines] == [
            {"type": "user", "message": {"role": "user", "content": PROMPT}}
        ]
        world.next_turn()
        done = _settle(world, record, lambda r: r["status"] == "confirmed")
        assert (done["status"], done["delivery"]) == ("confirmed", "delivered")
        assert render_wakes([done])[0].endswith("[delivered]")  # explain says what happened
    finally:
        session.close()


def test_a_message_the_session_does_not_run_is_held_then_expires_when_it_closes(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_session, "HELD_AFTER_SECONDS", 0.3)
    session = OpenSession(world.claude)
    record = world.tap()
    time.sleep(0.4)
    held = _settle(world, record, lambda r: r.get("delivery") == "held", timeout=3)
    assert (held["status"], held["delivery"]) == ("requested", "held")
    session.close()  # the session ends without running it
    gone = _settle(world, record, lambda r: r["status"] != "requested", timeout=5)
    assert (gone["status"], gone["delivery"]) == ("unconfirmed", "expired")
    assert "closed" in gone["history"][-1]["reason"]


@pytest.mark.parametrize("case", ["no-session", "closed-socket", "other-process", "not-interactive"])
def test_without_an_open_session_the_reply_resumes(world: World, case: str) -> None:
    session = None
    if case == "closed-socket":
        session = OpenSession(world.claude, listening=False)
    elif case in ("other-process", "not-interactive"):
        session = OpenSession(world.claude, kind="interactive" if case == "other-process" else "print")
        if case == "other-process":
            stale = json.loads(session.record_path.read_text())
            session.record_path.write_text(json.dumps({**stale, "procStart": "1"}))  # the pid was reused
    try:
        assert claude_inbox.live_inbox(SESSION) is None or case == "closed-socket"
        record = world.tap()
        settled = _settle(world, record, lambda r: r["status"] == "confirmed", timeout=15)
        assert (settled["status"], settled["via"], settled["delivery"]) == ("confirmed", "exec", "resumed"), settled
    finally:
        if session is not None:
            session.close()
