"""Reply to continue against the real ntfy servers (2.11 and 2.27), set up exactly as docs/wake.md says.

The server runs with an auth file and ``auth-default-access: deny-all``; the ``ntfy user|access|
token`` commands are read out of docs/wake.md's "Self-hosted ntfy" block and run one by one, so
the documented setup is the tested one. The agent is the stand-in ``codex`` of
tests/support/wake_world.py (the real CLIs are in tests/e2e/test_wake.py).
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.delivery_kit import outbox_record
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, serve_module
from support.waiting import wait_for
from support.wake_world import THREAD, WakeWorld, statuses

pytestmark = pytest.mark.usefixtures("no_outside_config")

REPO = Path(__file__).resolve().parent.parent
TOPIC = "donebell-notes-Hq3vT8sK2mXp9wZr4bYc1d"  # the shape `config init` writes
WAKE_TOPIC = "donebell-replies-Lk5nR7tJ0qWe2uXa8sDf"
PASSWORD = "a-password-from-the-admin"


def documented_setup() -> list[list[str]]:
    """The `ntfy …` commands of docs/wake.md's "Self-hosted ntfy" block, placeholders filled in."""
    text = (REPO / "docs" / "wake.md").read_text(encoding="utf-8")
    section = text.split("### Self-hosted ntfy", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "auth-default-access: deny-all" in block
    commands = []
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("ntfy "):
            line = line.replace("<wake_topic>", WAKE_TOPIC).replace("<topic>", TOPIC)
            commands.append(shlex.split(line)[1:])
    return commands


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def setup(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[RealNtfy, dict[str, str]]]:
    """The server and the tokens the documented commands made: {"donebell": tk_…, "phone-replies": tk_…}."""
    root = tmp_path_factory.mktemp("ntfy-wake")
    for server in serve_module(root, default_access="deny-all", suite=request.param):
        tokens: dict[str, str] = {}
        for argv in documented_setup():
            if argv[:2] == ["user", "add"]:
                server.user_add(argv[2], PASSWORD)  # the password prompt, answered through NTFY_PASSWORD
            elif argv[:2] == ["token", "add"]:
                tokens[argv[2]] = server.token_add(argv[2])
            else:
                server.admin(*argv)
        assert set(tokens) == {"donebell", "phone-replies"}, tokens
        yield server, tokens


@pytest.fixture()
def world(tmp_path: Path, setup: tuple[RealNtfy, dict[str, str]]) -> WakeWorld:
    """docs/wake.md's donebell config: `token`, `wake_enabled`, `wake_token`; no unauthenticated wake."""
    server, tokens = setup
    world = WakeWorld(tmp_path, server)
    world.settings_data.pop("wake_allow_unauthenticated")
    world.settings_data.update(
        topic=TOPIC, wake_topic=WAKE_TOPIC, token=tokens["donebell"], wake_token=tokens["phone-replies"]
    )
    world.write_config()
    return world


def _post(url: str, body: str, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(url, content=body.encode(), headers=headers, timeout=5).status_code


def _next_turn(world: WakeWorld) -> dict[str, Any]:
    """The newest ended turn of the thread, notified (a sent receipt); its one button."""
    turn = world.rollout_turns()[-1]
    world.notified(turn)
    (button,) = world.buttons(turn=turn)
    return button


def test_the_documented_setup_accepts_the_tap_and_refuses_everything_else(
    world: WakeWorld, setup: tuple[RealNtfy, dict[str, str]]
) -> None:
    """A real notification carries the button as ntfy stores it; the tap it describes is accepted;
    the same ticket without a token, or with the reply token on another topic, is refused by ntfy;
    donebell's subscription reads the reply topic with its own token and starts the one turn."""
    server, tokens = setup
    world.turn("turn-2", done=True)
    world.state.create("outbox", outbox_record(thread_id=THREAD, turn_id="turn-2"))
    sent = subprocess.run(world_cli("worker", "delivery", "--once"), env=world.env, capture_output=True, text=True)
    assert sent.returncode == 0 and world.state.count("outbox") == 0, sent.stderr
    stranger = httpx.get(f"{server.url}/{TOPIC}/json", params={"poll": "1"}, timeout=5)
    assert stranger.status_code == 403  # nobody without an account reads the buttons
    [stored] = _read_as_me(server, TOPIC)  # `ntfy access me '<topic>' read-only`, as the phone reads it
    [button] = stored["actions"]
    assert button["action"] == "http" and button["url"] == f"{server.url}/{WAKE_TOPIC}"
    assert button["headers"] == {"Authorization": f"Bearer {tokens['phone-replies']}"}

    replies = tokens["phone-replies"]
    assert _post(button["url"], button["body"], None) == 403  # no token: deny-all
    assert _post(f"{server.url}/{TOPIC}", button["body"], replies) == 403  # write-only on the reply topic only
    assert _post(f"{server.url}/donebell-elsewhere", button["body"], replies) == 403
    assert httpx.get(f"{server.url}/{WAKE_TOPIC}/json?poll=1", timeout=5).status_code == 403
    reader = httpx.get(f"{server.url}/{WAKE_TOPIC}/json?poll=1", headers=button["headers"], timeout=5)
    assert reader.status_code == 403  # the button's token cannot read other people's tickets
    assert _post(f"{server.url}/{TOPIC}", "spoofed", None) == 403  # the phone's read access is read-only

    world.tap(button)  # exactly what the ntfy app sends for the action: accepted (200)
    handled = world.worker("--once")
    assert handled.returncode == 0, handled.stderr
    wait_for(lambda: len(world.rollout_turns()) == 3, 15, "the new turn")
    world.worker("--once")
    assert statuses(world) == [("confirmed", None)]
    assert world.codex_calls() == [["exec", "resume", THREAD, "continue please"]]
    outputs = sent.stdout + sent.stderr + handled.stdout + handled.stderr
    assert tokens["donebell"] not in outputs and replies not in outputs


def test_replies_across_server_and_donebell_restarts_are_handled_once(
    world: WakeWorld, setup: tuple[RealNtfy, dict[str, str]]
) -> None:
    """The stream survives an ntfy restart; a reply posted while the wake role was down is handled
    once when it comes back (since=), an expired ticket is refused, nothing is handled twice."""
    server, _ = setup
    proc = world.start()
    try:
        wait_for(lambda: _health(world).get("subscription") == "subscribed", 20, "subscribed")
        world.tap(_next_turn(world))
        wait_for(lambda: statuses(world) == [("confirmed", None)], 30, "the first tap")

        server.restart()  # same port and cache file
        wait_for(lambda: _health(world).get("connects", 0) >= 2, 60, "a reconnect after the restart")
        world.tap(_next_turn(world))
        wait_for(lambda: statuses(world).count(("confirmed", None)) == 2, 30, "the tap after the restart")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    assert proc.returncode == 0

    turn = world.rollout_turns()[-1]  # the wake role is down now
    world.notified(turn)
    (stale,) = world.buttons(turn=turn, wake_ticket_ttl_seconds=0.5)
    world.tap(stale)
    time.sleep(1.1)  # it expires before the role is back
    (fresh,) = world.buttons(turn=turn)
    world.tap(fresh)
    proc = world.start()
    try:
        wait_for(lambda: statuses(world).count(("confirmed", None)) == 3, 30, "the reply posted while down")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    world.worker("--once")  # once more from the stored cursor: nothing new
    assert sorted(statuses(world)) == [("confirmed", None)] * 3 + [("refused", "expired")]
    assert len(world.codex_calls()) == 3 and len(world.rollout_turns()) == 4


def _read_as_me(server: RealNtfy, topic: str) -> list[dict[str, Any]]:
    """The topic's messages as the user's own account (`me`, docs/wake.md) reads them in the app."""
    reply = httpx.get(f"{server.url}/{topic}/json", params={"poll": "1"}, auth=("me", PASSWORD), timeout=5)
    reply.raise_for_status()
    return [m for m in map(json.loads, reply.text.splitlines()) if m.get("event") == "message"]


def _health(world: WakeWorld) -> dict[str, Any]:
    return world.state.read_health("wake") or {}


def world_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "donebell.supervisor.cli", *args]


def test_the_documented_commands_are_the_ones_run() -> None:
    """docs/wake.md's block still holds the eight commands the fixture runs (a rename shows here), and
    none of them lets everyone read a topic."""
    commands = documented_setup()
    verbs = [" ".join(argv[:2]) for argv in commands]
    assert verbs == [
        "user add",
        "access donebell",
        "token add",
        "user add",
        "access phone-replies",
        "token add",
        "user add",
        "access me",
    ]
    assert commands[-1] == ["access", "me", TOPIC, "read-only"]
    assert not [argv for argv in commands if argv[:2] in (["access", "*"], ["access", "everyone"])]
    assert re.fullmatch(r"donebell-\S+", TOPIC) and re.fullmatch(r"donebell-\S+", WAKE_TOPIC)


def _doctor_wake(world: WakeWorld) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "doctor", "--json"]
    out = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=60, check=False)
    [check] = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "wake"]
    return dict(check)


def test_doctor_checks_the_documented_acls_against_the_server(
    world: WakeWorld, setup: tuple[RealNtfy, dict[str, str]]
) -> None:
    """The documented setup passes; a wake_token that can do more (donebell's own) is a warning; one
    that may not post to the reply topic is a failure naming the `ntfy access … write-only` line."""
    server, tokens = setup
    assert _doctor_wake(world)["status"] == "ok"

    world.settings_data["wake_token"] = tokens["donebell"]
    world.write_config()
    check = _doctor_wake(world)
    assert check["status"] == "warn" and "post to the notification topic" in check["summary"], check

    server.user_add("stranger", PASSWORD)
    world.settings_data["wake_token"] = server.token_add("stranger")
    world.write_config()
    check = _doctor_wake(world)
    assert check["status"] == "fail" and "every tap fails" in check["summary"], check
    assert check["next_step"].startswith(f"on the server: `ntfy access stranger '{WAKE_TOPIC}' write-only`")
    assert world.settings_data["wake_token"] not in json.dumps(check)


def _doctor_checks(world: WakeWorld, *names: str) -> dict[str, dict[str, Any]]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "doctor", "--json"]
    out = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=60, check=False)
    return {c["name"]: dict(c) for c in json.loads(out.stdout)["checks"] if c["name"] in names}


def test_doctor_passes_only_while_the_notification_topic_is_private(
    world: WakeWorld, setup: tuple[RealNtfy, dict[str, str]]
) -> None:
    """Issue 34 item 4: the documented setup passes `wake` and `approvals`; the old docs' line
    (`ntfy access '*' '<topic>' read-only`) makes both fail, naming the line that closes the topic;
    run as named, that line makes both pass again, and `me` still reads the topic. Doctor published
    nothing and read no message."""
    server, _tokens = setup
    world.settings_data["approvals_enabled"] = True
    world.write_config()
    before = len(_read_as_me(server, TOPIC))
    checks = _doctor_checks(world, "wake", "approvals")
    assert checks["wake"]["status"] == "ok" and checks["approvals"]["status"] != "fail", checks

    server.access("*", TOPIC, "read-only")  # what docs/wake.md used to say
    try:
        checks = _doctor_checks(world, "wake", "approvals")
        fix = f"ntfy access '*' '{TOPIC}' deny"
        for name in ("wake", "approvals"):
            assert checks[name]["status"] == "fail", checks[name]
            assert "anyone can read the notification topic" in checks[name]["summary"]
            assert f"`{fix}`" in checks[name]["next_step"]
    finally:
        server.admin(*shlex.split(fix)[1:])  # the line doctor named, as the administrator runs it
    checks = _doctor_checks(world, "wake", "approvals")
    assert checks["wake"]["status"] == "ok" and checks["approvals"]["status"] != "fail", checks
    assert httpx.get(f"{server.url}/{TOPIC}/json", params={"poll": "1"}, timeout=5).status_code == 403
    assert len(_read_as_me(server, TOPIC)) == before  # nothing published; `me` still reads it


def test_on_a_server_without_accounts_doctor_says_the_topic_name_is_the_only_key(tmp_path: Path) -> None:
    """A public server (no auth file): nothing can close the topic; doctor says so instead of `ok`."""
    with RealNtfy(tmp_path / "open-server", default_access=None) as server:
        world = WakeWorld(tmp_path / "world", server)  # wake_allow_unauthenticated, no token
        check = _doctor_checks(world, "wake")["wake"]
        assert check["status"] == "warn" and "the topic name is the only key" in check["summary"], check
        assert server.poll(world.settings_data["topic"]) == []  # nothing published
