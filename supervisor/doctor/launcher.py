"""Doctor: the program an installed service launcher starts still exists.

``donebell install`` writes the absolute path of its own install into the launcher: the script
in the systemd unit's ``ExecStart`` and the launchd plist's ``ProgramArguments``, ``pythonw.exe``
beside it in the Task Scheduler XML. Remove that venv, move a pipx home or uninstall one of two
installs, and the service fails at every start (systemd gives up after its start limit) while
``status`` only says "not running"; this check names the missing program and the way out.
Read-only: the launcher files are parsed, nothing is asked of the service manager.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

from donebell.supervisor.install import service as install_service
from donebell.workers.kit.install.checks import FAIL, OK, WARN, Check

TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
FIX = "run `donebell install` again with the donebell you use now: it rewrites the launcher to name that install"


def systemd_program(text: str) -> str | None:
    """The program of the unit's ``ExecStart=``, unquoted as install quoted it (``%%``, ``$$``)."""
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            words = shlex.split(line.removeprefix("ExecStart=").lstrip("-@:+!"))
            return words[0].replace("%%", "%").replace("$$", "$") if words else None
    return None


def launchd_program(data: bytes) -> str | None:
    arguments = plistlib.loads(data).get("ProgramArguments")
    return arguments[0] if isinstance(arguments, list) and arguments and isinstance(arguments[0], str) else None


def task_program(data: bytes) -> str | None:
    command = ET.fromstring(data).find("t:Actions/t:Exec/t:Command", TASK_NS)
    if command is None:
        return None
    return (command.text or "").strip() or None


def _launchers() -> list[tuple[str, Path]]:
    return [
        ("systemd unit", install_service.unit_path()),
        ("launchd agent", install_service.plist_path()),
        ("scheduled task", install_service.task_xml_path()),
    ]


def _program(kind: str, path: Path) -> str | None:
    data = path.read_bytes()
    if kind == "systemd unit":
        return systemd_program(data.decode("utf-8", "replace"))
    return launchd_program(data) if kind == "launchd agent" else task_program(data)


def check_launchers() -> list[Check]:
    """One check per launcher file install wrote (none when no service was installed)."""
    checks = []
    for kind, path in _launchers():
        if not path.is_file():
            continue
        details = {"launcher": str(path)}
        try:
            program = _program(kind, path)
        except (OSError, ValueError, ET.ParseError, plistlib.InvalidFileException) as exc:
            checks.append(Check("launcher", WARN, f"cannot read the {kind} {path}: {exc}", FIX, details))
            continue
        if program is None:
            checks.append(Check("launcher", WARN, f"the {kind} {path} names no program to start", FIX, details))
        elif not (os.path.isfile(program) and os.access(program, os.X_OK)):
            summary = (
                f"the {kind} starts {program}, which no longer exists (a removed venv, a moved pipx home?): "
                "the service cannot start"
            )
            checks.append(Check("launcher", FAIL, summary, FIX, {**details, "program": program}))
        else:
            checks.append(
                Check("launcher", OK, f"the {kind} starts {program}", details={**details, "program": program})
            )
    return checks
