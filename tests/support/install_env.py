"""Helpers for the install/uninstall/doctor tests: isolated homes and a recording command runner.

The runner is the one stand-in these tests use: systemctl, launchctl and schtasks cannot run on
the test machine, so the tests assert the exact argv install/doctor would run instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from donebell.shared.process.runner import Completed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "install"


class RecordingRunner:
    """Records every argv; answers from ``results`` (prefix match on argv), else exit 0."""

    def __init__(
        self,
        results: dict[tuple[str, ...], Completed] | None = None,
        programs: dict[str, str] | None = None,
    ) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.results = results or {}
        self.programs = programs or {}

    def run(self, argv: list[str], *, timeout: float = 30.0) -> Completed:
        call = tuple(argv)
        self.calls.append(call)
        for prefix, result in self.results.items():
            if call[: len(prefix)] == prefix:
                return result
        return Completed(call, 0, "", "")

    def which(self, program: str) -> str | None:
        return self.programs.get(program)


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Point every folder install, uninstall and doctor use at fresh folders under ``tmp_path``."""
    paths = {
        "home": tmp_path / "home",
        "codex": tmp_path / "home" / ".codex",
        "claude": tmp_path / "home" / ".claude",
        "config": tmp_path / "home" / ".config" / "donebell" / "config.json",
        "state": tmp_path / "home" / ".local" / "state" / "donebell",
        "xdg_config": tmp_path / "home" / ".config",
    }
    for name in ("codex", "claude"):
        paths[name].mkdir(parents=True)
    for name in list(os.environ):
        if name.startswith("DONEBELL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(paths["home"]))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(paths["xdg_config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / ".local" / "state"))
    monkeypatch.setenv("CODEX_HOME", str(paths["codex"]))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(paths["claude"]))
    monkeypatch.delenv("CODEX_SQLITE_HOME", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)  # ~/.copilot under the fresh HOME
    return paths


def copy_fixture(name: str, dest: Path) -> Path:
    """Copy a file from tests/fixtures/install/ to ``dest`` byte for byte."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / name, dest)
    return dest
