"""Uninstall leaves the user's files as they were: one backup per file (the oldest, named in the
output), and no stale Codex trust entry for the hook it removed. Real `donebell` processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from support.install_env import copy_fixture, isolate


def _donebell(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _trust_like_codex(codex_home: Path) -> str:
    """Append what Codex 0.171's `/hooks` "trust all" writes for the donebell hook; returns its key."""
    [hook] = donebell_stop_hooks(codex_home)
    with open(codex_home / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[hooks.state]\n\n[hooks.state."{hook.key}"]\ntrusted_hash = "{hook.current_hash}"\n')
    assert donebell_stop_hooks(codex_home)[0].status == "trusted"
    return hook.key


def test_install_uninstall_cycles_keep_one_backup_and_no_trust_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    files = {
        paths["codex"] / "hooks.json": copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json"),
        paths["codex"] / "config.toml": copy_fixture("codex-config.toml", paths["codex"] / "config.toml"),
        paths["claude"] / "settings.json": copy_fixture("claude-settings.json", paths["claude"] / "settings.json"),
    }
    original = {path: path.read_bytes() for path in files}
    for _ in range(2):
        assert _donebell("install", "--service", "none").returncode == 0
        key = _trust_like_codex(paths["codex"])
        res = _donebell("uninstall", "--service", "none")
        assert res.returncode == 0, res.stdout + res.stderr
    assert key not in (paths["codex"] / "config.toml").read_text()
    assert "removed Codex's trust entry" in res.stdout
    for path, data in original.items():
        assert path.read_bytes() == data, path
        backups = sorted(path.parent.glob(path.name + ".donebell-backup-*"))
        assert len(backups) == 1, backups
        assert backups[0].read_bytes() == data  # the oldest: the file before donebell touched it
        assert f"backup kept: {backups[0]}" in res.stdout


def test_trust_entries_of_other_hooks_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the removed hook's entry goes; a user's own trusted hook keeps its entry and table."""
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    config = paths["codex"] / "config.toml"
    config.write_text('model = "m"\n')
    assert _donebell("install", "--codex", "--service", "none").returncode == 0
    ours = _trust_like_codex(paths["codex"])
    with open(config, "a", encoding="utf-8") as f:
        f.write('\n[hooks.state."/elsewhere/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:00"\n')
    assert _donebell("uninstall", "--codex", "--service", "none").returncode == 0
    text = config.read_text()
    assert ours not in text and '[hooks.state."/elsewhere/hooks.json:stop:0:0"]' in text
    assert text.startswith('model = "m"\n')
