"""Copilot CLI's wiring for ``donebell install | uninstall | doctor`` (:class:`~donebell.workers.agents.protocols.Install`).

The planning is :mod:`.install` (donebell's own ``$COPILOT_HOME/hooks/donebell.json``), the check
:mod:`.doctor` (``copilot_hooks``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.process.runner import Runner
from donebell.workers.agents.copilot import doctor, install
from donebell.workers.agents.copilot.paths import copilot_home_str
from donebell.workers.kit.install.checks import Check
from donebell.workers.kit.install.plans import AgentPlan

DISPLAY_NAME = "Copilot CLI"
INSTALL_HELP = "only Copilot CLI ($COPILOT_HOME, default ~/.copilot)"


def copilot_home() -> Path:
    return Path(copilot_home_str())


def present(runner: Runner) -> bool:
    return "COPILOT_HOME" in os.environ or copilot_home().is_dir() or runner.which("copilot") is not None


def plan_install(executable: str, record: dict[str, Any], runner: Runner) -> AgentPlan:
    # permissionRequest fires before every tool call: wired only while approvals are on.
    return install.plan_install(copilot_home(), executable, record, approvals=_approvals_on())


def plan_uninstall(record: dict[str, Any], chain: list[str] | None) -> AgentPlan:
    return install.plan_uninstall(copilot_home(), record)


def doctor_checks(settings: SettingsLike | None) -> list[Check]:
    """``copilot_hooks``: the hook file, each event's command, the permission hook's timeout."""
    approvals = settings is not None and settings.approvals_enabled
    return doctor.check_copilot(float(settings.approval_wait_seconds) if settings and approvals else None)


def permission_hooks() -> list[tuple[Path, tuple[str, ...]]]:
    """None in the Claude-shaped form doctor's ``approvals`` reads: Copilot's own file has another
    shape (flat entries, ``timeoutSec``), and ``copilot_hooks`` checks its timeout against the wait."""
    return []


def _approvals_on() -> bool:
    """``approvals_enabled`` in the configuration install writes next to (off when it cannot be read)."""
    from donebell.shared.config import model

    try:
        return bool(model.load().settings.approvals_enabled)
    except model.ConfigError:
        return False
