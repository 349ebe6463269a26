"""`donebell test`: one test notification through the real outbox path, with the server's answer."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from support.delivery_kit import TOPIC, Env
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("no_outside_config")


def _outcome(stdout: str) -> dict[str, object]:
    return dict(json.loads(stdout))


def test_sends_through_the_outbox_and_marks_the_receipt(srv: NtfyStandin, tmp_path: Path) -> None:
    """With no worker running, the command delivers its record itself; the receipt says test."""
    env = Env(tmp_path, server=srv.url)
    run = env.run_cli("test", "--json")
    assert run.returncode == 0, run.stderr
    out = _outcome(run.stdout)
    [msg] = srv.messages()
    assert out["ok"] is True and out["http_status"] == 200 and out["message_id"] == msg["id"]
    assert out["subscribe"] == f"{srv.url}/{TOPIC}"
    assert msg["title"] == "donebell test" and msg["message"].startswith("test notification from donebell")
    receipt = env.state.read("sent", str(out["key"]))
    assert receipt is not None and receipt["test"] is True and receipt["reason"] == "test"
    assert receipt["sequence_id"] == msg["sequence_id"] and env.state.count("outbox") == 0


def test_human_output_names_the_answer(srv: NtfyStandin, tmp_path: Path) -> None:
    """The plain output says the server accepted it and where to subscribe."""
    env = Env(tmp_path, server=srv.url)
    run = env.run_cli("test")
    assert run.returncode == 0, run.stderr
    assert "answered HTTP 200" in run.stdout and f"{srv.url}/{TOPIC}" in run.stdout


def test_refused_message_reports_the_server_error(srv: NtfyStandin, tmp_path: Path) -> None:
    """A permanent refusal is printed with ntfy's code and the record is dead-lettered (exit 1)."""
    env = Env(tmp_path, server=srv.url)
    srv.faults.fail(400, 40009)
    run = env.run_cli("test", "--json")
    assert run.returncode == 1
    out = _outcome(run.stdout)
    assert out["state"] == "dead" and out["ntfy_code"] == 40009 and "topic invalid" in str(out["error"])


def test_retryable_failure_stays_queued(srv: NtfyStandin, tmp_path: Path) -> None:
    """A 503 is reported and the test record stays in the outbox for the worker to retry (exit 1)."""
    env = Env(tmp_path, server=srv.url)
    srv.faults.fail(503)
    run = env.run_cli("test")
    assert run.returncode == 1
    assert "not delivered yet: HTTP 503" in run.stdout and "stays queued" in run.stdout
    assert env.state.count("outbox") == 1


def test_config_problem_sends_nothing(srv: NtfyStandin, tmp_path: Path) -> None:
    """Without a topic the command refuses with exit 78 and queues nothing."""
    env = Env(tmp_path, server=srv.url)
    env.write_config(server=srv.url, topic="")
    run = env.run_cli("test")
    assert run.returncode == 78 and "no topic" in run.stderr
    assert env.state.count("outbox") == 0 and srv.requests == []


def test_running_worker_delivers_the_test_record(srv: NtfyStandin, tmp_path: Path) -> None:
    """With a delivery worker running, the command leaves the sending to it and reports its answer."""
    env = Env(tmp_path, server=srv.url)
    worker = env.popen_cli("worker", "delivery")
    try:
        wait_for(lambda: env.state.lock_owner("delivery") is not None, 15, "the worker to hold the delivery lock")
        run = env.run_cli("test", "--json")
        assert run.returncode == 0, run.stderr
        out = _outcome(run.stdout)
        assert out["via"] == "the running delivery worker" and out["ok"] is True
        assert len(srv.messages()) == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(10)


def test_takes_over_when_the_lock_holder_goes_away(srv: NtfyStandin, tmp_path: Path) -> None:
    """If the lock holder exits without touching the test record, the command delivers it itself."""
    env = Env(tmp_path, server=srv.url)
    lock = env.state.role_lock("delivery")  # stands for a bounded worker that is just finishing
    assert lock is not None
    proc = env.popen_cli("test", "--json")
    try:
        wait_for(lambda: env.state.count("outbox") > 0, 15, "the command to queue its test record")
        assert srv.requests == []  # nobody sends while the lock is held
    finally:
        lock.release()
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert _outcome(stdout)["via"] == "this command" and len(srv.messages()) == 1
