"""Codex wiring: the managed Stop and PermissionRequest hooks in ``hooks.json``, ``notify`` in ``config.toml``.

Both are planned as :class:`~donebell.workers.kit.install.edits.FileChange` objects (nothing is written
here). ``config.toml`` is edited with tomlkit, which keeps comments, order and the formatting of
every other key; the user's previous ``notify`` moves to donebell's ``chain_notify`` (the hook runs
it first) and its exact TOML text goes to the install record so uninstall can put it back verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomlkit
from donebell.workers.agents.codex.chain_check import chain_program_problem
from donebell.workers.agents.codex.managed import (
    CODEX_NOTIFY_ARGS,
    CODEX_PERMISSION_ARGS,
    CODEX_STOP_ARGS,
    codex_notify,
    codex_permission_group,
    codex_stop_group,
)
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks, trust_entries
from donebell.workers.kit.install.edits import EditError, FileChange, read_text, split_bom, target_of
from donebell.workers.kit.install.hookjson import HookShapeError, ensure_group, remove_managed
from donebell.workers.kit.install.managed import is_managed_argv
from donebell.workers.kit.install.plans import (
    AgentPlan,
    created_containers,
    created_files,
    forget_containers,
    load_json,
    remember_containers,
)
from donebell.workers.kit.install.tidy import drop_trust_entries, dumps_like
from tomlkit.exceptions import TOMLKitError

REVIEW_STEP = (
    "open Codex, run /hooks and trust the donebell Stop hook (`donebell hook codex-stop`) and its "
    "PermissionRequest hook (`donebell hook codex-permission`, needs-you notifications); "
    "until then the legacy notify and the rollout scanner still deliver"
)
REVIEW_HINT = "Codex skips an untrusted hook silently: " + REVIEW_STEP


def codex_hooks_problem(doc: Any) -> str | None:
    """Why Codex 0.171 would reject this hooks.json as a whole (it then runs none of its hooks).

    Codex parses the file strictly: only ``description`` and ``hooks`` at the top, and a timeout
    must be a non-negative whole number (``30.0`` or ``-1`` fail the entire file).
    """
    if not isinstance(doc, dict):
        return "the top level is not an object"
    extra = sorted(set(doc) - {"description", "hooks"})
    if extra:
        return f"unknown top-level key(s) {', '.join(extra)} (only description and hooks are allowed)"
    events = doc.get("hooks")
    for event, groups in events.items() if isinstance(events, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for handler in group.get("hooks", ()) if isinstance(group, dict) else ():
                timeout = handler.get("timeout") if isinstance(handler, dict) else None
                if timeout is not None and (type(timeout) is not int or timeout < 0):
                    return f"{event}: timeout {timeout!r} is not a whole number of seconds"
    return None


def _parse_toml(path: Path, text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise EditError(f"{path}: not valid TOML ({exc}); fix it, nothing was changed") from None


def _without_notify(text: str) -> str:
    doc = tomlkit.parse(text)
    del doc["notify"]
    return tomlkit.dumps(doc)


def _insert_notify(text: str, argv: list[str]) -> str:
    """Add a top-level notify such that deleting it again gives back ``text`` exactly."""
    doc = tomlkit.parse(text)
    doc["notify"] = argv
    candidate = tomlkit.dumps(doc)
    if _without_notify(candidate) == text:
        return candidate
    newline = "\r\n" if "\r\n" in text else "\n"
    first_line = "notify = " + tomlkit.item(argv).as_string() + newline
    if _without_notify(first_line + text) == text:  # e.g. a file with only tables
        return first_line + text
    return candidate


def _plan_hooks_json(plan: AgentPlan, home: Path, executable: str) -> None:
    """donebell's Stop and PermissionRequest groups in ``hooks.json`` (created if absent)."""
    hooks_path = target_of(home / "hooks.json")
    old, bom, doc = load_json(hooks_path)
    groups = {
        "Stop": (codex_stop_group(executable), CODEX_STOP_ARGS),
        "PermissionRequest": (codex_permission_group(executable), CODEX_PERMISSION_ARGS),
    }
    if doc is None:
        new = json.dumps({"hooks": {event: [group] for event, (group, _) in groups.items()}}, indent=2) + "\n"
        created_files(plan.record).append(str(hooks_path))
    else:
        try:
            for event, (group, args) in groups.items():
                remember_containers(plan.record, hooks_path, ensure_group(doc, event, group, args))
        except HookShapeError as exc:
            raise EditError(f"{hooks_path}: {exc}; nothing was changed") from None
        new = bom + doc.text
        problem = codex_hooks_problem(doc.value(()))
        if problem:
            plan.messages.append(f"warning: Codex cannot load {hooks_path} ({problem}); none of its hooks run")
    plan.changes.append(FileChange(hooks_path, old, new, "Codex hooks"))
    plan.messages.append(
        f"{hooks_path}: Stop and PermissionRequest hooks " + ("already in place" if old == new else "added")
    )


def plan_install(home: Path, executable: str, record: dict[str, Any]) -> AgentPlan:
    plan = AgentPlan("Codex", record=json.loads(json.dumps(record)))
    _plan_hooks_json(plan, home, executable)

    config_path = target_of(home / "config.toml")
    old_toml = read_text(config_path)
    ours = codex_notify(executable)
    if old_toml is None:
        new_toml = "notify = " + tomlkit.item(ours).as_string() + "\n"
        created_files(plan.record).append(str(config_path))
    else:
        toml_bom, body = split_bom(old_toml)
        tdoc = _parse_toml(config_path, body)
        current = tdoc.unwrap().get("notify")
        if current is None:
            body = _insert_notify(body, ours)
        elif is_managed_argv(current, CODEX_NOTIFY_ARGS):
            if current != ours:
                tdoc["notify"] = ours  # an older install's path: same slot, new path
                body = tomlkit.dumps(tdoc)
        elif isinstance(current, list) and current and all(isinstance(a, str) for a in current):
            plan.record["codex_notify"] = {"toml": tdoc["notify"].as_string(), "value": current}
            plan.chain = current
            tdoc["notify"] = ours
            body = tomlkit.dumps(tdoc)
            plan.messages.append(f"your previous notify {current} now runs first, from donebell's chain_notify")
            problem = chain_program_problem(current)
            if problem:
                plan.messages.append(
                    f"warning: your previous notify cannot start ({problem}); "
                    "every turn will log it until you fix it or run `donebell config unset chain_notify`"
                )
        else:
            raise EditError(f"{config_path}: notify is not a list of strings; fix it, nothing was changed")
        new_toml = toml_bom + body
    plan.changes.append(FileChange(config_path, old_toml, new_toml, "Codex config"))
    plan.messages.append(
        f"{config_path}: notify " + ("already donebell" if old_toml == new_toml else "set to donebell")
    )
    return plan


def plan_uninstall(home: Path, chain: list[str] | None, record: dict[str, Any]) -> AgentPlan:
    plan = AgentPlan("Codex", record=json.loads(json.dumps(record)))
    created = created_files(plan.record)
    hooks_path = target_of(home / "hooks.json")
    # Before the hook goes: the [hooks.state] keys Codex trusts it under (they name its position).
    trust_keys = [h.key for h in donebell_stop_hooks(home) if h.source.name == "hooks.json"]
    trust_keys += [
        h.key
        for h in donebell_stop_hooks(home, "PermissionRequest", CODEX_PERMISSION_ARGS)
        if h.source.name == "hooks.json"
    ]
    _unplan_hooks_json(plan, home, hooks_path, created, trust_keys)

    config_path = target_of(home / "config.toml")
    old_toml = read_text(config_path)
    if old_toml is not None:
        toml_bom, body = split_bom(old_toml)
        tdoc = _parse_toml(config_path, body)
        if drop_trust_entries(tdoc, trust_keys):
            body = dumps_like(tdoc, body)
            plan.messages.append(f"{config_path}: removed Codex's trust entry for the removed donebell hooks")
        current = tdoc.unwrap().get("notify")
        if is_managed_argv(current, CODEX_NOTIFY_ARGS):
            saved = plan.record.pop("codex_notify", None)
            if chain:
                tdoc["notify"] = _saved_item(saved, chain)
                plan.messages.append(f"{config_path}: notify restored to {chain}")
            else:
                del tdoc["notify"]
                plan.messages.append(f"{config_path}: donebell notify removed")
            plan.chain = None
            body = dumps_like(tdoc, split_bom(old_toml)[1])
        elif chain:
            plan.messages.append(
                f"{config_path}: notify is not donebell's; left as is (your earlier notify {chain} stays in chain_notify)"
            )
        new_toml: str | None = toml_bom + body
        ours = str(config_path) in created
        if ours:
            created.remove(str(config_path))
            if not body.strip():
                new_toml = None
        backup = new_toml is not None and not ours
        change = FileChange(config_path, old_toml, new_toml, "Codex config", backup=backup, created_by_donebell=ours)
        plan.changes.append(change)
    return plan


def _unplan_hooks_json(
    plan: AgentPlan, home: Path, hooks_path: Path, created: list[str], trust_keys: list[str]
) -> None:
    """donebell's groups out of ``hooks.json``; the file goes if install created it and it is empty
    then, and with it every trust entry Codex keeps for its hooks (added to ``trust_keys``)."""
    old, bom, doc = load_json(hooks_path)
    if doc is not None:
        try:
            containers = created_containers(plan.record, hooks_path)
            removed = remove_managed(doc, "Stop", CODEX_STOP_ARGS, containers)
            removed += remove_managed(doc, "PermissionRequest", CODEX_PERMISSION_ARGS, containers)
        except HookShapeError as exc:
            raise EditError(f"{hooks_path}: {exc}; nothing was changed") from None
        new: str | None = bom + doc.text
        ours = str(hooks_path) in created  # install created it: nothing from before donebell to back up
        if ours and doc.value(()) == {}:
            new = None  # install created this file: remove it again
            trust_keys += _trust_keys_of(home / "config.toml", {hooks_path, home / "hooks.json"})  # all stale
        if ours:
            created.remove(str(hooks_path))
        forget_containers(plan.record, hooks_path)
        backup = new is not None and not ours
        plan.changes.append(FileChange(hooks_path, old, new, "Codex hooks", backup=backup, created_by_donebell=ours))
        plan.messages.append(
            f"{hooks_path}: " + (f"removed {removed} donebell hook(s)" if removed else "no donebell hook")
        )


def _trust_keys_of(config_path: Path, hooks_paths: set[Path]) -> list[str]:
    """Every ``[hooks.state]`` key Codex keeps for a hook of ``hooks_paths`` (one file, as written
    and resolved), at any position: once that file is gone (donebell created it and removes it),
    none of them names anything."""
    prefixes = tuple(f"{path}:" for path in hooks_paths)
    return [key for key in trust_entries(read_text(config_path)) if key.startswith(prefixes)]


def _saved_item(saved: object, chain: list[str]) -> Any:
    """The user's notify as they wrote it (install record), else a plain TOML array."""
    if isinstance(saved, dict) and saved.get("value") == chain and isinstance(saved.get("toml"), str):
        try:
            return tomlkit.parse("notify = " + saved["toml"])["notify"]
        except TOMLKitError:
            pass
    return chain
