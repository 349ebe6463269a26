"""`install --service launchd` on Linux once wrote the hooks and the plist, then failed (exit 1):
half an install. Every service path now either completes or changes nothing (issue 24, item 7):
the real service-manager call fails here (no launchctl on Linux), and every file, backup and
folder is as before."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest
from donebell.shared.process.runner import Completed, SubprocessRunner
from donebell.supervisor.install.command import main_install
from support.install_env import RecordingRunner, copy_fixture, isolate


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    copy_fixture("claude-settings.json", paths["claude"] / "settings.json")
    return paths


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.skipif(sys.platform == "darwin" or shutil.which("launchctl") is not None, reason="launchctl exists")
def test_launchd_on_linux_changes_nothing(home: dict[str, Path]) -> None:
    before = _tree(home["home"])
    out = io.StringIO()
    code = main_install(["--codex", "--claude", "--service", "launchd"], runner=SubprocessRunner(), out=out)
    assert code == 1, out.getvalue()
    assert "failed: launchctl bootstrap" in out.getvalue() and "nothing was changed" in out.getvalue()
    assert _tree(home["home"]) == before  # no hook, no plist, no backup, no config, no new folder


def test_a_failing_service_manager_after_the_files_changes_nothing(home: dict[str, Path]) -> None:
    """systemd answered the probe, then daemon-reload failed: hooks, unit and config all go back."""
    before = _tree(home["home"])
    bus = Completed((), 1, "", "Failed to connect to bus: No medium found\n")
    runner = RecordingRunner({("systemctl", "--user", "daemon-reload"): bus}, programs={"systemctl": "/bin/systemctl"})
    out = io.StringIO()
    code = main_install(["--codex", "--claude", "--service", "systemd"], runner=runner, out=out)
    assert code == 1 and "nothing was changed" in out.getvalue()
    assert _tree(home["home"]) == before
    reload_at = runner.calls.index(("systemctl", "--user", "daemon-reload"))
    assert ("systemctl", "--user", "disable", "--now", "donebell.service") in runner.calls[reload_at:]


def test_a_failed_update_restores_the_running_service_without_stopping_it(
    home: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older unit runs; the new one cannot be loaded: the old unit comes back and nothing is stopped."""
    systemctl = {"systemctl": "/bin/systemctl"}
    assert (
        main_install(["--codex", "--service", "systemd"], runner=RecordingRunner(programs=systemctl), out=io.StringIO())
        == 0
    )
    before = _tree(home["home"])
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(home["home"] / "elsewhere"))  # a changed unit
    bus = Completed((), 1, "", "Failed to connect to bus: No medium found\n")
    runner = RecordingRunner({("systemctl", "--user", "daemon-reload"): bus}, programs=systemctl)
    assert main_install(["--codex", "--service", "systemd"], runner=runner, out=io.StringIO()) == 1
    assert _tree(home["home"]) == before
    assert not any("disable" in call for call in runner.calls)


def test_the_default_service_falls_back_to_hooks_only_without_its_launcher_file(home: dict[str, Path]) -> None:
    """Not asked for by name: the hooks stay (exit 0, the documented fallback), the unit file goes."""
    bus = Completed((), 1, "", "Failed to connect to bus: No medium found\n")
    runner = RecordingRunner({("systemctl", "--user", "daemon-reload"): bus}, programs={"systemctl": "/bin/systemctl"})
    out = io.StringIO()
    code = main_install(["--codex"], runner=runner, out=out)
    assert code == 0 and "a notification still goes out after each hook" in out.getvalue()
    assert "donebell" in (home["codex"] / "hooks.json").read_text()
    assert not (home["xdg_config"] / "systemd" / "user" / "donebell.service").exists()
