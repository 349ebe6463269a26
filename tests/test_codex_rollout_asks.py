"""A Codex approval dialog read from the rollout (issue 28 item 1, no hook needed).

The rollout is the real Codex 0.171 TUI's (``-a on-request``, an escalated call, the dialog left
open: tests/fixtures/approvals/codex/tui-on-request-waiting.rollout.jsonl), fed to the real scan
engine; the thread is "open" because a real process holds its writer lock, as the TUI does; the
hook that records the same request first is the real ``donebell hook codex-permission``. The
end-to-end test with the real TUI is tests/e2e/test_needs_you_e2e.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import StateDir, now
from donebell.workers.agents.codex import rollout_asks
from donebell.workers.kit.needs_you import create_unless_known
from support.hooks_harness import HookEnv
from support.scanner_kit import engine, today_folder

pytestmark = pytest.mark.usefixtures("no_outside_config")

FIXTURE = Path(__file__).parent / "fixtures" / "approvals" / "codex" / "tui-on-request-waiting.rollout.jsonl"
LINES = FIXTURE.read_bytes().splitlines(keepends=True)
META = json.loads(LINES[0])["payload"]
THREAD, TURN = META["id"], json.loads(LINES[1])["payload"]["turn_id"]
CALL = next(i for i, line in enumerate(LINES) if b'"function_call"' in line)
COMMAND = "touch approval-marker.txt && echo approval-ran"
WHY = "Create the approval marker file"
HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)"


class Codex:
    """A Codex home with the TUI's rollout, and the thread held open (or not) by a real process."""

    def __init__(self, root: Path) -> None:
        self.hooks = HookEnv(root)
        self.hooks.write_config(topic="t", server="http://127.0.0.1:9")
        self.state = StateDir(self.hooks.state_dir).ensure()
        self.home = self.hooks.codex_home
        self.rollout = today_folder(self.home) / f"rollout-2026-12-05T11-50-04-{THREAD}.jsonl"
        self.lock = self.home / "thread-writer-locks" / f"{THREAD}.lock"
        self.lock.parent.mkdir()
        self.lock.touch()
        self.holder: subprocess.Popen[str] | None = None
        self.engine = engine(self.state, self.home)

    def write(self, lines: list[bytes]) -> None:
        with open(self.rollout, "ab") as f:
            f.write(b"".join(lines))

    def open_thread(self) -> None:
        self.holder = subprocess.Popen([sys.executable, "-c", HOLD, str(self.lock)], stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout is not None and self.holder.stdout.readline().strip() == "held"

    def close(self) -> None:
        if self.holder is not None:
            self.holder.kill()
            self.holder.wait()

    def scan(self) -> None:
        self.engine.scan(full=True)

    def needs(self) -> list[dict[str, Any]]:
        found = []
        for folder in ("outbox", "pending"):
            for key in self.state.keys(folder):
                record = self.state.read(folder, key)
                if record is not None and record.get("notice") == "needs-you":
                    found.append(record)
        return found


def opened(world: Codex, monkeypatch: pytest.MonkeyPatch) -> Iterator[Codex]:
    """A world for a fixture: no quiet window, the thread's holder stopped after the test."""
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 0.0)
    yield world
    world.close()


@pytest.fixture()
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Codex]:
    yield from opened(Codex(tmp_path), monkeypatch)


def hook_payload(codex: Codex, command: str = COMMAND) -> dict[str, Any]:
    """Codex's PermissionRequest for the recorded TUI's call (``command`` in its place)."""
    return {
        "session_id": THREAD,
        "turn_id": TURN,
        "transcript_path": str(codex.rollout),
        "cwd": META["cwd"],
        "hook_event_name": "PermissionRequest",
        "model": "gpt-fake",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": WHY},
    }


def test_an_open_dialog_is_one_needs_you_record(codex: Codex) -> None:
    codex.open_thread()
    codex.write(LINES)
    codex.scan()
    [record] = codex.needs()
    assert (record["provider"], record["thread_id"], record["turn_id"]) == ("codex", THREAD, TURN)
    assert (record["source"], record["wants"], record["tool"], record["summary"]) == (
        "codex-rollout",
        "permission",
        "Bash",
        WHY,
    )
    assert record["request_text"] is None  # the command only with include_message
    assert record["answer_path"] == str(codex.rollout) and record["answer_offset"] == codex.rollout.stat().st_size
    codex.scan()
    codex.engine = engine(codex.state, codex.home)  # a restarted scanner
    codex.scan()
    assert len(codex.needs()) == 1  # once, across passes and restarts


def test_the_hook_first_means_no_second_record(codex: Codex) -> None:
    """The real PermissionRequest hook ran while the rollout ended at the call (its size is in the
    hook's key): the scanner finds that record and writes none."""
    codex.open_thread()
    codex.write(LINES[: CALL + 1])
    result = codex.hooks.run("codex-permission", stdin=hook_payload(codex))
    assert (result.returncode, result.stdout) == (0, b""), result
    [hooks] = codex.needs()
    assert hooks["source"] == "codex-permissionrequest"
    codex.write(LINES[CALL + 1 :])
    codex.scan()
    assert [r["key"] for r in codex.needs()] == [hooks["key"]]


def test_a_thread_nobody_has_open_waits_for_nobody(codex: Codex) -> None:
    """The same rollout with no process holding the thread (Codex exited, or an old rollout met
    again): no record, and none later either."""
    codex.write(LINES)
    codex.scan()
    codex.open_thread()
    codex.scan()
    assert codex.needs() == []


def test_a_call_that_got_its_output_is_no_request(codex: Codex) -> None:
    """Allowed by a rule (or answered) before the quiet window ended: its output follows."""
    codex.open_thread()
    output = {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_fake_3", "output": "ok"},
    }
    codex.write([*LINES, json.dumps(output).encode() + b"\n"])
    codex.scan()
    assert codex.needs() == []


def test_a_turn_an_automatic_reviewer_answers_is_no_request(codex: Codex) -> None:
    """``exec --approve-for-me`` (approvals_reviewer ``auto_review``): a model answers, not you."""
    codex.open_thread()
    codex.write([line.replace(b'"approvals_reviewer":"user"', b'"approvals_reviewer":"auto_review"') for line in LINES])
    assert b"auto_review" in codex.rollout.read_bytes()
    codex.scan()
    assert codex.needs() == []


def test_not_before_the_rollout_stayed_quiet(codex: Codex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 30.0)
    codex.open_thread()
    codex.write(LINES)
    codex.scan()
    assert codex.needs() == []
    due = codex.engine.tailer.next_ask_at
    assert due is not None and 29.0 < due - now() <= 30.0  # the role's next pass is then
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 0.0)
    codex.scan()  # the file did not change: the due call is still found
    assert len(codex.needs()) == 1


def test_the_remote_scanner_reads_no_dialogs(codex: Codex) -> None:
    """Another machine's rollouts: a push there could not be answered, and the thread lock is not ours."""
    codex.open_thread()
    codex.engine = engine(codex.state, codex.home, source="remote-scanner", cursor_folder="watch/remote/x")
    codex.write(LINES)
    codex.scan()
    assert codex.needs() == []


def test_a_failed_write_is_tried_again_not_a_crash(codex: Codex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk when the record is written (injected: the state directory cannot be filled
    here): one warning, the scan goes on, and the next pass records it once."""
    real = create_unless_known
    calls: list[str] = []

    def full_disk_once(state: StateDir, record: dict[str, Any]) -> str | None:
        calls.append(record["key"])
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return real(state, record)

    monkeypatch.setattr(rollout_asks, "create_unless_known", full_disk_once)
    codex.open_thread()
    codex.write(LINES)
    codex.scan()
    assert codex.needs() == []
    log = [json.loads(line) for line in (codex.hooks.state_dir / "notify.log").read_text().splitlines()]
    warnings = [e for e in log if e.get("msg") == "needs-you from the rollout not recorded"]
    assert len(warnings) == 1 and "No space left" in warnings[0]["error"], warnings
    codex.scan()
    codex.scan()
    assert len(codex.needs()) == 1 and len(calls) == 2


BEARER = "tk_planted0secret0bearer0value0123"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY"


def _waiting_command(command: str) -> list[bytes]:
    """The recorded rollout with the waiting call's command replaced (its arguments re-encoded)."""
    record = json.loads(LINES[CALL])
    args = json.loads(record["payload"]["arguments"])
    record["payload"]["arguments"] = json.dumps({**args, "cmd": command})
    return [*LINES[:CALL], json.dumps(record).encode() + b"\n", *LINES[CALL + 1 :]]


def test_no_secret_of_a_waiting_command_is_kept_at_rest(codex: Codex, monkeypatch: pytest.MonkeyPatch) -> None:
    """With include_message off, the scanner's cursor kept the waiting command in clear (issue 34
    item 7): every file of the state directory is searched for the planted secrets, while the call
    waits (the cursor holds its state) and after its record was written."""
    codex.open_thread()
    command = f"curl -H 'Authorization: Bearer {BEARER}' https://x.example && AWS_SECRET_ACCESS_KEY={AWS} aws s3 ls"
    codex.engine.scan(full=True)  # the cursor exists before the call is read
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 3600.0)
    codex.write(_waiting_command(command))
    codex.scan()
    assert codex.needs() == []  # still waiting: its state is in the cursor only
    cursors = [p for p in codex.hooks.state_dir.rglob("*") if p.is_file() and "watch" in p.parts]
    assert cursors, "the scanner kept no cursor: nothing was checked"
    _assert_nowhere(codex.hooks.state_dir, BEARER, AWS)
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 0.0)
    codex.scan()
    [record] = codex.needs()
    assert record["request_text"] is None and record["summary"] == WHY
    _assert_nowhere(codex.hooks.state_dir, BEARER, AWS, "aws s3 ls")


def test_the_hooks_record_of_a_planted_command_is_still_found(codex: Codex) -> None:
    """The digest kept instead of the command still names the hook's key: one request, one push."""
    codex.open_thread()
    command = f"AWS_SECRET_ACCESS_KEY={AWS} aws s3 ls"
    lines = _waiting_command(command)
    codex.write(lines[: CALL + 1])
    assert codex.hooks.run("codex-permission", stdin=hook_payload(codex, command)).returncode == 0
    codex.write(lines[CALL + 1 :])
    codex.scan()
    [record] = codex.needs()
    assert record["source"] == "codex-permissionrequest"


def test_a_cursor_from_before_loses_the_command_it_kept(codex: Codex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cursor written by an older donebell holds ``command``: the next pass rewrites it without."""
    codex.open_thread()
    codex.write(_waiting_command(f"AWS_SECRET_ACCESS_KEY={AWS} aws s3 ls"))
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 3600.0)
    codex.scan()
    [path] = [p for p in codex.hooks.state_dir.rglob("*.json") if "watch" in p.parts and THREAD in p.read_text()]
    cursor = json.loads(path.read_text())
    [ask] = [t["ask"] for t in cursor["turns"].values() if "ask" in t]
    ask.update(command=f"AWS_SECRET_ACCESS_KEY={AWS} aws s3 ls", why=WHY)
    for name in ("digest", "summary", "excerpt"):
        ask.pop(name)
    path.write_text(json.dumps(cursor))
    codex.engine = engine(codex.state, codex.home)  # a restarted scanner reads the old cursor
    monkeypatch.setattr(rollout_asks, "ASK_QUIET_SECONDS", 0.0)
    codex.scan()
    [record] = codex.needs()
    assert record["summary"] == WHY
    _assert_nowhere(codex.hooks.state_dir, AWS)


def _assert_nowhere(root: Path, *secrets: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, (path, secret)
