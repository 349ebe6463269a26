"""``DONEBELL_E2E_INSTALLED=<venv>``: the scenarios drive the donebell a wheel install put in that
venv, not this checkout's. install then wires ``<venv>/bin/donebell`` into the agents' hooks and
``run`` starts the roles with that venv's Python, so the real agents call what users get (.ci/run
runs the newest-agents pass this way)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

INSTALLED_ENV = "DONEBELL_E2E_INSTALLED"


def installed_venv() -> Path | None:
    """The venv named by DONEBELL_E2E_INSTALLED, checked to hold an installed donebell; else None."""
    value = os.environ.get(INSTALLED_ENV, "").strip()
    if not value:
        return None
    venv = Path(value).resolve()
    if not (venv / "bin" / "donebell").is_file() or not (venv / "bin" / "python").is_file():
        raise RuntimeError(f"{INSTALLED_ENV}={value}: no bin/donebell and bin/python there (install the wheel first)")
    return venv


INSTALLED = installed_venv()


def donebell_command() -> list[str]:
    """How every donebell process of a scenario starts: the installed venv's, else this checkout's."""
    if INSTALLED is not None:
        return [str(INSTALLED / "bin" / "python"), "-m", "donebell"]
    return [sys.executable, "-m", "donebell.supervisor.cli"]


def assert_wired_to_installed(*files: Iterable[Path]) -> None:
    """Every agent file install wrote names the installed venv's script (not the checkout's)."""
    assert INSTALLED is not None
    for path in (p for group in files for p in group):
        assert str(INSTALLED / "bin" / "donebell") in path.read_text(encoding="utf-8"), path
