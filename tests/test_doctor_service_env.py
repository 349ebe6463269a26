"""doctor's ``wake_env`` against a service that is installed but not running (issue 37 item 4).

systemctl and launchctl cannot run here, so the recording runner answers for them (the one
stand-in, as in the other install/doctor tests); the unit and the plist are real files where
install writes them. The running-service case runs the real supervisor:
tests/test_first_week_doctor.py.
"""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest
from donebell.shared.process.runner import Completed
from donebell.shared.statedir import StateDir
from donebell.supervisor.doctor.service_env import check_service_env, wanted
from donebell.supervisor.install import service as install_service
from support.install_env import RecordingRunner, isolate

SHELL = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "K" * 40,
    "ANTHROPIC_BASE_URL": "https://gateway.example",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "HTTPS_PROXY": "http://proxy.example:3128",
    "CLAUDECODE": "1",  # set by Claude Code for its own commands: not the user's
    "PATH": "/usr/bin",
}


def test_the_names_an_agent_turn_may_need() -> None:
    assert wanted(list(SHELL)) == ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HTTPS_PROXY", "OPENAI_BASE_URL"]


def test_a_systemd_unit_is_compared_through_the_manager_and_its_environment_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    unit = install_service.unit_path()
    unit.parent.mkdir(parents=True)
    unit.write_text(
        '[Service]\nEnvironment=OPENAI_BASE_URL=http://127.0.0.1:9/v1\nEnvironment="HTTPS_PROXY=http://p"\n'
    )
    runner = RecordingRunner(
        {("systemctl", "--user", "show-environment"): Completed((), 0, "PATH=/usr/bin\nANTHROPIC_BASE_URL=x\n", "")}
    )
    check = check_service_env(StateDir(paths["state"]), runner, SHELL)
    assert check.status == "warn" and check.details == {
        "missing": ["ANTHROPIC_API_KEY"],
        "compared_with": "the systemd unit",
    }
    assert "K" * 40 not in check.summary + str(check.next_step)


def test_a_launchd_agent_is_compared_through_its_plist_and_launchctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    plist = install_service.plist_path()
    plist.parent.mkdir(parents=True)
    plist.write_bytes(plistlib.dumps({"Label": "com.donebell.agent", "EnvironmentVariables": {"OPENAI_BASE_URL": "x"}}))
    runner = RecordingRunner({("launchctl", "getenv", "HTTPS_PROXY"): Completed((), 0, "http://p\n", "")})
    check = check_service_env(StateDir(paths["state"]), runner, SHELL)
    assert check.details == {
        "missing": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
        "compared_with": "the launchd agent",
    }


def test_no_service_to_compare_with_is_unknown_and_no_agent_variable_is_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    assert check_service_env(StateDir(paths["state"]), RecordingRunner(), SHELL).status == "unknown"
    assert check_service_env(StateDir(paths["state"]), RecordingRunner(), {"PATH": "/usr/bin"}).status == "skip"
