"""Reply to continue for Copilot CLI (docs/wake.md, "Copilot CLI"): the real wake pipeline and the
recorded session logs. A finished session is continued with ``copilot --resume=<id> -p``; a session
still open in a terminal cannot be reached from outside, so the reply is held, then expires, and
no second session is ever started beside it."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_receipt
from donebell.shared.wake_ticket import issue, load_key
from donebell.workers.agents.copilot import AGENT as copilot
from donebell.workers.agents.copilot.events import read_log
from donebell.workers.kit.thread_view import DaemonError
from donebell.workers.wake import live_session
from donebell.workers.wake.pipeline import WakePipeline
from support.copilot_replay import FIXTURES
from support.delivery_kit import Env

pytestmark = pytest.mark.usefixtures("no_outside_config")

PROMPT = "PHONE: go on"
#: Stands in for ``copilot --resume=<id> -p <prompt>``: records its argv, appends one more task.
FAKE_COPILOT = """#!{python}
import json, sys
with open({calls!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
session = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--resume="))
path = {home!r} + "/session-state/" + session + "/events.jsonl"
with open(path, "a") as f:
    for kind, data in (("session.resume", {{}}), ("user.message", {{"interactionId": "resumed-1", "delivery": "idle"}}),
                       ("assistant.turn_start", {{"turnId": "0"}}), ("assistant.turn_end", {{"turnId": "0"}}),
                       ("session.shutdown", {{}})):
        f.write(json.dumps({{"type": kind, "data": data, "timestamp": "2026-12-06T19:00:00.000Z"}}) + "\\n")
"""


class World:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, *, still_open: bool) -> None:
        self.home = tmp / "copilot"
        monkeypatch.setenv("COPILOT_HOME", str(self.home))
        lines = (FIXTURES / scenario / "events.jsonl").read_text().splitlines(keepends=True)
        if still_open:  # the TUI has not exited: no session.shutdown yet
            lines = [line for line in lines if '"session.shutdown"' not in line]
        self.session = json.loads(lines[0])["data"]["sessionId"]
        self.log = self.home / "session-state" / self.session / "events.jsonl"
        self.log.parent.mkdir(parents=True)
        self.log.write_text("".join(lines))
        self.task = read_log(str(self.log)).tasks[-1].interaction_id
        self.calls = tmp / "calls.jsonl"
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        fake = bin_dir / "copilot"
        fake.write_text(FAKE_COPILOT.format(python=sys.executable, calls=str(self.calls), home=str(self.home)))
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
        self.env = Env(
            tmp,
            wake_enabled=True,
            wake_topic="donebell-replies",
            wake_allow_unauthenticated=True,
            wake_actions=[{"label": "Continue", "prompt": PROMPT}],
            wake_copilot_args=["--allow-all-tools"],
        )
        sent = {"key": event_key("copilot", self.session, self.task), "provider": "copilot", "created_at": time.time()}
        self.env.state.create("sent", new_receipt({**sent, "session_id": self.session}, status="sent", reason="sent"))
        self.pipe = WakePipeline(self.env.state, self.env.settings(), logging.getLogger("test-copilot-wake"))

    def tap(self) -> dict[str, Any]:
        body, _ = issue(
            load_key(self.env.state),
            provider="copilot",
            conversation_id=self.session,
            turn_id=self.task,
            action=0,
            ttl_seconds=600,
        )
        record = self.pipe.receive({"id": "tap1", "message": body, "time": int(time.time())})
        assert record is not None
        return record

    def settle(self, record: dict[str, Any], until: Any, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            current = self.pipe.queue.read(record["key"])
            assert current is not None
            if until(current) or time.monotonic() > deadline:
                return current
            self.pipe.step(current)
            time.sleep(0.05)

    def started(self) -> list[list[str]]:
        return [json.loads(x) for x in self.calls.read_text().splitlines()] if self.calls.exists() else []


@pytest.fixture()
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    yield World(tmp_path, monkeypatch, "print-simple", still_open=False)


def test_a_finished_session_is_resumed_with_the_reply(finished: World) -> None:
    record = finished.settle(finished.tap(), lambda r: r["status"] == "confirmed")
    assert (record["status"], record.get("delivery")) == ("confirmed", "resumed")
    assert finished.started() == [[f"--resume={finished.session}", "--allow-all-tools", "-p", PROMPT]]


def test_a_session_open_in_a_terminal_is_held_then_expires_never_a_second_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_session, "HELD_AFTER_SECONDS", 0.3)
    world = World(tmp_path, monkeypatch, "interactive-simple", still_open=True)
    record = world.tap()
    time.sleep(0.4)
    held = world.settle(record, lambda r: r.get("delivery") == "held", timeout=3)
    assert (held["status"], held["delivery"]) == ("requested", "held")
    with world.log.open("a") as f:  # the user leaves the TUI
        f.write(json.dumps({"type": "session.shutdown", "data": {}, "timestamp": "2026-12-06T19:00:00.000Z"}) + "\n")
    gone = world.settle(record, lambda r: r["status"] != "requested")
    assert (gone["status"], gone["delivery"]) == ("unconfirmed", "expired")
    assert world.started() == []


def test_the_agent_names_the_session_and_refuses_to_post_into_it(finished: World) -> None:
    assert copilot.locate_thread(finished.session) == str(finished.log)
    assert copilot.locate_thread("../etc") is None
    view = copilot.read_thread(str(finished.log))
    assert (view.latest_done, view.active) == (finished.task, False)
    assert copilot.live_inbox(finished.session) is None  # shut down: resume goes
    with pytest.raises(DaemonError) as refused:
        copilot.post_to_inbox("copilot-open-session:x", PROMPT)
    assert not refused.value.unreachable  # never "gone, resume instead": that would be a second session
