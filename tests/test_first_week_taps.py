"""Issue 37, item 5 (explain and log): the taps a user made are shown where the user looks.

A real Continue tap (the ntfy app's request, handled by the real ``donebell worker wake``) and a
real Allow tap (the real PermissionRequest hook waiting, the wake pipeline answering it); then the
installed ``donebell explain '#<short id>'`` (the id the phone shows) tells the tap history the full
id tells, and ``donebell log`` lists the successful taps and says which push was a "needs you"
and which a finished task.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from donebell.shared.records import NEEDS_YOU, new_receipt
from donebell.shared.text.short_id import short_id
from support.delivery_kit import outbox_record
from support.new_user import DONEBELL
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for
from support.wake_world import THREAD, WakeWorld
from test_approvals import Phone

pytestmark = pytest.mark.usefixtures("no_outside_config")


def _installed(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DONEBELL), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _continue_tapped(world: WakeWorld) -> None:
    (button,) = world.buttons()
    world.tap(button)
    assert world.worker("--once").returncode == 0
    wait_for(lambda: len(world.rollout_turns()) == 2, 10, "the new turn")
    assert world.worker("--once").returncode == 0
    assert [r["status"] for r in world.records()] == ["confirmed"]


def test_explain_by_the_short_id_tells_the_tap_history(tmp_path: Path, srv: NtfyStandin) -> None:
    world = WakeWorld(tmp_path, srv)
    _continue_tapped(world)
    by_full = _installed(world.env, "explain", THREAD)
    by_short = _installed(world.env, "explain", f"#{short_id(THREAD)}")
    assert by_short.returncode == 0, by_short.stderr
    taps = [line for line in by_full.stdout.splitlines() if line.startswith("• wake ")]
    assert len(taps) == 1 and ": confirmed; new turn" in taps[0]
    assert [line for line in by_short.stdout.splitlines() if line.startswith("• wake ")] == taps
    as_json = json.loads(_installed(world.env, "explain", f"#{short_id(THREAD)}", "--json").stdout)
    assert [w["status"] for w in as_json["wakes"]] == ["confirmed"]


def test_log_shows_a_successful_continue_and_tells_needs_you_from_done(tmp_path: Path, srv: NtfyStandin) -> None:
    world = WakeWorld(tmp_path, srv)  # its turn-1 was notified as done
    asked = outbox_record(thread_id=THREAD, turn_id="turn-ask", notice=NEEDS_YOU, outcome=None)
    world.state.create("sent", new_receipt(asked, status="sent", reason="sent"))
    _continue_tapped(world)
    lines = _installed(world.env, "log", "--last", "0").stdout.splitlines()
    notified = [line for line in lines if " notified " in line]
    assert any("sent: needs you" in line for line in notified), lines
    assert any(line.endswith("sent: done") for line in notified), lines
    [tapped] = [line for line in lines if " tapped " in line]
    assert f"codex #{short_id(THREAD)}" in tapped and "Continue from the phone: started a new turn" in tapped
    events = [json.loads(line) for line in _installed(world.env, "log", "--json").stdout.splitlines()]
    assert [e["kind"] for e in events].count("tapped") == 1


def test_log_shows_a_successful_allow(tmp_path: Path) -> None:
    phone = Phone(tmp_path)
    proc = phone.ask()
    request = phone.request()
    reply = phone.tap(phone.ticket(request, "allow"))
    assert reply is not None and reply["status"] == "answered"
    assert proc.wait(timeout=30) == 0
    lines = _installed(phone.env.environ(), "log", "--last", "0").stdout.splitlines()
    [tapped] = [line for line in lines if " tapped " in line]
    assert "claude" in tapped and "Allow from the phone: answered the permission prompt" in tapped
