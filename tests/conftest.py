"""Shared fixtures: every test gets its own state dir, config file and agent homes in tmp_path."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared.process.liveness import process_create_time
from donebell.shared.records import STRICT_ENV
from donebell.shared.statedir import StateDir
from support.ntfy_kit import OTHER_TOKEN, TOKEN
from support.ntfy_real import RealNtfy, serve_module
from support.ntfy_standin import NtfyStandin
from support.scanner_kit import born_ago

_FIGURES_AT = pytest.StashKey[tuple[str, int]]()
_FIGURES_TEMP = pytest.StashKey[str]()
#: Under test a record word outside its vocabulary raises (shared/records.py, ``_unknown``): in this
#: process and in the donebell processes the tests start with this environment.
os.environ[STRICT_ENV] = "1"


@pytest.fixture()
def no_outside_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop the developer shell's DONEBELL_* variables so they cannot change a test's settings.

    Delivery tests use it for the whole module: ``pytestmark = pytest.mark.usefixtures(...)``.
    """
    for name in list(os.environ):
        if name.startswith("DONEBELL_") and name != STRICT_ENV:
            monkeypatch.delenv(name)


@pytest.fixture()
def srv() -> Iterator[NtfyStandin]:
    """A fresh ntfy stand-in on 127.0.0.1 for one test."""
    with NtfyStandin() as server:
        yield server


@pytest.fixture(scope="module")
def deny_all_ntfy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNtfy]:
    """The real ntfy (2.11), deny-all, one per module: `donebell` may read and write donebell-*,
    `reader` only read it (the accounts of docs/troubleshooting.md's `access` cases)."""
    for server in serve_module(tmp_path_factory.mktemp("ntfy-deny-all"), default_access="deny-all"):
        server.user_add("donebell", "pw-donebell")
        server.access("donebell", "donebell-*", "rw")
        server.user_add("reader", "pw-reader")
        server.access("reader", "donebell-*", "read-only")
        yield server


@pytest.fixture()
def client(srv: NtfyStandin) -> Iterator[httpx.Client]:
    """An HTTP client of `srv` that does not follow redirects (the stand-in's own tests)."""
    with httpx.Client(base_url=srv.url, timeout=5, follow_redirects=False) as c:
        yield c


@pytest.fixture()
def locked() -> Iterator[NtfyStandin]:
    """A stand-in with auth on and deny-all: phil (TOKEN) may use alerts*, ben (OTHER_TOKEN) nothing."""
    with NtfyStandin(
        users={"phil": "secret", "ben": "pw"},
        tokens={TOKEN: "phil", OTHER_TOKEN: "ben"},
        access={"phil": {"alerts*": "read-write"}},
        default_access="deny-all",
    ) as s:
        yield s


@pytest.fixture()
def sleeper() -> Iterator[dict[str, Any]]:
    """A real live process to stand for the supervisor and its roles (pid + start time)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield {"pid": proc.pid, "create_time": process_create_time(proc.pid)}
    proc.kill()
    proc.wait()


@pytest.fixture()
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_outside_config: None) -> Iterator[dict[str, Path]]:
    """Point DONEBELL_*, CODEX_HOME, CLAUDE_CONFIG_DIR and COPILOT_HOME at fresh folders under tmp_path."""
    paths = {
        "state": tmp_path / "state",
        "config": tmp_path / "config" / "config.json",
        "codex_home": tmp_path / "codex",
        "claude_dir": tmp_path / "claude",
        "copilot_home": tmp_path / "copilot",
    }
    paths["codex_home"].mkdir()
    paths["claude_dir"].mkdir()
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(paths["state"]))
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    monkeypatch.setenv("CODEX_HOME", str(paths["codex_home"]))
    monkeypatch.delenv("CODEX_SQLITE_HOME", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(paths["claude_dir"]))
    monkeypatch.setenv("COPILOT_HOME", str(paths["copilot_home"]))  # not created: no Copilot here
    yield paths


@pytest.fixture()
def state(isolated_env: dict[str, Path]) -> StateDir:
    """A created state directory, created an hour ago: the recorded rollouts a test writes ended
    seconds to minutes "ago", after it (tests/test_first_week_replay.py covers a new one)."""
    return born_ago(StateDir(isolated_env["state"]).ensure(), 3600)


@pytest.fixture()
def probe_pools() -> Iterator[None]:
    """No remote-root probe worker before the test; the test's own are killed after it (after any
    mount abort). The remote-gate tests use it for the whole module: ``pytestmark``."""
    from support.remote_gate_kit import fresh_probe_pools

    yield from fresh_probe_pools()


def pytest_configure(config: pytest.Config) -> None:
    """The controller (not an ``-n`` worker) gives the reliability figures a file when none is set:
    under ``pytest -n`` the tests that measure them run in other processes (``support/figures``)."""
    if hasattr(config, "workerinput"):
        return
    path = os.environ.get("DONEBELL_FIGURES_FILE")
    if not path:
        fd, path = tempfile.mkstemp(prefix="donebell-figures-", suffix=".jsonl")
        os.close(fd)
        os.environ["DONEBELL_FIGURES_FILE"] = path
        config.stash[_FIGURES_TEMP] = path
    config.stash[_FIGURES_AT] = (path, os.path.getsize(path) if os.path.exists(path) else 0)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the figures the tests measured (docs/reliability.md quotes a full run of them)."""
    from support.figures import FIGURES, read_since

    path, offset = config.stash.get(_FIGURES_AT, (None, 0))
    figures = {name: dict(values) for name, values in FIGURES.items()}
    for name, values in (read_since(path, offset) if path else {}).items():
        figures.setdefault(name, {}).update(values)
    if figures:
        terminalreporter.section("reliability figures")
        for name, values in figures.items():
            terminalreporter.write_line(f"{name}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    temp = config.stash.get(_FIGURES_TEMP, None)
    if temp:
        with contextlib.suppress(OSError):
            os.unlink(temp)
