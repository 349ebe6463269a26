"""doctor names a service launcher whose program is gone (a removed venv, a moved pipx home).

The launchers are the ones install renders (its own render functions, real files in an isolated
HOME); doctor runs as the real command in a subprocess and is read through `--json`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from donebell.supervisor.install.service import render_launchd, render_systemd, render_task
from donebell.workers.kit.install.managed import donebell_executable


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    return env | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CODEX_HOME": str(home / ".codex"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "LOCALAPPDATA": str(home / "AppData" / "Local"),
        "DONEBELL_SERVER": "http://127.0.0.1:9",
    }


def _launcher_checks(home: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "donebell", "doctor", "--json"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    checks: list[dict[str, Any]] = json.loads(result.stdout)["checks"]
    return [c for c in checks if c["name"] == "launcher"]


@pytest.fixture
def old_install(tmp_path: Path) -> Path:
    """A second install's script (a copy of this one's), in a venv folder the test can remove."""
    bin_dir = tmp_path / "old venv" / "bin"  # a space: the unit quotes it, doctor must unquote it
    bin_dir.mkdir(parents=True)
    script = bin_dir / "donebell"
    shutil.copy2(donebell_executable(), script)
    shutil.copy2(donebell_executable(), bin_dir / "pythonw.exe")
    return script


def _write(path: Path, text: str, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)


def test_doctor_fails_when_the_service_program_was_removed(tmp_path: Path, old_install: Path) -> None:
    """Each launcher is OK while its program exists and FAILS, naming it, once the venv is gone."""
    home = tmp_path / "home"
    env = {"DONEBELL_STATE_DIR": str(home / "state")}
    _write(home / ".config" / "systemd" / "user" / "donebell.service", render_systemd(str(old_install), env))
    plist = render_launchd(str(old_install), env, str(home / "donebell.log"))
    _write(home / "Library" / "LaunchAgents" / "com.donebell.agent.plist", plist)
    task = render_task(str(old_install.with_name("pythonw.exe")), "ana", str(home))
    _write(home / "AppData" / "Local" / "donebell" / "donebell-task.xml", task, encoding="utf-16")

    before = _launcher_checks(home)
    assert [c["status"] for c in before] == ["ok", "ok", "ok"], before
    assert [c["details"]["program"] for c in before] == [str(old_install)] * 2 + [
        str(old_install.parent / "pythonw.exe")
    ]

    shutil.rmtree(old_install.parent.parent)  # the venv is removed
    after = _launcher_checks(home)
    assert [c["status"] for c in after] == ["fail", "fail", "fail"], after
    for found in after:
        assert "no longer exists" in found["summary"] and found["details"]["program"] in found["summary"]
        assert "donebell install" in found["next_step"]


def test_no_launcher_no_check(tmp_path: Path) -> None:
    """Without an installed service there is nothing to check (status and service say the rest)."""
    assert _launcher_checks(tmp_path / "home") == []
