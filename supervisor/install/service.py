"""The background service: render the launcher from ``ops/`` and register it with the OS.

* Linux: systemd user unit ``~/.config/systemd/user/donebell.service``, then
  ``systemctl --user daemon-reload`` and ``systemctl --user enable --now donebell.service``;
* macOS: launchd agent ``~/Library/LaunchAgents/com.donebell.agent.plist``, ``launchctl bootstrap``;
* Windows: Task Scheduler XML (UTF-16), ``schtasks /Create /TN donebell /XML <file> /F``.

Every OS command is a :class:`Step` executed through :class:`~donebell.shared.process.runner.Runner`,
so tests check the exact argv. Environment variables that move donebell's or the agents' folders
are copied into the unit/plist, so the service sees the same folders as the shell that installed it.
"""

from __future__ import annotations

import getpass
import importlib.resources
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from donebell.shared.paths import service_log
from donebell.shared.platform import service as platform_service
from donebell.shared.process.runner import Runner
from donebell.supervisor.install.service_manager import systemd_user_problem
from donebell.workers.kit.install.edits import FileChange, read_text

SERVICES = platform_service.MANAGERS
UNIT_NAME = "donebell.service"
LAUNCHD_LABEL = "com.donebell.agent"
TASK_NAME = "donebell"
PASSED_ENV = ("DONEBELL_CONFIG", "DONEBELL_STATE_DIR", "CODEX_HOME", "CODEX_SQLITE_HOME", "CLAUDE_CONFIG_DIR")
LINGER_HINT = "To keep it running while you are logged out: loginctl enable-linger $USER"


@dataclass(frozen=True)
class Step:
    """One OS command; ``may_fail`` for commands that fail harmlessly (stop what is not running)."""

    argv: tuple[str, ...]
    may_fail: bool = False


@dataclass
class ServicePlan:
    """Commands to run before the launcher file changes, the change, and commands after it."""

    kind: str
    before: list[Step] = field(default_factory=list)
    change: FileChange | None = None
    after: list[Step] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def _ours(path: Path, old: str | None, new: str | None, label: str, encoding: str = "utf-8") -> FileChange:
    """A launcher file is donebell's own: no backup, owner-only (the user's service manager reads it as the user)."""
    return FileChange(path, old, new, label, new_file_mode=0o600, backup=False, encoding=encoding)


def default_service(runner: Runner) -> str:
    """The platform's service manager, or ``none`` on a Linux without systemctl."""
    return platform_service.default_manager(systemctl_found=runner.which("systemctl") is not None)


def template(name: str) -> str:
    """An ``ops/`` template: data of the ``donebell`` package when installed, else the checkout's
    (an editable install's ``donebell`` is a namespace that importlib.resources cannot read)."""
    try:
        return importlib.resources.files("donebell").joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    try:
        return (Path(__file__).resolve().parents[2] / "ops" / name).read_text(encoding="utf-8")
    except OSError:
        raise ValueError(f"the launcher template {name} is not part of this installation (ops/)") from None


def render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise ValueError(f"template placeholders not filled: {', '.join(sorted(set(left)))}")
    return text


def passed_env() -> dict[str, str]:
    return {name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)}


def _systemd_quote(word: str, *, expands_variables: bool) -> str:
    """One ExecStart/Environment word, literal: specifiers (%) are doubled everywhere, ``$`` only
    in ExecStart (Environment= does no variable expansion, so ``$$`` would stay two characters)."""
    word = word.replace("%", "%%")
    if expands_variables:
        word = word.replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_systemd(executable: str, env: dict[str, str]) -> str:
    environment = "".join(
        f"Environment={_systemd_quote(f'{k}={v}', expands_variables=False)}\n" for k, v in env.items()
    )
    exec_start = f"{_systemd_quote(executable, expands_variables=True)} run"
    return render(template("donebell.service"), {"EXEC_START": exec_start, "ENVIRONMENT": environment})


def render_launchd(executable: str, env: dict[str, str], log_file: str) -> str:
    environment = "".join(f"    <key>{escape(k)}</key>\n    <string>{escape(v)}</string>\n" for k, v in env.items())
    values = {"EXECUTABLE": escape(executable), "LOG_FILE": escape(log_file), "ENVIRONMENT": environment}
    return render(template("com.donebell.agent.plist"), values)


def render_task(pythonw: str, user_id: str, working_dir: str) -> str:
    values = {"PYTHONW": escape(pythonw), "USER_ID": escape(user_id), "WORKING_DIR": escape(working_dir)}
    return render(template("donebell-task.xml"), values)


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(_home() / ".config")
    return Path(base) / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    return _home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def task_xml_path() -> Path:
    base = os.environ.get("LOCALAPPDATA") or str(_home() / "AppData" / "Local")
    return Path(base) / "donebell" / "donebell-task.xml"


def _windows_user() -> str:
    domain, user = os.environ.get("USERDOMAIN"), os.environ.get("USERNAME") or getpass.getuser()
    return f"{domain}\\{user}" if domain else user


def _launchd_target() -> str:
    return f"gui/{os.getuid()}" if hasattr(os, "getuid") else "gui/0"


def plan_install(kind: str, executable: str, runner: Runner) -> ServicePlan:
    plan = ServicePlan(kind)
    if kind == "systemd":
        path = unit_path()
        old = read_text(path)
        plan.change = _ours(path, old, render_systemd(executable, passed_env()), "systemd unit")
        ctl = ("systemctl", "--user")
        if plan.change.changed:
            plan.after.append(Step((*ctl, "daemon-reload")))
        plan.after.append(Step((*ctl, "enable", "--now", UNIT_NAME)))
        if plan.change.changed and old is not None:
            plan.after.append(Step((*ctl, "restart", UNIT_NAME)))  # pick up the new ExecStart
        plan.messages.append(f"{path}: systemd user unit, enabled and started")
        linger = runner.run(["loginctl", "show-user", getpass.getuser(), "--property=Linger"], timeout=10)
        if "Linger=yes" not in linger.stdout:
            plan.messages.append(LINGER_HINT)
    elif kind == "launchd":
        path = plist_path()
        log_file = service_log("library") or ""
        text = render_launchd(executable, passed_env(), log_file)
        plan.change = _ours(path, read_text(path), text, "launchd agent")
        service = f"{_launchd_target()}/{LAUNCHD_LABEL}"
        if plan.change.changed or not runner.run(["launchctl", "print", service], timeout=10).ok:
            plan.after.append(Step(("launchctl", "bootout", service), may_fail=True))
            plan.after.append(Step(("launchctl", "bootstrap", _launchd_target(), str(path))))
        plan.messages.append(f"{path}: launchd agent, loaded (log: {log_file})")
    elif kind == "task-scheduler":
        path = task_xml_path()
        pythonw = str(Path(sys.executable).with_name("pythonw.exe"))
        text = render_task(pythonw, _windows_user(), str(_home()))
        plan.change = _ours(path, read_text(path, "utf-16"), text, "scheduled task", "utf-16")
        query = runner.run(["schtasks", "/Query", "/TN", TASK_NAME], timeout=20)
        if plan.change.changed or not query.ok:
            plan.after.append(Step(("schtasks", "/Create", "/TN", TASK_NAME, "/XML", str(path), "/F")))
            plan.after.append(Step(("schtasks", "/Run", "/TN", TASK_NAME)))
        plan.messages.append(f"scheduled task '{TASK_NAME}' (at logon, restarted on failure) from {path}")
        if passed_env():
            plan.messages.append(
                f"note: a scheduled task does not inherit this shell's {', '.join(passed_env())}: "
                "set them as user environment variables"
            )
    return plan


def plan_uninstall(kind: str, runner: Runner) -> ServicePlan:
    plan = ServicePlan(kind)
    if kind == "systemd":
        path = unit_path()
        old = read_text(path)
        if old is not None:
            plan.change = _ours(path, old, None, "systemd unit")
            problem = systemd_user_problem(runner)
            if problem:  # say what really happens: nothing can be stopped without the manager
                plan.messages.append(f"{path}: removed; nothing stopped or disabled: {problem}")
            else:
                plan.before.append(Step(("systemctl", "--user", "disable", "--now", UNIT_NAME), may_fail=True))
                plan.after.append(Step(("systemctl", "--user", "daemon-reload"), may_fail=True))
                plan.messages.append(f"{path}: stopped, disabled and removed")
    elif kind == "launchd":
        path = plist_path()
        old = read_text(path)
        if old is not None:
            plan.before.append(Step(("launchctl", "bootout", f"{_launchd_target()}/{LAUNCHD_LABEL}"), may_fail=True))
            plan.change = _ours(path, old, None, "launchd agent")
            plan.messages.append(f"{path}: unloaded and removed")
    elif kind == "task-scheduler":
        path = task_xml_path()
        old = read_text(path, "utf-16")
        if runner.run(["schtasks", "/Query", "/TN", TASK_NAME], timeout=20).ok:
            plan.before.append(Step(("schtasks", "/End", "/TN", TASK_NAME), may_fail=True))
            plan.before.append(Step(("schtasks", "/Delete", "/TN", TASK_NAME, "/F")))
            plan.messages.append(f"scheduled task '{TASK_NAME}' ended and deleted")
        if old is not None:
            plan.change = _ours(path, old, None, "scheduled task", "utf-16")
    return plan
