"""Fixtures of the reliability suite: one process spawner per session, a stand-in and a rig per test.

Sizes: every storm has a small default and a full size behind ``DONEBELL_FULL_STORMS=1``
(``support.runner.size``); docs/reliability.md lists both and the figures of a full run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.records import STRICT_ENV
from support.ntfy_standin import NtfyStandin
from support.rig import Rig
from support.runner import Spawner, make_spawner

#: Variables of this suite itself (not donebell settings) that survive the clean-up below.
KEEP_ENV = ("DONEBELL_FULL_STORMS", "DONEBELL_RELIABILITY_SPAWN", "DONEBELL_FIGURES_FILE", STRICT_ENV)


@pytest.fixture(autouse=True)
def _no_outside_donebell_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("DONEBELL_") and name not in KEEP_ENV:
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def spawner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spawner]:
    """Starts real donebell processes (fork server by default, plain exec in full mode)."""
    spawner = make_spawner(tmp_path_factory.mktemp("spawn"))
    yield spawner
    spawner.close()


@pytest.fixture()
def standin() -> Iterator[NtfyStandin]:
    with NtfyStandin() as srv:
        yield srv


@pytest.fixture()
def make_rig(tmp_path: Path, spawner: Spawner, standin: NtfyStandin) -> Callable[..., Rig]:
    """``make_rig(name="rig", **config)``: a private installation talking to this test's stand-in."""

    def make(name: str = "rig", server: str | None = None, **config: Any) -> Rig:
        topic = f"rel-{secrets.token_hex(6)}"
        return Rig(tmp_path / name, spawner, server or standin.url, topic, **config)

    return make


@pytest.fixture()
def rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig()
