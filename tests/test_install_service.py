"""The service part of install/uninstall: the exact systemctl / launchctl / schtasks argv, the
launcher file written, and what happens when the service manager fails."""

from __future__ import annotations

import getpass
import io
import os
import plistlib
from pathlib import Path

import pytest
from donebell.shared.process.runner import Completed
from donebell.supervisor.install.command import main_install, main_uninstall
from donebell.workers.kit.install.managed import donebell_executable
from support.install_env import RecordingRunner, isolate

EXE = donebell_executable()
UNIT = "donebell.service"
LINGER_QUERY = ("loginctl", "show-user", getpass.getuser(), "--property=Linger")
PROBE = ("systemctl", "--user", "show-environment")  # is a user manager reachable?
SYSTEMCTL = {"systemctl": "/bin/systemctl"}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    monkeypatch.setenv("LOCALAPPDATA", str(paths["home"] / "AppData" / "Local"))
    return paths


def run_install(runner: RecordingRunner, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main_install(["--codex", *args], runner=runner, out=out), out.getvalue()


def run_uninstall(runner: RecordingRunner, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main_uninstall(["--codex", *args], runner=runner, out=out, stdin=io.StringIO()), out.getvalue()


def test_systemd_unit_is_written_then_reloaded_enabled_and_started(env: dict[str, Path]) -> None:
    """First install: unit file, daemon-reload, enable --now, and the linger hint."""
    runner = RecordingRunner(programs={"systemctl": "/bin/systemctl"})
    code, out = run_install(runner)
    assert code == 0, out
    assert runner.calls == [
        LINGER_QUERY,
        PROBE,
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "enable", "--now", UNIT),
    ]
    unit = (env["xdg_config"] / "systemd" / "user" / UNIT).read_text()
    assert f"ExecStart={EXE} run\n" in unit and "Type=notify" in unit and "Restart=on-failure" in unit
    assert "loginctl enable-linger $USER" in out


def test_systemd_second_install_only_makes_sure_it_runs(env: dict[str, Path]) -> None:
    """An unchanged unit is not rewritten or reloaded; lingering users get no hint."""
    run_install(RecordingRunner(programs={"systemctl": "/bin/systemctl"}))
    runner = RecordingRunner({LINGER_QUERY: Completed((), 0, "Linger=yes\n")}, programs={"systemctl": "/bin/systemctl"})
    code, out = run_install(runner)
    assert code == 0
    assert runner.calls == [LINGER_QUERY, PROBE, ("systemctl", "--user", "enable", "--now", UNIT)]
    assert "enable-linger" not in out


def test_systemd_changed_unit_is_reloaded_and_restarted(env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A moved state dir changes the unit's Environment=: reload, enable, restart."""
    run_install(RecordingRunner(programs=SYSTEMCTL), "--service", "systemd")
    monkeypatch.setenv("DONEBELL_STATE_DIR", "/srv/done bell/100%")
    runner = RecordingRunner(programs=SYSTEMCTL)
    run_install(runner, "--service", "systemd")
    assert runner.calls[2:] == [
        ("systemctl", "--user", "daemon-reload"),
        ("systemctl", "--user", "enable", "--now", UNIT),
        ("systemctl", "--user", "restart", UNIT),
    ]
    unit = (env["xdg_config"] / "systemd" / "user" / UNIT).read_text()
    assert 'Environment="DONEBELL_STATE_DIR=/srv/done bell/100%%"\n' in unit


def test_a_failing_systemctl_is_reported_and_fails_an_explicit_request(env: dict[str, Path]) -> None:
    """The manager answered the probe, then daemon-reload failed: the error is printed; asked for
    by name, nothing stays changed (exit 1); by default, the hooks-only fallback (exit 0)."""
    bus = Completed((), 1, "", "Failed to connect to bus: No medium found\n")
    runner = RecordingRunner({("systemctl", "--user", "daemon-reload"): bus}, programs=SYSTEMCTL)
    code, out = run_install(runner, "--service", "systemd")
    assert code == 1
    assert "failed: systemctl --user daemon-reload: Failed to connect to bus" in out
    assert "nothing was changed" in out
    assert not (env["xdg_config"] / "systemd" / "user" / UNIT).exists()
    runner = RecordingRunner({("systemctl", "--user", "daemon-reload"): bus}, programs=SYSTEMCTL)
    code, out = run_install(runner)
    assert code == 0 and "a notification still goes out after each hook" in out


def test_no_systemctl_means_no_service_by_default(env: dict[str, Path]) -> None:
    """On a Linux without systemctl the default is no service: no command runs, no unit is written."""
    runner = RecordingRunner()
    code, out = run_install(runner)
    assert code == 0 and runner.calls == []
    assert not (env["xdg_config"] / "systemd").exists()
    assert "no background service" in out


def test_systemd_uninstall_stops_disables_removes_and_reloads(env: dict[str, Path]) -> None:
    """Uninstall: disable --now, delete the unit, daemon-reload."""
    run_install(RecordingRunner(programs=SYSTEMCTL), "--service", "systemd")
    runner = RecordingRunner(programs=SYSTEMCTL)
    code, _ = run_uninstall(runner, "--service", "systemd")
    assert code == 0
    assert runner.calls == [
        PROBE,
        ("systemctl", "--user", "disable", "--now", UNIT),
        ("systemctl", "--user", "daemon-reload"),
    ]
    assert not (env["xdg_config"] / "systemd" / "user" / UNIT).exists()


def test_launchd_agent_is_written_and_bootstrapped(env: dict[str, Path]) -> None:
    """launchd: plist in ~/Library/LaunchAgents, bootout (may fail), bootstrap; reloaded only when
    changed or not loaded; uninstall boots it out and removes the plist."""
    target = f"gui/{os.getuid()}"
    service = f"{target}/com.donebell.agent"
    plist_path = env["home"] / "Library" / "LaunchAgents" / "com.donebell.agent.plist"
    runner = RecordingRunner()
    code, out = run_install(runner, "--service", "launchd")
    assert code == 0, out
    assert runner.calls == [("launchctl", "bootout", service), ("launchctl", "bootstrap", target, str(plist_path))]
    plist = plistlib.loads(plist_path.read_bytes())
    assert plist["ProgramArguments"] == [EXE, "run"] and plist["KeepAlive"] == {"SuccessfulExit": False}
    runner = RecordingRunner()
    run_install(runner, "--service", "launchd")
    assert runner.calls == [("launchctl", "print", service)]
    runner = RecordingRunner({("launchctl", "print"): Completed((), 113, "", "Could not find service")})
    run_install(runner, "--service", "launchd")
    assert runner.calls == [
        ("launchctl", "print", service),
        ("launchctl", "bootout", service),
        ("launchctl", "bootstrap", target, str(plist_path)),
    ]
    runner = RecordingRunner()
    run_uninstall(runner, "--service", "launchd")
    assert runner.calls == [("launchctl", "bootout", service)]
    assert not plist_path.exists()


def test_task_scheduler_xml_is_registered_with_schtasks(env: dict[str, Path]) -> None:
    """Windows: UTF-16 task XML, schtasks /Create /XML /F then /Run; uninstall /End and /Delete."""
    xml = env["home"] / "AppData" / "Local" / "donebell" / "donebell-task.xml"
    runner = RecordingRunner({("schtasks", "/Query"): Completed((), 1, "", "ERROR: not found")})
    code, out = run_install(runner, "--service", "task-scheduler")
    assert code == 0, out
    assert runner.calls == [
        ("schtasks", "/Query", "/TN", "donebell"),
        ("schtasks", "/Create", "/TN", "donebell", "/XML", str(xml), "/F"),
        ("schtasks", "/Run", "/TN", "donebell"),
    ]
    assert xml.read_bytes()[:2] == b"\xff\xfe"  # UTF-16 LE with BOM, what schtasks reads reliably
    runner = RecordingRunner()
    run_uninstall(runner, "--service", "task-scheduler")
    assert runner.calls == [
        ("schtasks", "/Query", "/TN", "donebell"),
        ("schtasks", "/End", "/TN", "donebell"),
        ("schtasks", "/Delete", "/TN", "donebell", "/F"),
    ]
    assert not xml.exists()


def test_dry_run_lists_the_commands_and_runs_none(env: dict[str, Path]) -> None:
    """--dry-run prints the unit diff and the systemctl commands; it changes and starts nothing."""
    runner = RecordingRunner(programs=SYSTEMCTL)
    code, out = run_install(runner, "--service", "systemd", "--dry-run")
    assert code == 0
    assert "# would run: systemctl --user enable --now donebell.service" in out
    assert f"+ExecStart={EXE} run" in out
    assert all(call[0] != "systemctl" or call == PROBE for call in runner.calls)  # only the read-only probe
    assert not (env["xdg_config"] / "systemd").exists()
