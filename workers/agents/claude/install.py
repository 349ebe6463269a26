"""Claude Code wiring: managed handlers for Stop, StopFailure, UserPromptSubmit, Notification and
SessionEnd in ``$CLAUDE_CONFIG_DIR/settings.json``, everything else in the file preserved byte for byte.

Exec form (``"command": <donebell>, "args": ["hook", "claude"]``, no shell of Claude's; on POSIX
behind the ``/bin/sh`` signal shield, see ``managed.py``) is used when the
installed Claude Code is known to support ``args`` (verified on 2.1.197, the pinned version), and on
Windows where the shell would be PowerShell. Otherwise the shell form with a quoted path: an older
Claude that dropped an unknown ``args`` would run bare ``donebell``, which exits 2, and a Stop hook
exiting 2 makes Claude continue the conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.shared import platform
from donebell.shared.process.runner import Runner
from donebell.workers.kit.install.checks import parse_version
from donebell.workers.kit.install.edits import EditError, FileChange, target_of
from donebell.workers.kit.install.hookjson import HookShapeError, ensure_group, remove_managed
from donebell.workers.kit.install.managed import (
    HOOK_TIMEOUT,
    PERMISSION_HOOK_TIMEOUT,
    SIGNAL_SHIELD_SCRIPT,
    SIGNAL_SHIELD_SHELL,
    shell_command,
)
from donebell.workers.kit.install.plans import (
    AgentPlan,
    created_containers,
    created_files,
    forget_containers,
    load_json,
    remember_containers,
)

#: First Claude Code version on which donebell verified the ``args`` exec form.
CLAUDE_ARGS = ("hook", "claude")

#: Claude events donebell listens to. Stop, StopFailure and UserPromptSubmit run synchronously so
#: the session's prompt epoch is in order before the next Stop; the Notification accelerator is
#: async (it only accelerates a decision the gate reaches anyway, docs/agent-facts.md) and limited to
#: the types the hook uses. SessionEnd is the fallback of a Stop/StopFailure hook that never ran or
#: was killed (docs/hooks.md); Claude waits for it in print mode, so it is synchronous too.
#: PermissionRequest and the Notification types permission_prompt, elicitation_dialog and
#: agent_needs_input say the task waits for the user (docs/approvals.md). The PermissionRequest
#: hook only writes a file and prints nothing (no opinion: the agent's dialog decides), so it runs
#: synchronously; Claude runs it alongside its dialog in the main session.
CLAUDE_EVENTS: dict[str, dict[str, Any]] = {
    "Stop": {},
    "StopFailure": {},
    "UserPromptSubmit": {},
    "Notification": {
        "matcher": "idle_prompt|agent_completed|permission_prompt|elicitation_dialog|agent_needs_input",
        "async": True,
    },
    "SessionEnd": {},
    "PermissionRequest": {},
}


def claude_group(event: str, executable: str, *, exec_form: bool) -> dict[str, Any]:
    """The Claude settings.json group donebell owns for ``event``."""
    options = CLAUDE_EVENTS[event]
    handler: dict[str, Any] = {"type": "command"}
    if exec_form and not platform.on_windows():
        handler.update(command=SIGNAL_SHIELD_SHELL, args=["-c", SIGNAL_SHIELD_SCRIPT, executable, *CLAUDE_ARGS])
    elif exec_form:
        handler.update(command=executable, args=list(CLAUDE_ARGS))
    else:
        handler["command"] = shell_command(executable, *CLAUDE_ARGS)
    handler["timeout"] = PERMISSION_HOOK_TIMEOUT if event == "PermissionRequest" else HOOK_TIMEOUT
    if options.get("async"):
        handler["async"] = True
    group: dict[str, Any] = {}
    if "matcher" in options:
        group["matcher"] = options["matcher"]
    group["hooks"] = [handler]
    return group


EXEC_FORM_SINCE = (2, 1, 197)


def claude_version(runner: Runner) -> tuple[int, ...] | None:
    """The installed ``claude --version`` (e.g. ``2.1.197 (Claude Code)``), if it answers."""
    program = runner.which("claude")
    if program is None:
        return None
    result = runner.run([program, "--version"], timeout=15)
    return parse_version(result.stdout) if result.ok else None


def use_exec_form(version: tuple[int, ...] | None) -> bool:
    return platform.on_windows() or (version is not None and version >= EXEC_FORM_SINCE)


def plan_install(config_dir: Path, executable: str, record: dict[str, Any], *, exec_form: bool) -> AgentPlan:
    plan = AgentPlan("Claude Code", record=json.loads(json.dumps(record)))
    path = target_of(config_dir / "settings.json")
    old, bom, doc = load_json(path)
    groups = {event: claude_group(event, executable, exec_form=exec_form) for event in CLAUDE_EVENTS}
    if doc is None:
        new = json.dumps({"hooks": {event: [group] for event, group in groups.items()}}, indent=2) + "\n"
        created_files(plan.record).append(str(path))
    else:
        try:
            for event, group in groups.items():
                remember_containers(plan.record, path, ensure_group(doc, event, group, CLAUDE_ARGS))
        except HookShapeError as exc:
            raise EditError(f"{path}: {exc}; nothing was changed") from None
        new = bom + doc.text
    plan.changes.append(FileChange(path, old, new, "Claude settings"))
    form = "exec form" if exec_form else "shell form"
    state = "already in place" if old == new else "added"
    plan.messages.append(f"{path}: {', '.join(CLAUDE_EVENTS)} hooks {state} ({form})")
    return plan


def plan_uninstall(config_dir: Path, record: dict[str, Any]) -> AgentPlan:
    plan = AgentPlan("Claude Code", record=json.loads(json.dumps(record)))
    path = target_of(config_dir / "settings.json")
    old, bom, doc = load_json(path)
    if doc is None:
        return plan
    try:
        created = created_containers(plan.record, path)
        removed = sum(remove_managed(doc, event, CLAUDE_ARGS, created) for event in CLAUDE_EVENTS)
    except HookShapeError as exc:
        raise EditError(f"{path}: {exc}; nothing was changed") from None
    new: str | None = bom + doc.text
    forget_containers(plan.record, path)
    files = created_files(plan.record)
    ours = str(path) in files  # install created it: nothing from before donebell to back up
    if ours:
        files.remove(str(path))
        if doc.value(()) == {}:
            new = None
    change = FileChange(
        path, old, new, "Claude settings", backup=new is not None and not ours, created_by_donebell=ours
    )
    plan.changes.append(change)
    plan.messages.append(f"{path}: " + (f"removed {removed} donebell hook(s)" if removed else "no donebell hook"))
    return plan
