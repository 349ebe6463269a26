"""The first notification after the delivery role starts costs no more than the next ones.

Building an httpx transport parses the CA bundle (tens of ms of CPU, over 100 ms on a busy
machine). Built at the first POST, that cost sat between a promotion and its notification: the
first task after a start was notified 115-180 ms after the idle grace instead of a few ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared.statedir import now
from support.delivery_kit import Env
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")


def _refuse_new_transports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        built.append("transport")
        raise AssertionError("a transport was built during a delivery pass")

    monkeypatch.setattr(httpx, "HTTPTransport", refuse)
    return built


def test_the_first_post_reuses_the_transport_built_at_setup(
    srv: NtfyStandin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, server=srv.url)
    role = env.role()  # setup() ran: the role is waiting for work
    built = _refuse_new_transports(monkeypatch)
    rec = env.queue()
    role.pass_at(now())
    assert built == []
    assert env.state.locate(rec["key"]) == "sent" and len(srv.messages()) == 1
    role.teardown()


def test_a_refused_configuration_builds_nothing_at_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No topic: delivery is blocked by the configuration, so setup has no route to prepare."""
    env = Env(tmp_path, server="http://127.0.0.1:9")
    env.write_config(server="http://127.0.0.1:9", topic="")
    built = _refuse_new_transports(monkeypatch)
    role = env.role()
    assert built == [] and role.config_problem is not None
    role.teardown()
