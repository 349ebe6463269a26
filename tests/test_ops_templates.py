"""The launcher templates in ops/, rendered as install renders them, checked by the real parsers:
systemd-analyze verify for the unit, plistlib for launchd, xml.etree for Task Scheduler."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from donebell.supervisor.install.service import render_launchd, render_systemd, render_task
from donebell.workers.kit.install.managed import donebell_executable

EXE = donebell_executable()
TRICKY_ENV = {"DONEBELL_STATE_DIR": '/srv/done bell/100% "q" $HOME', "CODEX_HOME": "/home/a&b/<codex>"}
TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


def _systemd_analyze() -> str:
    """systemd-analyze, installing Debian's systemd package when missing and we are root."""
    found = shutil.which("systemd-analyze")
    if found:
        return found
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("systemd-analyze is missing and cannot be installed here (needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "systemd"]):
        if subprocess.run(argv, env=env, capture_output=True, timeout=900, check=False).returncode != 0:
            pytest.skip(f"`{' '.join(argv)}` failed: systemd-analyze cannot be installed here")
    found = shutil.which("systemd-analyze")
    if not found:
        pytest.skip("systemd was installed but systemd-analyze is still missing")
    return found


def _verify(unit: Path, tmp_path: Path, *user: str) -> list[str]:
    """Problems systemd-analyze reports about ``unit`` (its exit code and every line naming it)."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    proc = subprocess.run(
        [_systemd_analyze(), *user, "verify", str(unit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    problems = [line for line in (proc.stdout + proc.stderr).splitlines() if "donebell" in line]
    return problems + ([f"exit code {proc.returncode}"] if proc.returncode else [])


@pytest.mark.parametrize("user", [(), ("--user",)], ids=["system-manager", "user-manager"])
def test_rendered_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path, user: tuple[str, ...]) -> None:
    """The unit with a real ExecStart and awkward Environment= values verifies without a warning."""
    unit = tmp_path / "donebell.service"
    unit.write_text(render_systemd(EXE, TRICKY_ENV))
    assert _verify(unit, tmp_path, *user) == []


def test_systemd_analyze_does_catch_a_broken_unit(tmp_path: Path) -> None:
    """The verify check can fail: a misspelt key is reported."""
    unit = tmp_path / "donebell.service"
    unit.write_text(render_systemd(EXE, {}).replace("WatchdogSec=", "WatchdgSec="))
    assert any("WatchdgSec" in line for line in _verify(unit, tmp_path))


def test_systemd_unit_has_the_service_contract() -> None:
    """Type=notify, ExecStart=<abs donebell> run, restart on failure after 5 s, a watchdog."""
    lines = render_systemd(EXE, {}).splitlines()
    for expected in (
        "Type=notify",
        f"ExecStart={EXE} run",
        "Restart=on-failure",
        "RestartSec=5",
        "WantedBy=default.target",
    ):
        assert expected in lines
    assert any(line.startswith("WatchdogSec=") and int(line.split("=")[1]) > 0 for line in lines)


def test_task_scheduler_xml_parses_with_the_expected_settings() -> None:
    """Logon trigger, restart on failure (>= 1 min, with a count), no time limit, battery off,
    IgnoreNew, pythonw.exe running `-P -m donebell run` (no folder of its own on sys.path); special
    characters escaped."""
    text = render_task(r"C:\Py & Co\pythonw.exe", r"CORP\ana<b>", r"C:\Users\ana")
    root = ET.fromstring(text.encode("utf-16"))

    def get(path: str) -> str:
        node = root.find(path, TASK_NS)
        assert node is not None, path
        return (node.text or "").strip()

    assert root.find("t:Triggers/t:LogonTrigger", TASK_NS) is not None
    assert get("t:Triggers/t:LogonTrigger/t:UserId") == r"CORP\ana<b>"
    assert get("t:Settings/t:ExecutionTimeLimit") == "PT0S"
    assert get("t:Settings/t:DisallowStartIfOnBatteries") == "false"
    assert get("t:Settings/t:StopIfGoingOnBatteries") == "false"
    assert get("t:Settings/t:MultipleInstancesPolicy") == "IgnoreNew"
    interval = get("t:Settings/t:RestartOnFailure/t:Interval")
    assert interval.startswith("PT") and interval.endswith("M") and int(interval[2:-1]) >= 1
    assert 1 <= int(get("t:Settings/t:RestartOnFailure/t:Count")) <= 999
    assert get("t:Actions/t:Exec/t:Command") == r"C:\Py & Co\pythonw.exe"
    assert get("t:Actions/t:Exec/t:Arguments") == "-P -m donebell run"


def test_launchd_plist_parses_with_keepalive_and_the_environment() -> None:
    """plistlib reads the agent: label, program + run, KeepAlive, RunAtLoad, escaped environment."""
    plist = plistlib.loads(render_launchd(EXE, TRICKY_ENV, "/Users/ana/Library/Logs/donebell.log").encode())
    assert plist["Label"] == "com.donebell.agent"
    assert plist["ProgramArguments"] == [EXE, "run"]
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["EnvironmentVariables"] == TRICKY_ENV
    assert plist["StandardErrorPath"] == "/Users/ana/Library/Logs/donebell.log"


def test_python_dash_m_donebell_is_the_command_line() -> None:
    """The Windows task's `-m donebell` runs the same CLI as the console script."""
    module = subprocess.run([sys.executable, "-m", "donebell", "--version"], capture_output=True, text=True, timeout=60)
    script = subprocess.run([EXE, "--version"], capture_output=True, text=True, timeout=60)
    assert module.returncode == 0 and module.stdout.startswith("donebell "), module.stderr
    # The same package answered; the interpreter's name may differ (python vs the shebang's python3).
    assert module.stdout.split(" (Python ")[0] == script.stdout.split(" (Python ")[0]
