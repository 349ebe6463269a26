"""The notification account's credentials in the server URL (`https://user:password@host`) and reply
to continue (issue 26 item 3): a button never carries them (everyone who reads the notification
topic sees its buttons), and the wake role authenticates with them where delivery does.

Against the ntfy stand-in with access control: the account may read the reply topic, the phone's
`wake_token` user may only write to it, and nobody else may do anything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for
from support.wake_world import WakeWorld, statuses

pytestmark = pytest.mark.usefixtures("no_outside_config")

PASSWORD = "pw-Account-S3cret"
PHONE_TOKEN = "tk_phonerepliesonly0123456789abc"


@pytest.fixture()
def locked_server() -> Iterator[NtfyStandin]:
    with NtfyStandin(
        users={"phil": PASSWORD, "phone": "phone-pw"},
        tokens={PHONE_TOKEN: "phone"},
        default_access="deny-all",
        access={"phil": {"*": "read-write"}, "phone": {"replies-topic": "write-only"}},
    ) as srv:
        yield srv


def _userinfo_world(tmp_path: Path, srv: NtfyStandin) -> WakeWorld:
    world = WakeWorld(tmp_path, srv)
    world.settings_data.update(
        server=srv.url.replace("://", f"://phil:{PASSWORD}@"),
        wake_allow_unauthenticated=False,
        wake_token=PHONE_TOKEN,
    )
    world.write_config()
    return world


def test_a_button_never_carries_the_servers_userinfo(tmp_path: Path, locked_server: NtfyStandin) -> None:
    srv = locked_server
    world = _userinfo_world(tmp_path, srv)
    (button,) = world.buttons()
    assert button["url"] == f"{srv.url}/replies-topic"
    assert PASSWORD not in json.dumps(button) and "phil" not in json.dumps(button)
    assert button["headers"] == {"Authorization": f"Bearer {PHONE_TOKEN}"}  # the phone's own, write-only user


def test_the_wake_role_authenticates_with_the_servers_userinfo(tmp_path: Path, locked_server: NtfyStandin) -> None:
    """No token, no username/password keys: the URL's user-info is the account, as for delivery. The role
    starts (no 'needs an access token'), reads the locked reply topic and starts the one turn."""
    world = _userinfo_world(tmp_path, locked_server)
    (button,) = world.buttons()
    world.tap(button)
    result = world.worker("--once")
    assert result.returncode == 0, result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    wait_for(lambda: len(world.rollout_turns()) == 2, 10, "the new turn")
    world.worker("--once")
    assert statuses(world) == [("confirmed", None)]
    assert PASSWORD not in (world.state.root / "health" / "wake.json").read_text()


def test_the_wake_role_never_sends_the_account_in_clear_text_to_another_host(tmp_path: Path, srv: NtfyStandin) -> None:
    """As delivery: credentials over plain http:// to a host that is not loopback are refused (exit 78)."""
    world = WakeWorld(tmp_path, srv)
    world.settings_data.update(server=f"http://phil:{PASSWORD}@192.0.2.1:9", wake_allow_unauthenticated=False)
    world.write_config()
    result = world.worker("--once")
    assert result.returncode == 78 and "refusing to send credentials over plain http://" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
