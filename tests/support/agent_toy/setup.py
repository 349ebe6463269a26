"""The toy's wiring for ``donebell install | uninstall | doctor`` (:class:`~donebell.workers.agents.protocols.Install`).

The toy reads ``$TOY_HOME/hooks.json`` (default ``~/.toy``): one ``Done`` event whose handlers it
runs after each turn. Install adds donebell's handler (``<donebell> hook toy-done``), uninstall
removes it (and the file, when install created it), doctor's ``toy_hooks`` says whether it is there.
Built only from the kit (``workers/kit/install/``): nothing outside this folder knows the toy.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.paths import user_home
from donebell.shared.process.runner import Runner
from donebell.workers.kit.install.checks import FAIL, OK, SKIP, WARN, Check, managed_handlers, read_json
from donebell.workers.kit.install.edits import EditError, FileChange, target_of
from donebell.workers.kit.install.hookjson import HookShapeError, ensure_group, remove_managed
from donebell.workers.kit.install.managed import HOOK_TIMEOUT, shell_command
from donebell.workers.kit.install.plans import (
    AgentPlan,
    created_containers,
    created_files,
    forget_containers,
    load_json,
    remember_containers,
)

DISPLAY_NAME = "Toy Agent"
INSTALL_HELP = "only the toy ($TOY_HOME, default ~/.toy)"
EVENT = "Done"
TOY_ARGS = ("hook", "toy-done")


def toy_home() -> Path:
    return Path(os.environ.get("TOY_HOME") or os.path.join(user_home(), ".toy"))


def present(runner: Runner) -> bool:
    return "TOY_HOME" in os.environ or toy_home().is_dir() or runner.which("toy") is not None


def plan_install(executable: str, record: dict[str, Any], runner: Runner) -> AgentPlan:
    plan = AgentPlan(DISPLAY_NAME, record=json.loads(json.dumps(record)))
    path = target_of(toy_home() / "hooks.json")
    old, bom, doc = load_json(path)
    group = {"hooks": [{"type": "command", "command": shell_command(executable, *TOY_ARGS), "timeout": HOOK_TIMEOUT}]}
    if doc is None:
        new = json.dumps({"hooks": {EVENT: [group]}}, indent=2) + "\n"
        created_files(plan.record).append(str(path))
    else:
        try:
            remember_containers(plan.record, path, ensure_group(doc, EVENT, group, TOY_ARGS))
        except HookShapeError as exc:
            raise EditError(f"{path}: {exc}; nothing was changed") from None
        new = bom + doc.text
    plan.changes.append(FileChange(path, old, new, "Toy hooks"))
    plan.messages.append(f"{path}: Done hook " + ("already in place" if old == new else "added"))
    return plan


def plan_uninstall(record: dict[str, Any], chain: list[str] | None) -> AgentPlan:
    plan = AgentPlan(DISPLAY_NAME, record=json.loads(json.dumps(record)))
    path = target_of(toy_home() / "hooks.json")
    old, bom, doc = load_json(path)
    if doc is None:
        return plan
    try:
        removed = remove_managed(doc, EVENT, TOY_ARGS, created_containers(plan.record, path))
    except HookShapeError as exc:
        raise EditError(f"{path}: {exc}; nothing was changed") from None
    new: str | None = bom + doc.text
    forget_containers(plan.record, path)
    files = created_files(plan.record)
    if str(path) in files:
        files.remove(str(path))
        new = None if doc.value(()) == {} else new
    plan.changes.append(FileChange(path, old, new, "Toy hooks", backup=new is not None))
    plan.messages.append(f"{path}: " + ("removed donebell's Done hook" if removed else "no donebell hook"))
    return plan


def doctor_checks(settings: SettingsLike | None) -> list[Check]:
    home = toy_home()
    if not home.is_dir():
        return [Check("toy_hooks", SKIP, f"the toy is not here ({home})")]
    doc, error = read_json(home / "hooks.json")
    if error:
        return [Check("toy_hooks", FAIL, error, "fix hooks.json")]
    wired = bool(managed_handlers(doc, EVENT, TOY_ARGS))
    details = {"home": str(home), "wired": wired}
    if not wired:
        return [Check("toy_hooks", WARN, "the toy is not wired to donebell", "run `donebell install --toy`", details)]
    return [Check("toy_hooks", OK, "Done hook registered", details=details)]


def permission_hooks() -> list[tuple[Path, tuple[str, ...]]]:
    return []  # the toy never asks for permission
