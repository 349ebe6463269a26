"""The agent a reply starts gets the user's environment minus donebell's (issue 26 item 4).

The wake role runs with donebell's secrets and settings in its environment (`DONEBELL_TOKEN`,
`DONEBELL_WAKE_TOKEN`, any `DONEBELL_<KEY>`, systemd's notify socket): the woken agent, and every
tool it runs, must see none of them. Only the two locations (`DONEBELL_CONFIG`,
`DONEBELL_STATE_DIR`) pass, so that the woken turn's own hook reports to this installation.
Through the real spawn path: a tap, `donebell worker wake`, the stand-in `codex` on PATH dumping
the environment it was started with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.ntfy_standin import NtfyStandin
from support.waiting import wait_for
from support.wake_world import WakeWorld

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOKEN = "tk_donebellaccount0123456789abc"
WAKE_TOKEN = "tk_donebellphone0123456789abcde"


def test_the_woken_agent_sees_no_donebell_secret_or_setting(tmp_path: Path, srv: NtfyStandin) -> None:
    world = WakeWorld(tmp_path, srv)
    dump = tmp_path / "agent-env.json"
    (button,) = world.buttons()
    world.tap(button)
    result = world.worker(
        "--once",
        FAKE_CODEX_ENV=str(dump),
        DONEBELL_TOKEN=TOKEN,
        DONEBELL_WAKE_TOKEN=WAKE_TOKEN,
        DONEBELL_INCLUDE_MESSAGE="true",
        NOTIFY_SOCKET="/run/user/0/systemd/notify",
        WATCHDOG_USEC="1000000",
        USERS_OWN_SETTING="kept",
    )
    assert result.returncode == 0, result.stderr
    wait_for(dump.exists, 10, "the agent's environment")
    env = json.loads(dump.read_text())
    assert sorted(k for k in env if k.startswith("DONEBELL_")) == ["DONEBELL_CONFIG", "DONEBELL_STATE_DIR"]
    assert env["DONEBELL_STATE_DIR"] == str(world.state.root)
    assert TOKEN not in json.dumps(env) and WAKE_TOKEN not in json.dumps(env)
    assert "NOTIFY_SOCKET" not in env and "WATCHDOG_USEC" not in env  # donebell's service channel
    assert env["USERS_OWN_SETTING"] == "kept" and env["CODEX_HOME"] == str(world.codex_home)
