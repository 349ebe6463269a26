"""The wake role as a real process against the ntfy stand-in: taps, refusals, busy threads, crashes.

The agent CLI is a small stand-in ``codex`` on PATH that appends one turn to the thread's rollout
the way ``codex exec resume`` does (task_started, then task_complete), and logs its argv; the
real CLIs are driven in tests/e2e/test_wake.py. The world (state dir, Codex home, stand-in CLI)
is tests/support/wake_world.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from donebell.shared.config.model import Settings
from donebell.shared.statedir import StateDir
from donebell.workers.wake.actions import wake_actions
from support.delivery_kit import outbox_record
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for
from support.wake_world import THREAD, WakeWorld, statuses

pytestmark = pytest.mark.usefixtures("no_outside_config")


@pytest.fixture()
def world(tmp_path: Path, srv: NtfyStandin) -> WakeWorld:
    return WakeWorld(tmp_path, srv)


def test_a_tap_starts_one_turn_in_the_same_thread_and_is_confirmed(world: WakeWorld) -> None:
    (button,) = world.buttons()
    world.tap(button)
    first = world.worker("--once")  # the supervisor was down at the tap: handled on the next run
    assert first.returncode == 0, first.stderr
    wait_for(lambda: len(world.rollout_turns()) == 2, 10, "the new turn")
    assert world.codex_calls() == [["exec", "resume", THREAD, "continue please"]]
    assert world.worker("--once").returncode == 0
    (record,) = world.records()
    assert record["status"] == "confirmed" and record["new_turn"] == world.rollout_turns()[-1]
    assert [h["status"] for h in record["history"]] == ["received", "verified", "requested", "confirmed"]
    assert "continue please" not in json.dumps(record)  # the prompt never enters a record
    world.worker("--once")  # a third run: the cursor says the reply was handled
    assert len(world.records()) == 1 and len(world.codex_calls()) == 1
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "explain", THREAD]
    explained = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=30, check=False)
    assert explained.returncode == 0 and ": confirmed; new turn" in explained.stdout, explained.stdout


def test_replay_is_refused_and_never_a_second_turn(world: WakeWorld) -> None:
    (button,) = world.buttons()
    world.tap(button)
    world.worker("--once")
    wait_for(lambda: len(world.rollout_turns()) == 2, 10, "the new turn")
    for _ in range(5):
        world.tap(button)  # the same request again (a reader of the topic replays it)
    world.worker("--once")
    assert sorted(statuses(world)) == [("confirmed", None), ("refused", "replay")]
    assert len(world.codex_calls()) == 1


def test_one_tampered_byte_is_refused_without_a_turn(world: WakeWorld) -> None:
    (button,) = world.buttons()
    body = button["body"]
    middle = len(body) // 2
    world.tap(button, body[:middle] + ("A" if body[middle] != "A" else "B") + body[middle + 1 :])
    result = world.worker("--once")
    assert result.returncode == 0, result.stderr
    assert world.records() == [] and world.codex_calls() == []
    lines = [e["msg"] for e in world.log() if e.get("role") == "wake"]
    assert any("refused: bad-signature" in m or "refused: malformed" in m for m in lines), lines


def test_expired_ticket_is_refused(world: WakeWorld) -> None:
    (button,) = world.buttons(wake_ticket_ttl_seconds=0.5)
    time.sleep(1.1)
    for _ in range(4):
        world.tap(button)  # repeats of one expired ticket: recorded once, the rest counted
    world.worker("--once")
    assert statuses(world) == [("refused", "expired")] and world.codex_calls() == []
    assert world.state.read_health("wake")["counters"]["refused-expired"] == 4  # type: ignore[index]


def test_a_ticket_for_another_host_is_ignored_silently(world: WakeWorld, tmp_path: Path) -> None:
    other = StateDir(tmp_path / "other-host").ensure()
    s = Settings(**world.settings_data)
    (button,) = wake_actions(outbox_record(thread_id=THREAD, turn_id="turn-1"), s, state=other)
    world.tap(button)
    world.worker("--once")
    assert world.records() == [] and world.codex_calls() == []
    assert not [e for e in world.log() if e.get("role") == "wake" and e["level"] == "warning"]


def test_a_junk_flood_is_bounded_and_rate_limited_in_the_log(world: WakeWorld) -> None:
    (button,) = world.buttons()
    junk = ["", "continue", "rm -rf /", "dbw1.a.b", "x" * 3000, button["body"][:-3] + "AAA"]
    with httpx.Client(timeout=5) as client:
        for i in range(240):
            client.post(button["url"], content=junk[i % len(junk)].encode() or b"triggered")
    world.tap(button)  # one real tap among the junk still works
    started = time.monotonic()
    result = world.worker("--once")
    assert result.returncode == 0 and time.monotonic() - started < 30, result.stderr
    refusals = [e for e in world.log() if e.get("role") == "wake" and "refused" in e["msg"]]
    assert 1 <= len(refusals) <= 3, refusals  # one line a minute, the rest counted
    assert statuses(world) == [("requested", None)]
    assert world.state.read_health("wake")["counters"]["refused-malformed"] >= 150  # type: ignore[index]


def test_unknown_thread_deleted_rollout_and_superseded(world: WakeWorld) -> None:
    (unknown,) = world.buttons(turn="turn-never-notified")
    world.tap(unknown)
    world.worker("--once")
    assert statuses(world) == [("refused", "unknown-thread")]

    world.turn("turn-2", done=True)  # the user continued in the terminal
    (old,) = world.buttons(turn="turn-1")
    world.tap(old)
    world.worker("--once")
    assert statuses(world)[-1] == ("refused", "superseded")

    world.notified("turn-2")
    (fresh,) = world.buttons(turn="turn-2")
    world.rollout.unlink()
    world.tap(fresh)
    world.worker("--once")
    assert statuses(world)[-1] == ("refused", "rollout-missing")
    assert world.codex_calls() == []


def test_a_wake_queued_behind_the_users_own_turn_is_superseded_when_that_turn_ends(world: WakeWorld) -> None:
    # docs/wake.md: a ticket acts only while its turn is the thread's newest ended turn. The user's
    # own turn (turn-2) ending makes the ticket's turn-1 old news: the reply must not start a
    # turn after it (it did, and this test asserted so), it is refused `superseded`.
    world.turn("turn-2", done=False)  # the user is in a turn of their own right now
    (button,) = world.buttons()
    world.tap(button)
    proc = world.start()
    try:
        wait_for(lambda: statuses(world) == [("queued", None)], 20, "the wake to be queued")
        time.sleep(2.5)
        assert world.codex_calls() == []  # never steered into the running turn
        world.append({"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "turn-2"}})
        wait_for(lambda: statuses(world) == [("refused", "superseded")], 20, "the queued wake to be superseded")
        time.sleep(2.5)  # another busy re-check period: still nothing started
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    assert world.codex_calls() == [] and len(world.rollout_turns()) == 2


def test_active_writer_refusal_is_retried_before_acceptance(world: WakeWorld) -> None:
    refuse = world.tmp / "refuse-once"
    refuse.write_text("1")
    (button,) = world.buttons()
    world.tap(button)
    proc = world.start(FAKE_CODEX_REFUSE_FILE=str(refuse))
    try:
        wait_for(lambda: statuses(world) == [("confirmed", None)], 30, "the retried wake")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    (record,) = world.records()
    assert [h.get("reason") for h in record["history"] if h["status"] == "retry"] == ["busy"]
    assert len(world.codex_calls()) == 2 and len(world.rollout_turns()) == 2


def test_sigkill_between_requested_and_confirmed_never_starts_a_second_turn(world: WakeWorld) -> None:
    (button,) = world.buttons()
    world.tap(button)
    proc = world.start(FAKE_CODEX_BEFORE="3")
    try:
        # Killed once the agent runs (it logs its call, then waits 3 s before its turn): a kill
        # between writing "requested" and the spawn is another case (no turn: "unconfirmed"), and
        # a loaded machine stretches that gap enough for the status alone to race it.
        wait_for(
            lambda: (
                statuses(world) == [("requested", None)] and world.calls.exists() and world.calls.stat().st_size > 0
            ),
            20,
            "requested, agent started",
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: len(world.rollout_turns()) == 2, 15, "the detached agent to finish its turn")
    world.worker("--once")
    world.worker("--once")
    assert statuses(world) == [("confirmed", None)]
    assert len(world.codex_calls()) == 1 and len(world.rollout_turns()) == 2


def test_refused_without_an_access_token_unless_explicitly_allowed(world: WakeWorld) -> None:
    world.settings_data["wake_allow_unauthenticated"] = False
    world.write_config()
    result = world.worker("--once")
    assert result.returncode == 78 and "access token" in result.stderr


def test_doctor_warns_on_every_run_when_unauthenticated_wake_is_allowed(world: WakeWorld) -> None:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "doctor", "--json"]
    for _ in range(2):
        out = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=60, check=False)
        [check] = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "wake"]
        assert check["status"] == "warn" and "without an access token" in check["summary"], check


def test_the_subscription_reconnects_after_the_server_goes_away(world: WakeWorld) -> None:
    """The stream breaks (server restart): the role reconnects with backoff and handles the next tap."""
    proc = world.start()
    try:
        wait_for(lambda: (world.state.read_health("wake") or {}).get("subscription") == "subscribed", 20, "subscribed")
        port = world.srv.port
        world.srv.stop()
        wait_for(
            lambda: (world.state.read_health("wake") or {}).get("subscription") == "unreachable",
            30,
            "the role to notice",
        )
        with NtfyStandin(port=port) as again:
            wait_for(lambda: (world.state.read_health("wake") or {}).get("connects", 0) >= 2, 40, "a reconnect")
            (button,) = world.buttons()
            assert button["url"].startswith(again.url)
            world.tap(button)
            wait_for(lambda: statuses(world) == [("confirmed", None)], 30, "the tap after the reconnect")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    assert proc.returncode == 0
    assert world.state.wake_queue().cursor() is not None


def test_install_and_config_check_refuse_wake_without_an_access_token(world: WakeWorld) -> None:
    world.settings_data["wake_allow_unauthenticated"] = False
    world.write_config()
    for args in (["config", "check"], ["install", "--service", "none", "--dry-run"]):
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
        out = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 1 and "needs an access token" in out.stdout, (args, out.stdout, out.stderr)
