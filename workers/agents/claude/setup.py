"""Claude Code's wiring for ``donebell install | uninstall | doctor`` (:class:`~donebell.workers.agents.protocols.Install`).

The planning is :mod:`.install` (``settings.json``), the check :mod:`.doctor`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.process.runner import Runner
from donebell.workers.agents.claude import claude_config_dir, doctor, install
from donebell.workers.kit.install.checks import Check
from donebell.workers.kit.install.plans import AgentPlan

DISPLAY_NAME = "Claude Code"
INSTALL_HELP = "only Claude Code ($CLAUDE_CONFIG_DIR, default ~/.claude)"


def present(runner: Runner) -> bool:
    return "CLAUDE_CONFIG_DIR" in os.environ or claude_config_dir().is_dir() or runner.which("claude") is not None


def plan_install(executable: str, record: dict[str, Any], runner: Runner) -> AgentPlan:
    exec_form = install.use_exec_form(install.claude_version(runner))
    return install.plan_install(claude_config_dir(), executable, record, exec_form=exec_form)


def plan_uninstall(record: dict[str, Any], chain: list[str] | None) -> AgentPlan:
    return install.plan_uninstall(claude_config_dir(), record)


def doctor_checks(settings: SettingsLike | None) -> list[Check]:
    """``claude_hooks`` (registered hooks do nothing while ``enable_claude_code`` is false)."""
    return doctor.check_claude(settings.enable_claude_code if settings else True)


def permission_hooks() -> list[tuple[Path, tuple[str, ...]]]:
    return [(claude_config_dir() / "settings.json", install.CLAUDE_ARGS)]
