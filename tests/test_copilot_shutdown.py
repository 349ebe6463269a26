"""A Copilot session log that ends with ``session.shutdown`` needs no quiet window: the CLI wrote
it as it exited, and nothing more comes (docs/gate.md, "Copilot decision order", step 9). A
session still open (the TUI before /exit) waits the window as before."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from donebell.workers.agents.copilot.events import iso_ms
from support.copilot_replay import Replay
from support.ntfy_standin import NtfyStandin

#: Far longer than the test: a notification now came without waiting it out.
GRACE = 60.0


def played(tmp_path: Path, srv: NtfyStandin, scenario: str) -> tuple[Replay, str]:
    topic = f"copilot-{secrets.token_hex(4)}"
    run = Replay(tmp_path, scenario, srv.url, topic, idle_grace_seconds=GRACE)
    run.play()
    return run, topic


def test_a_print_run_is_notified_once_copilot_exited(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = played(tmp_path, srv, "print-simple")
    run.write_log()  # every record, session.shutdown last
    assert run.deliver().returncode == 0
    assert len(srv.messages(topic)) == 1
    assert run.folder("pending") == []


def test_a_session_still_open_waits_the_quiet_window(tmp_path: Path, srv: NtfyStandin) -> None:
    run, topic = played(tmp_path, srv, "interactive-simple")
    shutdown = next(json.loads(r) for r in run.records if '"session.shutdown"' in r)
    run.write_log((iso_ms(shutdown["timestamp"]) or 0) - 1)  # the TUI still open: no shutdown yet
    assert run.deliver().returncode == 0
    assert srv.messages(topic) == []
    [task] = run.folder("pending")
    assert task["probe"]["history"][-1]["reason"] == "quiet-window", task["probe"]
