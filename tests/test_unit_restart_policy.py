"""The shipped systemd unit does not restart a broken configuration in a loop: it names the exit
status `donebell run` really uses for a configuration error. Real processes, real systemd tools."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.supervisor.install.service import render_systemd
from support.install_env import isolate


def test_the_unit_prevents_restarts_on_the_config_error_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(paths["state"]))
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    paths["config"].parent.mkdir(parents=True)
    paths["config"].write_text(json.dumps({"topic": "donebell-x", "priority": 9}))
    run = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "run"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 78 and "priority" in run.stderr
    unit = render_systemd("/opt/donebell/bin/donebell", {})
    assert f"RestartPreventExitStatus={run.returncode}\n" in unit and "Restart=on-failure\n" in unit
    if shutil.which("systemd-analyze"):
        unit_file = tmp_path / "donebell.service"
        unit_file.write_text(unit.replace("/opt/donebell/bin/donebell", "/bin/true"))
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(unit_file)], capture_output=True, text=True, timeout=60
        )
        assert verify.returncode == 0, verify.stderr
