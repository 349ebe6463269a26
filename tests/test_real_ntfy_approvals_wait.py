"""Allow / Deny against the real ntfy servers (2.11 and 2.27), with the real wake role (issue 34
items 3 and 4): a tap is answered while a reply to continue waits on a slow agent command, and a
PermissionRequest hook waits for the phone only while the wake role is subscribed.

The permission request is the real ``donebell hook claude`` process with the recorded Claude
payload (tests/test_approvals.py's ``Phone``); the wake role is the real ``donebell worker wake``
subscribed to the real server; the tap is the signed answer POSTed to the reply topic, as the
ntfy app sends it; the agent command is a stand-in ``codex`` whose ``queue`` sleeps.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared import health
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, free_port, serve_with_donebell
from support.waiting import wait_for
from support.wake_world import THREAD, WakeWorld
from test_approvals import ALLOW, APPROVALS, Phone, _printed

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOPIC = "donebell-notes-Wq8rT2kLm5Xv7nBz"
WAKE_TOPIC = "donebell-replies-Yp3sD9fGh1Jk4LqZ"
#: Long enough that the old role, blocked in `codex queue`, let the hook's whole wait run out.
QUEUE_SLEEP = 45.0
WAIT = 20.0

SLOW_QUEUE = """\
#!{python}
import json, os, sys, time
with open(os.environ["FAKE_CODEX_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1] == "queue":
    time.sleep({sleep})
    print("Queued message 01a245f0-edbf-79d0-a449-739e77b64eda for thread " + sys.argv[3] + ".")
"""


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple[RealNtfy, str]]:
    yield from serve_with_donebell(tmp_path_factory.mktemp("ntfy-approvals"), request.param)


def _world(tmp_path: Path, ntfy: RealNtfy, token: str, **settings: Any) -> tuple[WakeWorld, Phone]:
    """One state dir and config shared by the real hook (`phone`) and the real wake role (`world`)."""
    phone = Phone(tmp_path)
    world = WakeWorld(tmp_path, ntfy)
    world.settings_data.pop("wake_allow_unauthenticated")
    world.settings_data.update(APPROVALS, topic=TOPIC, wake_topic=WAKE_TOPIC, token=token, wake_token=token)
    world.settings_data.update(approval_wait_seconds=WAIT, **settings)
    world.write_config()
    return world, phone


def _role_health(world: WakeWorld, proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The running role's own health file (not the stand-in one `Phone` wrote)."""
    found = world.state.read_health("wake") or {}
    return found if found.get("pid") == proc.pid else {}


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(15)  # the role kills the agent command it waits for: it stops at once


def _tap(ntfy: RealNtfy, token: str, body: str) -> None:
    reply = httpx.post(
        f"{ntfy.url}/{WAKE_TOPIC}", content=body.encode(), headers={"Authorization": f"Bearer {token}"}, timeout=5
    )
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("why", ["unauthorized", "unreachable"])
def test_the_hook_does_not_hold_the_agent_while_no_tap_can_arrive(
    tmp_path: Path, server: tuple[RealNtfy, str], why: str
) -> None:
    """The wake role runs and its heartbeat is fresh, but the server refuses its token (401) or is
    not there: its health says so, and the hook returns at once with no opinion (the agent's own
    dialog decides) instead of holding the agent for approval_wait_seconds."""
    ntfy, _token = server
    if why == "unauthorized":
        world, phone = _world(tmp_path, ntfy, "tk_" + "a" * 29)  # a token the server does not know
    else:
        world, phone = _world(tmp_path, ntfy, "tk_" + "b" * 29, server=f"http://127.0.0.1:{free_port()}")
    proc = world.start()
    try:
        wait_for(lambda: _role_health(world, proc).get("subscription") == why, 30, why)
        beat = _role_health(world, proc)
        assert health.alive(beat) and not health.is_stale(beat, time.time())  # running, heartbeat fresh
        started = time.monotonic()
        assert _printed(phone.ask(), timeout=WAIT) == b""
        assert time.monotonic() - started < 5
        assert "approval_until" not in phone.request()
    finally:
        _stop(proc)


def test_an_allow_is_answered_while_a_reply_waits_on_a_slow_agent_command(
    tmp_path: Path, server: tuple[RealNtfy, str]
) -> None:
    """Issue 34 item 3. A Continue tap goes into the open Codex thread through `codex queue`, which
    takes 45 s; meanwhile a permission prompt's Allow is tapped. The role answers the Allow at once
    (the hook prints it), keeps its heartbeat, and stops promptly, killing the hung command. Before,
    the role ran `codex queue` on its only thread: the Allow expired unanswered and the heartbeat
    went stale."""
    ntfy, token = server
    world, phone = _world(tmp_path, ntfy, token)
    codex = Path(world.env["PATH"].split(os.pathsep)[0]) / "codex"
    codex.write_text(SLOW_QUEUE.format(python=sys.executable, sleep=QUEUE_SLEEP))
    locks = world.codex_home / "thread-writer-locks"
    locks.mkdir(parents=True)
    with open(locks / f"{THREAD}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the thread is open in a TUI: the reply is queued into it
        proc = world.start()
        try:
            wait_for(lambda: _role_health(world, proc).get("subscription") == "subscribed", 30, "subscribed")
            world.turn("turn-2", done=True)
            world.notified("turn-2")
            (button,) = world.buttons(turn="turn-2")
            world.tap(button)
            wait_for(lambda: any(c[0] == "queue" for c in world.codex_calls()), 30, "codex queue to start")
            queue_started = time.monotonic()

            asking = phone.ask()
            request = phone.request()
            _tap(ntfy, token, phone.ticket(request, "allow"))
            assert json.loads(_printed(asking, timeout=WAIT + 10)) == ALLOW
            assert time.monotonic() - queue_started < 15  # well before `codex queue` answered

            first = _role_health(world, proc).get("heartbeat_at")
            wait_for(lambda: _role_health(world, proc).get("heartbeat_at") != first, 15, "a heartbeat meanwhile")
            assert time.monotonic() - queue_started < QUEUE_SLEEP  # the command is still running
            assert _role_health(world, proc).get("steps_running") == 1
        finally:
            _stop(proc)
    assert proc.returncode == 0
