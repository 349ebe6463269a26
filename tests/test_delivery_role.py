"""The delivery role as a real process: --once, --until-idle, continuous wake-up, lock, health."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from donebell.shared.ingest import submit_candidate
from support.delivery_kit import Env, outbox_record
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for

if TYPE_CHECKING:
    from donebell.shared.record_types import Candidate

pytestmark = pytest.mark.usefixtures("no_outside_config")


def _health(env: Env) -> dict[str, Any]:
    path = env.state.root / "health" / "delivery.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_once_drains_the_outbox_and_exits(srv: NtfyStandin, tmp_path: Path) -> None:
    """`worker delivery --once` sends every due record over one connection, records health, exits 0."""
    env = Env(tmp_path, server=srv.url)
    keys = [env.queue()["key"] for _ in range(5)]
    run = env.run_cli("worker", "delivery", "--once")
    assert run.returncode == 0, run.stderr
    assert all(env.state.locate(k) == "sent" for k in keys)
    assert len(srv.messages()) == 5 and srv.connections_opened == 1
    health = _health(env)
    assert health["state"] == "stopped" and health["counters"]["sent"] == 5 and health["outbox"] == 0


def test_until_idle_rides_out_short_retries(srv: NtfyStandin, tmp_path: Path) -> None:
    """--until-idle keeps going while a retry is due within 30 s, delivers it, then exits."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    srv.faults.fail(503)
    started = time.monotonic()
    run = env.run_cli("worker", "delivery", "--until-idle")
    assert run.returncode == 0, run.stderr
    assert env.state.locate(rec["key"]) == "sent"
    assert [r.status for r in srv.requests] == [503, 200]
    assert time.monotonic() - started < 10


def test_until_idle_leaves_long_waits_to_a_later_worker(srv: NtfyStandin, tmp_path: Path) -> None:
    """--until-idle exits once all that is left waits more than 30 s (here: ntfy's daily quota)."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    srv.faults.fail(429, 42908)
    started = time.monotonic()
    run = env.run_cli("worker", "delivery", "--until-idle")
    assert run.returncode == 0, run.stderr
    assert time.monotonic() - started < 8
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and kept["attempts"] == 1 and "42908" in kept["last_error"]


def test_until_idle_on_an_empty_queue_exits_at_once(srv: NtfyStandin, tmp_path: Path) -> None:
    """With nothing pending and nothing queued, --until-idle makes one pass and exits 0."""
    env = Env(tmp_path, server=srv.url)
    run = env.run_cli("worker", "delivery", "--until-idle", timeout=15)
    assert run.returncode == 0, run.stderr
    assert _health(env)["passes"] == 1


def test_continuous_worker_wakes_on_a_new_outbox_record(srv: NtfyStandin, tmp_path: Path) -> None:
    """A running worker is woken by the new outbox file (inotify) and POSTs well within 300 ms."""
    env = Env(tmp_path, server=srv.url)
    proc = env.popen_cli("worker", "delivery")
    try:
        wait_for(lambda: _health(env).get("state") == "ready", 15, "the worker to be ready")
        latencies = []
        for n in range(1, 6):
            time.sleep(0.2)  # let the worker go back to sleep
            queued = time.monotonic()
            env.queue()
            srv.wait_for_requests(n, timeout=5)
            latencies.append(srv.requests[-1].arrived_monotonic - queued)
        print("wake-to-POST latencies (s):", [round(x, 4) for x in latencies])
        assert statistics.median(latencies) < 0.3, latencies
        assert _stop(proc) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _health(env)["state"] == "stopped"
    assert srv.connections_opened == 1


def test_bounded_run_exits_when_a_worker_holds_the_lock(srv: NtfyStandin, tmp_path: Path) -> None:
    """A second (bounded) delivery worker exits 0 at once instead of competing for the queue."""
    env = Env(tmp_path, server=srv.url)
    proc = env.popen_cli("worker", "delivery")
    try:
        wait_for(lambda: _health(env).get("state") == "ready", 15, "the worker to be ready")
        owner = env.state.lock_owner("delivery")
        run = env.run_cli("worker", "delivery", "--once")
        assert run.returncode == 0, run.stderr
        assert owner is not None and owner["pid"] == proc.pid
        assert env.state.lock_owner("delivery") == owner  # the running worker kept its lock
    finally:
        _stop(proc)


def test_config_problem_is_reported_and_nothing_is_lost(srv: NtfyStandin, tmp_path: Path) -> None:
    """Without a topic nothing is sent, the record stays as it was, and health says why."""
    env = Env(tmp_path, server=srv.url)
    env.write_config(server=srv.url, topic="")
    rec = env.queue()
    run = env.run_cli("worker", "delivery", "--until-idle")
    assert run.returncode == 0, run.stderr
    assert env.state.read("outbox", rec["key"]) == rec and srv.requests == []
    health = _health(env)
    assert "no topic" in health["config_problem"] and "no topic" in health["degraded_reason"]


def test_hook_candidate_reaches_the_server_through_gate_and_outbox(srv: NtfyStandin, tmp_path: Path) -> None:
    """A candidate a hook submits wakes the worker (pending/ watch), passes the gate and is POSTed at once."""
    env = Env(tmp_path, server=srv.url, idle_detection_mode="off")
    proc = env.popen_cli("worker", "delivery")
    try:
        wait_for(lambda: _health(env).get("state") == "ready", 15, "the worker to be ready")
        latencies = []
        for n in range(1, 4):
            time.sleep(0.2)  # let the worker go back to sleep, so each candidate must wake it
            rec = outbox_record()
            candidate = {
                k: v
                for k, v in rec.items()
                if k not in ("promoted_at", "verdict", "sequence_id", "attempts", "next_attempt_at", "last_error")
            }
            candidate.update(kind="candidate", classification="root")
            submitted = time.monotonic()
            assert submit_candidate(env.state, cast("Candidate", candidate)) == "created"
            srv.wait_for_requests(n, timeout=5)
            latencies.append(srv.requests[-1].arrived_monotonic - submitted)
            assert srv.requests[-1].parsed["sequence_id"] == rec["sequence_id"]
        print("pending-to-POST latencies (s):", [round(x, 4) for x in latencies])
        assert statistics.median(latencies) < 0.3, latencies
    finally:
        _stop(proc)
