"""install warns when the Codex notify it moves into chain_notify cannot start; doctor says so too.
Real `donebell install` and `donebell doctor` processes on real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.install_env import isolate


def _donebell(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _chain_check(doc: dict[str, object]) -> dict[str, object]:
    [check] = [c for c in doc["checks"] if c["name"] == "chain_notify"]  # type: ignore[attr-defined]
    return check  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("notify", "problem"),
    [
        (["/opt/gone/notifier", "--quiet"], "/opt/gone/notifier does not exist"),
        (["no-such-notifier-xyz"], "no-such-notifier-xyz is not found on PATH"),
    ],
)
def test_a_missing_previous_notify_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notify: list[str], problem: str
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    (paths["codex"] / "config.toml").write_text(f"notify = {json.dumps(notify)}\n")
    res = _donebell("install", "--codex", "--service", "none")
    assert res.returncode == 0, res.stderr
    assert f"warning: your previous notify cannot start ({problem})" in res.stdout
    assert json.loads(paths["config"].read_text())["chain_notify"] == notify  # kept: nothing is lost
    check = _chain_check(json.loads(_donebell("doctor", "--json").stdout))
    assert check["status"] == "warn" and problem in str(check["summary"])
    assert "donebell config unset chain_notify" in str(check["next_step"])


def test_an_existing_previous_notify_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    (paths["codex"] / "config.toml").write_text('notify = ["sh", "-c", "true"]\n')
    res = _donebell("install", "--codex", "--service", "none")
    assert res.returncode == 0 and "cannot start" not in res.stdout
    assert _chain_check(json.loads(_donebell("doctor", "--json").stdout))["status"] == "ok"
