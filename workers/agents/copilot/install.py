"""Copilot CLI's install planning: donebell's own hook file, ``$COPILOT_HOME/hooks/donebell.json``
(the file's shape and its events: :mod:`.wiring`; what the CLI reaches: :mod:`.setup`).

Install writes the whole file (a backup first when one is there); uninstall deletes it, and the
``hooks`` folder too when install created it and it is empty again: every other file is untouched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.workers.agents.copilot import wiring
from donebell.workers.kit.install.edits import FileChange, read_text, target_of
from donebell.workers.kit.install.managed import PERMISSION_HOOK_TIMEOUT, shell_command
from donebell.workers.kit.install.plans import AgentPlan, created_files

AGENT = "Copilot CLI"
#: The install record's list of folders this wiring created (uninstall removes them when empty).
CREATED_FOLDERS = "copilot_created_folders"


def plan_install(home: Path, executable: str, record: dict[str, Any], *, approvals: bool) -> AgentPlan:
    """``approvals``: wire ``permissionRequest`` too (it answers from the phone; install again after
    turning ``approvals_enabled`` on, doctor's ``copilot_hooks`` says so)."""
    plan = AgentPlan(AGENT, record=json.loads(json.dumps(record)))
    path = target_of(Path(wiring.hook_file(str(home))))
    old = read_text(path)

    def command(event: str) -> str:
        return shell_command(executable, "hook", "copilot", event)

    doc = wiring.document(command, PERMISSION_HOOK_TIMEOUT, approvals=approvals)
    new = wiring.render(doc)
    if old is None:
        created_files(plan.record).append(str(path))
        folders = [str(p) for p in (path.parent, path.parent.parent) if not p.exists()]
        known = plan.record.setdefault(CREATED_FOLDERS, [])
        known.extend(f for f in folders if f not in known)
    plan.changes.append(FileChange(path, old, new, "Copilot hooks"))
    state = "already in place" if old == new else "added"
    plan.messages.append(f"{path}: {', '.join(doc['hooks'])} hooks {state}")
    return plan


def plan_uninstall(home: Path, record: dict[str, Any]) -> AgentPlan:
    plan = AgentPlan(AGENT, record=json.loads(json.dumps(record)))
    path = target_of(Path(wiring.hook_file(str(home))))
    old = read_text(path)
    files = created_files(plan.record)
    if str(path) in files:
        files.remove(str(path))
    folders = plan.record.pop(CREATED_FOLDERS, None)
    plan.empty_folders_after = [f for f in folders or [] if isinstance(f, str)]
    if old is None:
        plan.messages.append(f"{path}: no donebell hook file")
        return plan
    plan.changes.append(FileChange(path, old, None, "Copilot hooks", backup=False))
    plan.messages.append(f"{path}: removed")
    return plan
