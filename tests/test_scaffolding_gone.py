"""What parallel construction left behind stays gone (issue 16.6).

The supervisor's health vocabulary names only states a role really writes, the version is
written in one place, and no command or role answers "not built yet".
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import donebell.shared
import donebell.supervisor
import donebell.workers
from donebell.shared import health
from donebell.shared import version as version_module
from donebell.supervisor import cli

REPO = Path(donebell.workers.__file__).resolve().parents[1]


def role_written_states() -> set[str]:
    """The ``state=`` values the role runner writes to a health file (read from its source: the
    role loop in workers/role.py and the writer it uses in shared/health.py)."""
    source = "\n".join(
        Path(path).read_text(encoding="utf-8")
        for path in (Path(donebell.workers.__file__).with_name("role.py"), health.__file__)
    )
    found = set(re.findall(r'state="([a-z-]+)"', source)) | set(re.findall(r'"state": "([a-z-]+)"', source))
    for left, right in re.findall(r'state="([a-z-]+)" if .+? else "([a-z-]+)"', source):
        found |= {left, right}
    found |= set(re.findall(r'state(?:: RoleState)? = "([a-z-]+)" if result\.degraded else "([a-z-]+)"', source)[0])
    return found


def test_health_states_are_ones_a_role_writes() -> None:
    """Every ready/failed state the supervisor waits for is one the role runner writes."""
    written = role_written_states()
    assert {"ready", "degraded", "error", "stopped", "starting"} <= written  # the reader sees them
    assert health.READY_STATES | health.FAILED_STATES <= written


def test_the_version_has_one_source() -> None:
    """pyproject.toml reads the version from shared/version.py; the installed metadata agrees."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "donebell.shared.version.VERSION"}
    assert version("donebell") == version_module.VERSION


def test_no_not_built_yet_branches() -> None:
    """No module of the program answers 'not built yet' any more: every command and role exists."""
    folders = [
        Path(donebell.workers.__file__).parent,
        Path(donebell.supervisor.__file__).parent,
        Path(donebell.shared.__file__).parent,
    ]
    offenders = [
        str(path)
        for folder in folders
        for path in folder.rglob("*.py")
        if "not built" in path.read_text(encoding="utf-8")
    ]
    assert not offenders
    for spec in cli.COMMANDS.values():
        assert callable(cli._resolve(spec)), spec
