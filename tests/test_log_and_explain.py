"""`donebell log` lists the recent decisions one line each (newest last, --last, --json, --follow), and
`donebell explain` accepts every id a user can see: the `#…` of the notification, the ntfy sequence
id and message id, the thread id. Real delivery worker, real stand-in server, real CLI processes."""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from donebell.shared.keys import sequence_id
from donebell.shared.records import new_receipt
from donebell.shared.text.short_id import short_id
from support.delivery_kit import Env
from support.ntfy_standin import NtfyStandin

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptReason, ReceiptStatus


def _deliver(env: Env, **fields: object) -> dict[str, object]:
    rec = env.queue(**fields)
    run = env.run_cli("worker", "delivery", "--once")
    assert run.returncode == 0, run.stderr
    assert env.state.locate(str(rec["key"])) == "sent"
    return rec


def _receipt(env: Env, folder: ReceiptStatus, reason: ReceiptReason, thread: str, **extra: object) -> None:
    """A gate decision as the gate stores it (outbox record -> receipt), without the message."""
    rec = env.queue(thread_id=thread, cwd="/home/dev/projects/api")
    env.state.finish("outbox", folder, new_receipt(rec, status=folder, reason=reason, **extra))
    time.sleep(0.05)  # distinct file times: newest last is by time


def test_log_lists_decisions_newest_last(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    first, child, gone = (str(uuid.uuid4()) for _ in range(3))
    _deliver(env, thread_id=first)
    time.sleep(0.05)
    _receipt(env, "suppressed", "subagent", child)
    _receipt(env, "dead", "permanent-http-error", gone, last_error="HTTP 400: invalid topic")
    res = env.run_cli("log")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 3
    assert "notified" in lines[0] and f"codex #{short_id(first)}  sent" in lines[0]
    assert "suppressed" in lines[1] and f"#{short_id(child)}  subagent: a subagent's turn" in lines[1]
    assert "dead" in lines[2] and "permanent-http-error: HTTP 400: invalid topic" in lines[2]
    assert env.run_cli("log", "--last", "1").stdout.splitlines() == lines[-1:]
    rows = [json.loads(line) for line in env.run_cli("log", "--json").stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["notified", "suppressed", "dead"]
    assert rows[0]["id"] == short_id(first) and rows[0]["provider"] == "codex"


def test_log_shows_waiting_and_retrying_records_and_log_warnings(tmp_path: Path) -> None:
    """Nothing listens on the server port: the record waits in the outbox with its error."""
    env = Env(tmp_path, server="http://127.0.0.1:9")
    thread = str(uuid.uuid4())
    env.queue(thread_id=thread)
    env.run_cli("worker", "delivery", "--once")
    out = env.run_cli("log").stdout
    assert (
        f"sending    codex #{short_id(thread)} donebell  attempt 1 failed" in out
        and "attempt 1 failed" in out
        and "will retry" in out
    )
    assert "warning" in out and "delivery failed; will retry" in out


def test_log_follow_prints_new_decisions(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    _deliver(env)
    follower = env.popen_cli("log", "--follow")
    try:
        assert follower.stdout is not None
        assert "notified" in follower.stdout.readline()
        later = str(uuid.uuid4())
        _deliver(env, thread_id=later)
        assert f"#{short_id(later)}" in follower.stdout.readline()
        follower.send_signal(signal.SIGINT)
        assert follower.wait(10) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()


def test_log_follow_last_prints_the_newest_then_only_new_lines(tmp_path: Path) -> None:
    """`--follow --last 1` once printed the 17 older lines after the newest: now the N newest, then new ones."""
    env = Env(tmp_path, server="http://127.0.0.1:9")
    threads = [str(uuid.uuid4()) for _ in range(4)]
    for thread in threads:  # queued records: events that are not final receipts
        env.queue(thread_id=thread, created_at=time.time())
        time.sleep(0.05)
    follower = env.popen_cli("log", "--follow", "--last", "1")
    try:
        assert follower.stdout is not None
        assert f"#{short_id(threads[-1])}" in follower.stdout.readline()
        time.sleep(2.5)  # two polls see nothing new
        later = str(uuid.uuid4())
        env.queue(thread_id=later, created_at=time.time())
        assert f"#{short_id(later)}" in follower.stdout.readline()
        follower.send_signal(signal.SIGINT)
        assert follower.wait(10) == 0
        assert follower.stdout.read() == ""
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()


def test_explain_accepts_every_id_on_the_phone(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url)
    thread = str(uuid.uuid4())
    rec = _deliver(env, thread_id=thread)
    [message] = srv.messages()
    assert message["message"].endswith(f"#{short_id(thread)}")
    key = str(rec["key"])
    for ident in (
        f"#{short_id(thread)}",
        short_id(thread),
        message["sequence_id"],
        message["id"],
        thread,
        f"#{thread[:8]}",
        key,
    ):
        res = env.run_cli("explain", ident, "--json")
        assert res.returncode == 0, (ident, res.stdout, res.stderr)
        assert [r["key"] for r in json.loads(res.stdout)["records"]] == [key], ident
    assert message["sequence_id"] == sequence_id("codex", key)
    assert env.run_cli("explain", "#00000000").returncode == 1


def test_log_without_a_state_directory_says_so(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.state.root.rename(tmp_path / "elsewhere")
    res = env.run_cli("log")
    assert res.returncode == 1 and "no state directory" in res.stderr
    assert not env.state.root.exists()
