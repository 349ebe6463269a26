"""The other platforms' files, checked here (issue 39 item 4): each is rendered as `donebell install`
renders it, parsed back with the parser its platform uses, and checked against the keys and schema
elements that platform documents; `install --service launchd|task-scheduler --dry-run` shows each
exact file on Linux. Which OS runs is pinned through the platform seam where a form depends on it
(the only thing here that stands in for Windows: no Windows can run here).
"""

from __future__ import annotations

import io
import json
import os
import plistlib
import re
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from donebell.shared import platform
from donebell.supervisor.install import service
from donebell.supervisor.install.command import main_install
from donebell.workers.agents.claude import install as claude_install
from donebell.workers.agents.claude.install import use_exec_form
from donebell.workers.agents.codex import managed as codex_managed
from donebell.workers.kit.install import managed
from donebell.workers.kit.install.managed import donebell_executable
from support.install_env import RecordingRunner, isolate

#: Characters a path or variable may hold that XML, plists, shells or cmd.exe treat specially.
AWKWARD = 'it\'s <a> & "b" $HOME %PATH%'

# --- launchd --------------------------------------------------------------------------------

#: Keys launchd.plist(5) documents for a LaunchAgent, with the type each must have.
LAUNCHD_KEYS: dict[str, type] = {
    "Label": str,
    "ProgramArguments": list,
    "RunAtLoad": bool,
    "KeepAlive": dict,
    "ThrottleInterval": int,
    "ProcessType": str,
    "StandardOutPath": str,
    "StandardErrorPath": str,
    "EnvironmentVariables": dict,
}


def test_the_launchd_plist_parses_with_plistlib_and_has_the_documented_keys() -> None:
    executable = f"/Users/jo doe/{AWKWARD}/bin/donebell"
    env = {"DONEBELL_STATE_DIR": f"/Users/jo doe/{AWKWARD}/state", "CODEX_HOME": "/Users/jo/.codex"}
    log = "/Users/jo doe/Library/Logs/donebell.log"
    plist = plistlib.loads(service.render_launchd(executable, env, log).encode("utf-8"))
    assert set(plist) == set(LAUNCHD_KEYS)
    for key, kind in LAUNCHD_KEYS.items():
        assert type(plist[key]) is kind, key
    assert plist["Label"] == service.LAUNCHD_LABEL
    assert plist["ProgramArguments"] == [executable, "run"]  # no shell: each word exact
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["ProcessType"] in {"Background", "Standard", "Adaptive", "Interactive"}
    assert plist["ThrottleInterval"] > 0
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == log
    assert plist["EnvironmentVariables"] == env


def test_the_launchd_plist_has_no_environment_entries_when_nothing_is_moved() -> None:
    plist = plistlib.loads(service.render_launchd("/usr/local/bin/donebell", {}, "/tmp/x.log").encode())
    assert plist["EnvironmentVariables"] == {}


# --- Task Scheduler -------------------------------------------------------------------------

TASK_NS = "{http://schemas.microsoft.com/windows/2004/02/mit/task}"
#: The Task Scheduler 1.2 schema's elements (Task Scheduler Schema, "Task Scheduler Schema
#: Elements"): the children each element may have. The rendered task may use only these.
TASK_SCHEMA: dict[str, set[str]] = {
    "Task": {"RegistrationInfo", "Triggers", "Settings", "Data", "Principals", "Actions"},
    "RegistrationInfo": {"URI", "SecurityDescriptor", "Source", "Date", "Author", "Version", "Description", "Documentation"},
    "Triggers": {"BootTrigger", "RegistrationTrigger", "IdleTrigger", "TimeTrigger", "EventTrigger", "LogonTrigger",
                 "SessionStateChangeTrigger", "CalendarTrigger"},
    "LogonTrigger": {"Enabled", "StartBoundary", "EndBoundary", "Repetition", "ExecutionTimeLimit", "Delay", "UserId"},
    "Principals": {"Principal"},
    "Principal": {"UserId", "GroupId", "LogonType", "RunLevel", "DisplayName", "ProcessTokenSidType", "RequiredPrivileges"},
    "Settings": {"AllowStartOnDemand", "RestartOnFailure", "MultipleInstancesPolicy", "DisallowStartIfOnBatteries",
                 "StopIfGoingOnBatteries", "AllowHardTerminate", "StartWhenAvailable", "NetworkProfileName",
                 "RunOnlyIfNetworkAvailable", "WakeToRun", "Enabled", "Hidden", "DeleteExpiredTaskAfter", "IdleSettings",
                 "NetworkSettings", "ExecutionTimeLimit", "Priority", "RunOnlyIfIdle", "UseUnifiedSchedulingEngine",
                 "DisallowStartOnRemoteAppSession", "MaintenanceSettings", "Volatile"},
    "IdleSettings": {"Duration", "WaitTimeout", "StopOnIdleEnd", "RestartOnIdle"},
    "RestartOnFailure": {"Interval", "Count"},
    "Actions": {"Exec", "ComHandler", "SendEmail", "ShowMessage"},
    "Exec": {"Command", "Arguments", "WorkingDirectory"},
}  # fmt: skip
BOOLEAN = {"Enabled", "DisallowStartIfOnBatteries", "StopIfGoingOnBatteries", "AllowHardTerminate",
           "StartWhenAvailable", "RunOnlyIfNetworkAvailable", "StopOnIdleEnd", "RestartOnIdle",
           "AllowStartOnDemand", "Hidden", "RunOnlyIfIdle", "WakeToRun"}  # fmt: skip
DURATION = re.compile(r"P(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?")
ENUMS = {
    "LogonType": {"S4U", "Password", "InteractiveToken", "InteractiveTokenOrPassword", "Group", "ServiceAccount"},
    "RunLevel": {"LeastPrivilege", "HighestAvailable"},
    "MultipleInstancesPolicy": {"Parallel", "Queue", "IgnoreNew", "StopExisting"},
}


def parsed_task(pythonw: str, user: str, working_dir: str) -> ET.Element:
    """The task as written (UTF-16 with a BOM, as `donebell install` writes it), parsed back."""
    raw = service.render_task(pythonw, user, working_dir).encode("utf-16")
    assert raw[:2] == b"\xff\xfe"
    return ET.fromstring(raw)


def check_schema(element: ET.Element) -> None:
    name = element.tag.removeprefix(TASK_NS)
    assert element.tag.startswith(TASK_NS), f"{element.tag}: not in the task namespace"
    children = [child.tag.removeprefix(TASK_NS) for child in element]
    allowed = TASK_SCHEMA.get(name, set())
    assert set(children) <= allowed, f"{name} has undocumented children {set(children) - allowed}"
    assert len(children) == len(set(children)) or name in {"Triggers", "Principals", "Actions"}, name
    text = (element.text or "").strip()
    if name in BOOLEAN:
        assert text in {"true", "false"}, f"{name}: {text!r}"
    if name in {"Interval", "ExecutionTimeLimit", "Duration", "WaitTimeout", "Delay"}:
        assert DURATION.fullmatch(text) and text != "P", f"{name}: {text!r}"
    if name in ENUMS:
        assert text in ENUMS[name], f"{name}: {text!r}"
    for child in element:
        check_schema(child)


def test_the_task_xml_parses_and_uses_only_documented_schema_elements() -> None:
    pythonw = rf"C:\Users\Jo Doe\{AWKWARD}\venv\Scripts\pythonw.exe"
    user, home = rf"WORKGROUP\jo {AWKWARD}", r"C:\Users\Jo Doe"
    task = parsed_task(pythonw, user, home)
    assert task.tag == f"{TASK_NS}Task" and task.get("version") == "1.2"
    check_schema(task)

    def find(path: str) -> ET.Element:
        found = task.find("/".join(TASK_NS + step for step in path.split("/")))
        assert found is not None, path
        return found

    assert {c.tag.removeprefix(TASK_NS) for c in task} == {
        "RegistrationInfo",
        "Triggers",
        "Principals",
        "Settings",
        "Actions",
    }
    exec_ = find("Actions/Exec")
    assert [c.tag.removeprefix(TASK_NS) for c in exec_] == ["Command", "Arguments", "WorkingDirectory"]  # a sequence
    assert find("Actions/Exec/Command").text == pythonw
    assert find("Actions/Exec/Arguments").text == "-P -m donebell run"
    assert find("Actions/Exec/WorkingDirectory").text == home
    assert find("Triggers/LogonTrigger/UserId").text == user == find("Principals/Principal/UserId").text
    principal = find("Principals/Principal")
    assert find("Actions").get("Context") == principal.get("id")  # the action runs as the declared principal
    restart = find("Settings/RestartOnFailure")
    assert restart is not None and 1 <= int(find("Settings/RestartOnFailure/Count").text or "0") <= 999
    assert 0 <= int(find("Settings/Priority").text or "-1") <= 10
    assert find("Settings/ExecutionTimeLimit").text == "PT0S"  # never stopped for running long


def test_the_schema_check_catches_an_undocumented_element() -> None:
    bad = ET.fromstring(f'<Task xmlns="{TASK_NS[1:-1]}"><Settings><KeepRunning>true</KeepRunning></Settings></Task>')
    with pytest.raises(AssertionError, match="undocumented"):
        check_schema(bad)
    with pytest.raises(AssertionError, match="Enabled"):
        check_schema(ET.fromstring(f'<Task xmlns="{TASK_NS[1:-1]}"><Settings><Enabled>yes</Enabled></Settings></Task>'))


# --- the hook command forms -----------------------------------------------------------------


@pytest.fixture()
def on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows' conventions through the seam (the one stand-in: no Windows runs here)."""
    monkeypatch.setattr(platform, "host", lambda: "windows")
    assert platform.on_windows()


def test_the_windows_claude_hook_is_the_exec_form_and_reads_back(on_windows: None) -> None:
    """Windows: always the exec form (no /bin/sh signal shield, no shell quoting): command is the
    .exe and args the words; written as settings.json and read back, donebell knows it as its own."""
    executable = r"C:\Users\Jo Doe\AppData\Local\Programs\donebell venv\Scripts\donebell.exe"
    assert use_exec_form(None) is True
    for event in claude_install.CLAUDE_EVENTS:
        group = json.loads(json.dumps(claude_install.claude_group(event, executable, exec_form=True)))
        handler = group["hooks"][0]
        assert handler["command"] == executable and handler["args"] == list(claude_install.CLAUDE_ARGS)
        assert managed.handler_argv(handler) == [executable, *claude_install.CLAUDE_ARGS]
        assert managed.is_managed_handler(handler, claude_install.CLAUDE_ARGS)


def test_the_windows_codex_hook_command_is_cmd_quoted_and_reads_back(on_windows: None) -> None:
    executable = r"C:\Program Files\donebell tools\Scripts\donebell.exe"
    handler = codex_managed.codex_stop_group(executable)["hooks"][0]
    assert handler["command"] == f'"{executable}" hook codex-stop'
    assert managed.split_command(handler["command"]) == [executable, "hook", "codex-stop"]
    assert managed.is_managed_handler(handler, codex_managed.CODEX_STOP_ARGS)


def test_the_codex_hook_command_survives_a_path_with_spaces_through_a_real_shell(tmp_path: Path) -> None:
    """POSIX: the hooks.json command for a donebell in a folder with spaces, quotes and ``$``, read
    back by donebell and run by ``/bin/sh -c`` as Codex runs it: the program gets exactly its words."""
    folder = tmp_path / AWKWARD.replace("/", "_")
    folder.mkdir()
    executable = folder / "donebell"
    executable.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    executable.chmod(executable.stat().st_mode | stat.S_IXUSR)
    for group, args in (
        (codex_managed.codex_stop_group(str(executable)), codex_managed.CODEX_STOP_ARGS),
        (codex_managed.codex_permission_group(str(executable)), codex_managed.CODEX_PERMISSION_ARGS),
    ):
        handler = json.loads(json.dumps(group))["hooks"][0]
        assert managed.split_command(handler["command"]) == [str(executable), *args]
        assert managed.is_managed_handler(handler, args)
        ran = subprocess.run(["/bin/sh", "-c", handler["command"]], capture_output=True, text=True, timeout=60)
        assert json.loads(ran.stdout) == list(args), ran.stderr


# --- dry runs show the exact files ----------------------------------------------------------


def shown_file(out: str, path: Path) -> str:
    """The new file's text as the dry run's diff shows it (every ``+`` line below its header)."""
    lines = out.splitlines()
    start = lines.index(f"+++ {path}") + 2  # the header, then the @@ line
    body = []
    for line in lines[start:]:
        if not line.startswith("+"):
            break
        body.append(line[1:])
    return "\n".join(body) + "\n"


@pytest.mark.parametrize("kind", ["launchd", "task-scheduler"])
def test_a_dry_run_on_linux_shows_the_exact_service_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    monkeypatch.setenv("LOCALAPPDATA", str(paths["home"] / "AppData" / "Local"))
    out = io.StringIO()
    code = main_install(["--codex", "--service", kind, "--dry-run"], runner=RecordingRunner(), out=out)
    assert code == 0, out.getvalue()
    executable = donebell_executable()
    if kind == "launchd":
        path = service.plist_path()
        text = shown_file(out.getvalue(), path)
        assert text == service.render_launchd(
            executable, service.passed_env(), str(paths["home"] / "Library" / "Logs" / "donebell.log")
        )
        assert plistlib.loads(text.encode())["ProgramArguments"] == [executable, "run"]
        assert f"# would run: launchctl bootstrap gui/{os.getuid()} {path}" in out.getvalue()
    else:
        path = service.task_xml_path()
        text = shown_file(out.getvalue(), path)
        pythonw = str(Path(sys.executable).with_name("pythonw.exe"))
        assert text == service.render_task(pythonw, service._windows_user(), str(paths["home"]))
        check_schema(ET.fromstring(text.encode("utf-16")))
        assert f"# would run: schtasks /Create /TN donebell /XML {path} /F" in out.getvalue()
    assert not path.exists()  # a dry run writes nothing
