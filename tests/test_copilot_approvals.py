"""Allow / Deny from the phone for Copilot CLI: the real ``donebell hook copilot permissionRequest``
waits for the answer and prints it in the one shape Copilot obeys (docs/approvals.md)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.process.liveness import current_process_identity
from donebell.shared.statedir import StateDir, now
from support.copilot_replay import Replay
from test_approvals import APPROVALS


@pytest.fixture()
def loader() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for the TUI's loader process (``COPILOT_LOADER_PID``): a plain command line."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--banner"])
    yield proc
    proc.kill()
    proc.wait()


def asking(tmp_path: Path, loader_pid: int) -> tuple[Replay, subprocess.Popen[bytes]]:
    run = Replay(
        tmp_path, "interactive-approval-dialog", "http://127.0.0.1:9", f"t-{secrets.token_hex(4)}", **APPROVALS
    )
    state = StateDir(run.state_dir).ensure()
    beat = {"role": "wake", **current_process_identity(), "state": "ready", "heartbeat_seconds": 10.0}
    state.write_health("wake", {**beat, "heartbeat_at": now()})
    call = next(c for c in run.calls if c["event"] == "permissionRequest")
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(call["payload"]), encoding="utf-8")
    with payload.open("rb") as stdin:
        proc = subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "hook", "copilot", "permissionRequest"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            env=run.env(COPILOT_CLI="1", COPILOT_LOADER_PID=str(loader_pid)),
        )
    return run, proc


def request_of(run: Replay) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = run.folder("outbox")
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no needs-you record")


@pytest.mark.parametrize(
    ("decision", "printed"),
    [
        ("allow", {"behavior": "allow"}),
        ("deny", {"behavior": "deny", "message": "Denied from the phone (donebell)."}),
    ],
)
def test_the_phones_answer_in_copilots_shape(
    tmp_path: Path, loader: subprocess.Popen[bytes], decision: str, printed: dict[str, str]
) -> None:
    run, proc = asking(tmp_path, loader.pid)
    request = request_of(run)
    assert request["notice"] == "needs-you" and request["approval_until"] > now()
    StateDir(run.state_dir).answer_box().answer(request["key"], decision, message_id="m1")
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert json.loads(out) == printed


def test_no_answer_prints_nothing_so_copilots_dialog_decides(tmp_path: Path, loader: subprocess.Popen[bytes]) -> None:
    (tmp_path / "short").mkdir()
    run, proc = asking(tmp_path / "short", loader.pid)
    request_of(run)
    config = json.loads(run.config.read_text())
    assert config["approval_wait_seconds"] == 8
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out == b""


def test_a_cli_that_allows_every_tool_is_never_held(tmp_path: Path) -> None:
    allowing = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--allow-all-tools"])
    try:
        run, proc = asking(tmp_path, allowing.pid)
        out, _ = proc.communicate(timeout=20)
    finally:
        allowing.kill()
        allowing.wait()
    assert out == b"" and run.folder("outbox") == []


def test_without_the_wake_role_the_hook_leaves_the_push_to_the_dialog(tmp_path: Path) -> None:
    run = Replay(tmp_path, "interactive-approval-dialog", "http://127.0.0.1:9", "t-nowake", **APPROVALS)
    call = next(c for c in run.calls if c["event"] == "permissionRequest")
    done = run.hook(call)  # no wake role health file: no tap could arrive
    assert done.stdout == b"" and run.folder("outbox") == []
