"""Faults that once wedged or split the service (issue 15 items 5-8, 10): real hooks, real roles,
the ntfy stand-in on 127.0.0.1.

* a slow-body server (headers, then one byte a second) is cut off at ``timeout_seconds`` and
  the attempt is counted;
* a FIFO planted at ``CODEX_HOME/session_index.jsonl`` does not hang delivery (titles on);
* an expired Claude session record is removed by maintenance, a live one is kept.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import SCHEMA_VERSION
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence
from support.service import Service, kill_leftovers, processes_of


def test_a_slow_body_server_is_cut_off_at_the_attempt_deadline(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Headers at once, then one byte a second for 40 s: the attempt ends within timeout_seconds (+ slack),
    is counted in the record (attempts 1, a timeout error), and the turn is delivered once the server heals."""
    rig = make_rig(timeout_seconds=2.0, retry_max_seconds=2.0)
    (turn,) = rig.hooked(1)
    standin.faults.trickle(interval=1.0, max_seconds=40.0)

    started = time.monotonic()
    first = rig.deliver_once(env={"DONEBELL_CLOCK_OFFSET": "0"})
    took = time.monotonic() - started

    assert first.rc == 0, first.output
    assert took < 10.0, f"one attempt held delivery for {took:.1f}s (timeout_seconds=2)"
    rec = rig.state.read("outbox", turn.key)
    assert rec is not None and rec["attempts"] == 1, rec
    assert rec["last_error"].startswith("timeout"), rec["last_error"]
    rig.settle([turn.key], scan=False, env={"DONEBELL_CLOCK_OFFSET": "60"})
    assert rig.where(turn.key) == ["sent"]
    record("slow_body", seconds_held=round(took, 2), timeout_seconds=2.0, attempts_counted=rec["attempts"])


def test_a_fifo_at_session_index_does_not_hang_delivery(make_rig: Callable[..., Rig], standin: NtfyStandin) -> None:
    """include_thread_title with no SQLite and a FIFO (no writer) at session_index.jsonl: delivery
    reads no title from it, does not block, and sends the turn with the usual title."""
    rig = make_rig(include_thread_title=True)
    os.mkfifo(rig.codex_home / "session_index.jsonl", 0o600)
    (turn,) = rig.hooked(1)

    result = rig.run("worker", "delivery", "--once", timeout=20.0)

    assert result.rc == 0, f"delivery did not finish (rc {result.rc}): {result.output[-500:]}"
    assert rig.where(turn.key) == ["sent"]
    assert len(standin.messages(rig.topic)) == 1


def _claude_session(rig: Rig, session_id: str, updated_at: float) -> str:
    key = claude_session_key(session_id)
    rec = {
        "schema": SCHEMA_VERSION, "kind": "claude-session", "key": key, "provider": "claude",
        "session_id": session_id, "epoch": 1, "prompt_id": "p1", "recent_prompt_ids": ["p1"],
        "goal_baseline": None, "transcript_path": None, "cwd": None,
        "created_at": updated_at, "updated_at": updated_at,
    }  # fmt: skip
    assert rig.state.create("claude", rec)
    return key


def test_maintenance_expires_old_claude_session_records(make_rig: Callable[..., Rig]) -> None:
    """A Claude session record not updated for 31 days goes; a fresh one, and an old one whose session
    still has a pending candidate, stay (the gate needs it to judge that candidate)."""
    rig = make_rig()
    rig.state.ensure()
    old = time.time() - 31 * 86400
    gone = _claude_session(rig, "s-old", old)
    fresh = _claude_session(rig, "s-fresh", time.time())
    needed = _claude_session(rig, "s-needed", old)
    payload = {"session_id": "s-needed", "prompt_id": "p1", "hook_event_name": "Stop",
               "transcript_path": "/nonexistent", "cwd": str(rig.root), "stop_hook_active": False,
               "background_tasks": [], "session_crons": []}  # fmt: skip
    hook = rig.run("hook", "claude", stdin=json.dumps(payload).encode())
    assert hook.rc == 0
    assert rig.state.count("pending") == 1, "the Stop hook did not leave a candidate for s-needed"

    result = rig.run("worker", "maintenance", "--once")

    assert result.rc == 0, result.output
    assert not rig.state.exists("claude", gone)
    assert rig.state.exists("claude", fresh)
    assert rig.state.exists("claude", needed)


def _status(rig: Rig) -> dict[str, Any]:
    out = rig.run("status", "--json").output
    doc: dict[str, Any] = json.loads(out[out.index("{") : out.rindex("}") + 1])
    return doc


def test_http_500_forever_backs_the_whole_outbox_off(make_rig: Callable[..., Rig], standin: NtfyStandin) -> None:
    """50 queued turns and a server answering 500 to everything: a running delivery role probes one
    record at a time on one growing schedule (per-record backoff made 50 POSTs at once, then ~300 a
    minute), status says the server is being backed off, and everything drains once it heals."""
    rig = make_rig(retry_max_seconds=4.0)
    turns = rig.hooked(50)
    standin.faults.fail(500, count=100_000)

    worker = rig.start("worker", "delivery")
    try:
        time.sleep(15.0)
        posts = len(standin.requests)
        status = _status(rig)
        standin.faults.clear()
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and rig.state.count("sent") < len(turns):
            time.sleep(0.2)
    finally:
        os.kill(worker.pid, signal.SIGTERM)
        worker.wait(20.0)
    assert posts <= 10, f"{posts} POSTs in 15 s against a server answering 500"
    assert any("backing off" in r for r in status["reasons"]), status["reasons"]
    assert all(rig.where(t.key) == ["sent"] for t in turns)
    assert len(messages_by_sequence(standin.messages(rig.topic))) == len(turns)
    record("http_500_forever", records=len(turns), posts_in_15s=posts, delivered_after_heal=len(turns))


def test_a_429_paces_the_whole_outbox_and_keeps_its_order(make_rig: Callable[..., Rig], standin: NtfyStandin) -> None:
    """A 429 without Retry-After: nothing more is sent for at least 5 s, status says "rate limited by the
    server until ...", and when the wait ends the record that met the 429 goes first."""
    rig = make_rig(retry_max_seconds=60.0)
    turns = rig.hooked(3)
    standin.faults.fail(429)

    assert rig.deliver_once().rc == 0
    assert len(standin.requests) == 1
    first_sid = json.loads(standin.requests[0].body)["sequence_id"]
    backoff = json.loads((rig.state_dir / "health" / "server-backoff.json").read_text())
    assert backoff["kind"] == "rate-limited" and backoff["until"] - time.time() >= 4.5
    assert rig.deliver_once().rc == 0  # still inside the wait: nothing sent
    assert len(standin.requests) == 1
    assert any(r.startswith("rate limited by the server until") for r in _status(rig)["reasons"])

    rig.settle([t.key for t in turns], scan=False, env={"DONEBELL_CLOCK_OFFSET": "30"})
    assert json.loads(standin.requests[1].body)["sequence_id"] == first_sid
    assert all(rig.where(t.key) == ["sent"] for t in turns)


def test_without_a_service_status_and_doctor_name_the_unrecovered_gap(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Hooks only, no `donebell run`: a turn whose hook never ran is not delivered by the on-demand
    worker (only the service's scanner would find it), and `status` and `doctor` say exactly that and
    name the fix."""
    rig = make_rig()
    rig.new_turn(complete=True)  # finished, but its Stop hook never ran
    hooked = rig.new_turn()
    assert rig.hook_stop(hooked).rc == 0
    rig.complete(hooked)
    assert rig.deliver_once().rc == 0  # what a hook's on-demand worker does
    assert len(standin.messages(rig.topic)) == 1  # the hooked turn only

    status = rig.run("status")
    doctor = rig.run("doctor")

    for out in (status.output, doctor.output):
        assert "never recovered" in out and "donebell install" in out, out
    assert status.rc == 3


def _settle_service(rig: Rig, standin: NtfyStandin, turns: list[Turn], timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(rig.state.locate(t.key) == "sent" for t in turns):
        time.sleep(0.2)


def _remove_tree_under_writers(path: Path) -> None:
    """`rm -rf` while the roles still write: a file created mid-walk fails one rmdir (ENOTEMPTY),
    and `rm -rf` run again finishes the job, as a user would."""
    for _ in range(19):
        try:
            shutil.rmtree(path)
            return
        except OSError:
            continue
    shutil.rmtree(path)


def test_deleting_the_state_dir_under_a_running_service_leaves_one_service(
    make_rig: Callable[..., Rig], standin: NtfyStandin, tmp_path: Path
) -> None:
    """`rm -rf` of the state directory under a running `donebell run`, then a second `donebell run`:
    exactly one supervisor survives (the old one re-creates the directory, or steps down for the new
    one), the old roles stop on their lost locks, and 20 turns give exactly 20 notifications."""
    rig = make_rig()
    first = Service(rig, tmp_path / "run-1.log")
    second: Service | None = None
    try:
        first.wait_ready()
        before = [rig.new_turn() for _ in range(10)]
        for turn in before:
            assert rig.hook_stop(turn).rc == 0
            rig.complete(turn)
        _settle_service(rig, standin, before)
        assert len(standin.messages(rig.topic)) == 10

        for turn in before:  # older than watch_initial_replay_seconds: the receipts go with the
            os.utime(turn.rollout, (time.time() - 900, time.time() - 900))  # directory, no replay
        _remove_tree_under_writers(rig.state_dir)
        second = Service(rig, tmp_path / "run-2.log")
        time.sleep(4.0)  # both supervisors' health checks and every role's next pass have run
        after = [rig.new_turn() for _ in range(10)]
        for turn in after:
            assert rig.hook_stop(turn).rc == 0
            rig.complete(turn)
        _settle_service(rig, standin, after)
        time.sleep(3.0)  # a second delivery role, if any, has had time to send again

        supervisors = [p for p in (first.proc, second.proc) if p.poll() is None]
        by_sequence = messages_by_sequence(standin.messages(rig.topic))
        delivery_roles = [c for c in processes_of(rig).values() if "worker delivery" in c or c == "donebell: delivery"]
    finally:
        for svc in (first, second):
            if svc is not None:
                svc.stop()
        kill_leftovers(rig)
    assert len(supervisors) == 1, f"{len(supervisors)} supervisors: {first.output()[-800:]} {second.output()[-800:]}"
    assert len(delivery_roles) == 1, delivery_roles
    assert sum(by_sequence.values()) == 20 and set(by_sequence.values()) == {1}, by_sequence
    assert all(rig.where(t.key) == ["sent"] for t in after)


def test_a_gate_backlog_heartbeats_and_stops_promptly_on_sigterm(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """1,500 pending candidates (their rollouts beside them) and a running delivery role: while it
    works through them its heartbeat never ages past a few seconds, and SIGTERM mid-backlog ends it
    within seconds (a pass yields after its budget; the old pass over the whole backlog took minutes,
    quadratic in the backlog, heartbeat silent and SIGTERM unanswered throughout)."""
    rig = make_rig()
    turns = rig.backlog(1500)
    worker = rig.start("worker", "delivery")
    worst_gap, started = 0.0, time.monotonic()
    try:
        # Sampled while the backlog is worked, and SIGTERM sent halfway through it: a drained role
        # beats only every heartbeat_seconds (5 s) and has nothing left to stop.
        while time.monotonic() - started < 12.0 and rig.state.count("sent") < len(turns) // 2:
            beat = (rig.state.read_health("delivery") or {}).get("heartbeat_at")
            if isinstance(beat, (int, float)):
                worst_gap = max(worst_gap, time.time() - beat)
            time.sleep(0.2)
    finally:
        asked = time.monotonic()
        os.kill(worker.pid, signal.SIGTERM)
        rc = worker.wait(120.0)
        stop_seconds = time.monotonic() - asked
    sent = rig.state.count("sent")
    assert sent < len(turns), "the backlog was drained before SIGTERM: nothing was interrupted"
    assert worst_gap < 5.0, f"heartbeat {worst_gap:.1f}s old while the backlog was worked"
    assert stop_seconds < 8.0 and rc == 0, f"SIGTERM answered after {stop_seconds:.1f}s (rc {rc})"
    assert sent > 0 and len(standin.messages(rig.topic)) == sent <= len(turns)
    record(
        "gate_backlog",
        pending=len(turns),
        sent_before_sigterm=sent,
        heartbeat_gap_s=round(worst_gap, 2),
        sigterm_s=round(stop_seconds, 2),
    )
