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


def asking(tmp_path: Path, loader_pid: int, **config: Any) -> tuple[Replay, subprocess.Popen[bytes]]:
    run = Replay(
        tmp_path,
        "interactive-approval-dialog",
        "http://127.0.0.1:9",
        f"t-{secrets.token_hex(4)}",
        **{**APPROVALS, **config},
    )
    state = StateDir(run.state_dir).ensure()
    beat = {"role": "wake", **current_process_identity(), "state": "ready", "heartbeat_seconds": 10.0}
    beat["subscription"] = "subscribed"  # the hook waits only while the role can receive a tap
    state.write_health("wake", {**beat, "heartbeat_at": now()})
    return run, ask(run, loader_pid, permission_payload(run))


def permission_payload(run: Replay, command: str | None = None) -> dict[str, Any]:
    """The recorded ``permissionRequest`` payload, for another shell command when ``command`` is given."""
    payload: dict[str, Any] = next(c for c in run.calls if c["event"] == "permissionRequest")["payload"]
    if command is not None:
        payload = {**payload, "toolInput": {"command": command}}
    return payload


def ask(run: Replay, loader_pid: int, payload: dict[str, Any]) -> subprocess.Popen[bytes]:
    """The real ``donebell hook copilot permissionRequest`` for ``payload``, started (it waits for the phone)."""
    path = run.tmp / f"payload-{secrets.token_hex(4)}.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    with path.open("rb") as stdin:
        return subprocess.Popen(
            [sys.executable, "-m", "donebell.supervisor.cli", "hook", "copilot", "permissionRequest"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            env=run.env(COPILOT_CLI="1", COPILOT_LOADER_PID=str(loader_pid)),
        )


def request_of(run: Replay, count: int = 1) -> dict[str, Any]:
    """The newest of the first ``count`` needs-you records, once there are that many."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = sorted(run.folder("outbox"), key=lambda r: r["created_at"])
        if len(found) >= count:
            return found[count - 1]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} needs-you records")


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
    StateDir(run.state_dir).answer_box().answer(
        request["key"], decision, digest=request["tool_digest"], message_id="m1"
    )
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


def test_one_tap_answers_one_exact_call(tmp_path: Path, loader: subprocess.Popen[bytes]) -> None:
    """Two calls wait at once: each has its own key and digest, and a tap on one answers only it."""
    run, first = asking(tmp_path, loader.pid)
    asked_first = request_of(run)
    second = ask(run, loader.pid, permission_payload(run, "rm -rf build && echo other-call"))
    asked_second = request_of(run, 2)
    assert asked_first["key"] != asked_second["key"]
    assert asked_first["tool_digest"] != asked_second["tool_digest"]
    box = StateDir(run.state_dir).answer_box()
    box.answer(asked_first["key"], "allow", digest=asked_first["tool_digest"], message_id="m1")
    out, _ = first.communicate(timeout=20)
    assert json.loads(out) == {"behavior": "allow"}
    time.sleep(1.0)
    assert second.poll() is None  # the other call still waits for its own tap
    box.answer(asked_second["key"], "deny", digest=asked_second["tool_digest"], message_id="m2")
    out, _ = second.communicate(timeout=20)
    assert json.loads(out)["behavior"] == "deny"


def test_the_same_call_asked_again_after_a_tap_is_a_new_request(
    tmp_path: Path, loader: subprocess.Popen[bytes]
) -> None:
    """The tap ended the first ask: the same command asked again waits for a tap of its own."""
    run, first = asking(tmp_path, loader.pid)
    asked = request_of(run)
    StateDir(run.state_dir).answer_box().answer(asked["key"], "allow", digest=asked["tool_digest"], message_id="m1")
    assert json.loads(first.communicate(timeout=20)[0]) == {"behavior": "allow"}
    again = ask(run, loader.pid, permission_payload(run))
    asked_again = request_of(run, 2)
    assert asked_again["key"] != asked["key"] and asked_again["tool_digest"] == asked["tool_digest"]
    time.sleep(1.0)
    assert again.poll() is None  # the earlier tap does not answer it
    StateDir(run.state_dir).answer_box().answer(
        asked_again["key"], "deny", digest=asked_again["tool_digest"], message_id="m2"
    )
    assert json.loads(again.communicate(timeout=20)[0])["behavior"] == "deny"


def _event(kind: str, at_ms: float, **data: Any) -> bytes:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at_ms / 1000)) + f".{int(at_ms % 1000):03d}Z"
    return json.dumps({"type": kind, "data": data, "id": secrets.token_hex(4), "timestamp": stamp}).encode() + b"\n"


def _shell(request_id: str, command: str) -> dict[str, Any]:
    return {"requestId": request_id, "permissionRequest": {"kind": "shell", "fullCommandText": command}}


def test_only_the_requests_own_call_answers_it_in_the_log() -> None:
    """One turn asks for two calls: the other call's ``permission.completed`` never answers this one."""
    from donebell.workers.agents.copilot import AGENT as copilot
    from donebell.workers.kit.needs_you import tool_digest

    asked_ms = 1796582715453.0
    record = {
        "promoted_at": asked_ms / 1000,
        "tool_digest": tool_digest({"tool_name": "bash", "tool_input": {"command": "touch marker"}}),
    }
    both = _event("permission.requested", asked_ms + 5, **_shell("r-mine", "touch marker"))
    both += _event("permission.requested", asked_ms + 6, **_shell("r-other", "ls"))
    other_done = _event("permission.completed", asked_ms + 900, requestId="r-other", result={"kind": "approved"})
    assert copilot.answered_in_file(record, b"", both + other_done) is None
    queued = _event("user.message", asked_ms + 950, content="a Stop hook's reason", delivery="queued")
    assert copilot.answered_in_file(record, b"", both + other_done + queued) is None
    mine_done = _event("permission.completed", asked_ms + 1000, requestId="r-mine", result={"kind": "denied"})
    assert copilot.answered_in_file(record, both, other_done + mine_done) is not None
    new_prompt = _event("user.message", asked_ms + 2000, content="next", delivery="idle")
    assert copilot.answered_in_file(record, b"", both + other_done + new_prompt) == "a new prompt in the session"
    earlier = _event("permission.completed", asked_ms - 5000, requestId="r-mine", result={"kind": "approved"})
    assert copilot.answered_in_file(record, both + earlier, b"") is None  # before the request: another ask


def test_the_tui_waits_only_the_interactive_wait(tmp_path: Path, loader: subprocess.Popen[bytes]) -> None:
    """Copilot's dialog opens only once the hook returned: the hook holds it for the short wait."""
    run, proc = asking(tmp_path, loader.pid, approval_wait_seconds=120, approval_wait_interactive_seconds=6)
    request = request_of(run)
    assert request["approval_until"] - request["created_at"] < 7
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out == b""
