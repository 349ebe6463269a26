"""No user service manager (a container, an SSH session without a systemd user instance): install
refuses before writing anything and says the two ways on; doctor and uninstall say what is true.

Real `donebell` processes and the real `systemctl`: the environment points the user bus at a
folder that does not exist, so `systemctl --user` fails the way it does without a user manager
("Failed to connect to bus") on any machine, this one included.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.install_env import copy_fixture, isolate

pytestmark = pytest.mark.skipif(shutil.which("systemctl") is None, reason="needs the real systemctl")


def _donebell(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(paths["state"]))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-runtime-dir"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-runtime-dir' / 'bus'}")
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    return paths


@pytest.mark.parametrize("service_args", [[], ["--service", "systemd"]], ids=["default", "explicit"])
def test_install_refuses_before_writing_anything(home: dict[str, Path], service_args: list[str]) -> None:
    before = _tree(home["home"])
    res = _donebell("install", *service_args)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "no systemd user manager is reachable" in res.stdout and "Failed to connect to bus" in res.stdout
    assert "nothing was changed" in res.stdout
    assert "--service none" in res.stdout and "loginctl enable-linger" in res.stdout
    assert "Stop hook" not in res.stdout  # no success header, no "added"
    assert _tree(home["home"]) == before  # no unit file, no config, no agent edit


def test_the_ways_on_work_and_doctor_points_at_them(home: dict[str, Path]) -> None:
    res = _donebell("install", "--service", "none")
    assert res.returncode == 0, res.stdout
    doc = json.loads(_donebell("doctor", "--json").stdout)
    [service] = [c for c in doc["checks"] if c["name"] == "service"]
    assert service["status"] == "warn" and "no systemd user manager is reachable" in service["summary"]
    # the way already taken is not offered again: the step is to keep `donebell run` running
    assert "install --service none" not in service["next_step"], service["next_step"]
    assert "keep it running under your own supervisor" in service["next_step"]
    assert "enable-linger" in service["next_step"]


def test_uninstall_reports_only_what_happened(home: dict[str, Path]) -> None:
    """A unit left behind by an older install: removed, and not claimed stopped or disabled."""
    unit = home["xdg_config"] / "systemd" / "user" / "donebell.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/x/donebell run\n")
    res = _donebell("uninstall", "--service", "systemd")
    assert res.returncode == 0, res.stdout
    assert f"{unit}: removed; nothing stopped or disabled: no systemd user manager is reachable" in res.stdout
    assert "stopped, disabled and removed" not in res.stdout
    assert not unit.exists()
