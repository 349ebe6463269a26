"""Codex's wiring for ``donebell install | uninstall | doctor`` (:class:`~donebell.workers.agents.protocols.Install`).

The planning is :mod:`.install` (``hooks.json`` and ``config.toml``), the checks :mod:`.doctor`;
this module is what the CLI reaches through the registry, so it names no other agent and the CLI
names no agent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.process.runner import Runner
from donebell.workers.agents.codex import codex_home, doctor, install
from donebell.workers.agents.codex.managed import CODEX_PERMISSION_ARGS
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from donebell.workers.kit.install.checks import Check
from donebell.workers.kit.install.plans import AgentPlan

DISPLAY_NAME = "Codex"
INSTALL_HELP = "only Codex ($CODEX_HOME, default ~/.codex)"


def present(runner: Runner) -> bool:
    return "CODEX_HOME" in os.environ or codex_home().is_dir() or runner.which("codex") is not None


def plan_install(executable: str, record: dict[str, Any], runner: Runner) -> AgentPlan:
    plan = install.plan_install(codex_home(), executable, record)
    plan.after = install_notes
    return plan


def plan_uninstall(record: dict[str, Any], chain: list[str] | None) -> AgentPlan:
    return install.plan_uninstall(codex_home(), chain, record)


def install_notes() -> list[str]:
    """Once installed: whether Codex already trusts the Stop hook (it skips an untrusted one silently)."""
    hooks = donebell_stop_hooks(codex_home())
    if hooks and all(h.status == "trusted" for h in hooks):
        return ["Codex already trusts the donebell Stop hook"]
    return [install.REVIEW_HINT]


def doctor_checks(settings: SettingsLike | None) -> list[Check]:
    """``codex_hooks``, ``codex_trust``, ``codex_needs_trust`` and ``chain_notify``."""
    return [*doctor.check_codex(), doctor.check_chain_notify(settings.chain_notify if settings else None)]


def permission_hooks() -> list[tuple[Path, tuple[str, ...]]]:
    return [(codex_home() / "hooks.json", CODEX_PERMISSION_ARGS)]
